package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestOffsetsPartitionForIsKafkasHash(t *testing.T) {
	for _, tc := range []struct {
		s    string
		hash int32
	}{
		{"", 0}, {"a", 97}, {"hello", 99162322},
		{"polygenelubricants", -2147483648}, // Integer.MIN_VALUE: Utils.abs maps it to 0
		{"\U0001F600", 0xD83D*31 + 0xDE00},  // a surrogate pair: two UTF-16 code units
	} {
		if got := JavaStringHash(tc.s); got != tc.hash {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tc.s, got, tc.hash)
		}
	}
	if got := OffsetsPartitionFor("polygenelubricants", 50); got != 0 {
		t.Errorf("partition of a MIN_VALUE hash: %d, want 0", got)
	}
	if got := OffsetsPartitionFor("hello", 50); got != 99162322%50 {
		t.Errorf("partition of hello: %d, want %d", got, 99162322%50)
	}
	// A negative hash: Math.abs, not masking the sign bit (which would give 3 here).
	if h := JavaStringHash("isrbroker"); h != -1233876383 {
		t.Errorf("JavaStringHash(isrbroker) = %d, want -1233876383", h)
	}
	if got := OffsetsPartitionFor("isrbroker", 6); got != 1233876383%6 {
		t.Errorf("partition of isrbroker: %d, want %d", got, 1233876383%6)
	}
}

// checkScenario builds a journal over one partition of 10 records: m1 processes 0..5 and
// commits 4, then m2 takes over at m2Start and commits the end; extra adds events before the
// journal is checked.
func checkScenario(t *testing.T, m2Start int64, extra func(j *GroupJournal, at func() time.Time)) GroupCheck {
	t.Helper()
	values := map[int32][]string{0: {"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}}
	j := NewGroupJournal()
	clock := time.Unix(1000, 0)
	at := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	add := func(member string, from, to int64) {
		for o := from; o < to; o++ {
			j.processed = append(j.processed, GroupProcessed{member, 0, o, values[0][o], at()})
		}
	}
	commit := func(member string, off int64) {
		j.commits = append(j.commits, GroupCommit{member, 0, off, at()})
	}
	add("m1", 0, 6)
	commit("m1", 4)
	commit(Observer, 4)
	add("m2", m2Start, 10)
	commit("m2", 10)
	if extra != nil {
		extra(j, at)
	}
	return j.Check(values, map[int32]int64{0: 10})
}

func TestGroupJournalCheck(t *testing.T) {
	if res := checkScenario(t, 4, nil); len(res.Violations) != 0 || res.Repeated != 2 || res.Sessions != 2 {
		t.Errorf("re-reading the uncommitted tail 4..5: %+v, want no finding, 2 repeats, 2 sessions", res)
	}
	for _, tc := range []struct {
		name    string
		m2Start int64
		extra   func(j *GroupJournal, at func() time.Time)
		want    string
	}{
		{"re-read below the commit", 2, nil, "re-read below a commit"},
		{"skipped", 7, nil, "skipped: partition 0: 1 of 10"},
		{"phantom", 4, func(j *GroupJournal, at func() time.Time) {
			j.processed = append(j.processed, GroupProcessed{"m2", 0, 3, "other", at()})
		}, "phantom"},
		{"member commit backwards", 4, func(j *GroupJournal, at func() time.Time) {
			j.commits = append(j.commits, GroupCommit{"m1", 0, 5, at()})
		}, "backwards: partition 0 committed offset 5 (m1"},
		{"watcher sees a commit go back", 4, func(j *GroupJournal, at func() time.Time) {
			j.commits = append(j.commits, GroupCommit{Observer, 0, 10, at()}, GroupCommit{Observer, 0, 4, at()})
		}, "backwards: partition 0 committed offset 4 (" + Observer},
		{"past the end", 4, func(j *GroupJournal, at func() time.Time) {
			j.commits = append(j.commits, GroupCommit{"m2", 0, 11, at()})
		}, "past the end"},
	} {
		res := checkScenario(t, tc.m2Start, tc.extra)
		if !strings.Contains(strings.Join(res.Violations, "\n"), tc.want) {
			t.Errorf("%s: findings %q, want one containing %q", tc.name, res.Violations, tc.want)
		}
	}
	values := map[int32][]string{0: {"a", "b"}}
	j := NewGroupJournal()
	j.Processed("m", 0, 0, []byte("a"), time.Now())
	j.Processed("m", 0, 1, []byte("b"), time.Now())
	if res := j.Check(values, map[int32]int64{0: 1}); !strings.Contains(strings.Join(res.Violations, "\n"), "final commit: partition 0 committed 1, produced 2") {
		t.Errorf("final commit below the end: %q", res.Violations)
	}
}

// A member's latest commit may land after the next generation's OffsetFetch (kafka-go): with
// AllowLateCommit a session starting at the commit before it, by the same member or another,
// is counted apart; one starting further back is still a finding.
func TestGroupJournalCheckLateCommit(t *testing.T) {
	values := map[int32][]string{0: {"v0", "v1", "v2", "v3", "v4", "v5"}}
	run := func(late bool, restarter string, restart int64) GroupCheck {
		j := NewGroupJournal()
		if late {
			j.AllowLateCommit()
		}
		clock := time.Unix(1000, 0)
		at := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
		for o := int64(0); o < 4; o++ {
			j.processed = append(j.processed, GroupProcessed{"m1", 0, o, values[0][o], at()})
			j.commits = append(j.commits, GroupCommit{"m1", 0, o + 1, at()})
		}
		for o := restart; o < 6; o++ {
			j.processed = append(j.processed, GroupProcessed{restarter, 0, o, values[0][o], at()})
		}
		j.commits = append(j.commits, GroupCommit{"m1", 0, 6, at()})
		return j.Check(values, map[int32]int64{0: 6})
	}
	for _, m := range []string{"m1", "m2"} {
		if res := run(true, m, 3); len(res.Violations) != 0 || res.LateCommitRereads != 1 {
			t.Errorf("late commit, %s restarts at 3: %+v, want no finding and one late re-read", m, res)
		}
		if res := run(false, m, 3); len(res.Violations) != 1 {
			t.Errorf("%s restarts at 3 without AllowLateCommit: %q, want one finding", m, res.Violations)
		}
		if res := run(true, m, 2); len(res.Violations) != 1 {
			t.Errorf("%s restarts at 2 (two commits back): %q, want one finding", m, res.Violations)
		}
	}
}
