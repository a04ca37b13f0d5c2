package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Consumer-group helpers shared by tests/integration, tests/clients and tests/faults: where a
// group's coordinator should be, and a journal of what a group's members processed and
// committed, checked without the broker's code (docs/reliability.md, row 15).

// OffsetsTopic is Kafka's internal topic of group metadata and committed offsets.
const OffsetsTopic = "__consumer_offsets"

// JavaStringHash is Java's String.hashCode over the UTF-16 code units of s (int32 overflow).
func JavaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// OffsetsPartitionFor is the __consumer_offsets partition holding group's metadata and
// commits: Kafka's Utils.abs(groupId.hashCode) % offsets.topic.num.partitions, where
// Utils.abs maps Integer.MIN_VALUE to 0 and is Math.abs otherwise.
func OffsetsPartitionFor(group string, partitions int32) int32 {
	h := JavaStringHash(group)
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % partitions
}

// MemberPartitions returns, per member id, the partitions of topic assigned to it, decoded
// from the consumer protocol's assignment.
func MemberPartitions(d kadm.DescribedGroup, topic string) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range d.Members {
		out[m.MemberID] = nil
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				if t.Topic == topic {
					out[m.MemberID] = append(out[m.MemberID], t.Partitions...)
				}
			}
		}
	}
	return out
}

// Observer is the member name of commits seen by a GroupJournal's OffsetFetch watcher.
const Observer = "offset-fetch-watcher"

// GroupProcessed is one record a member handed to the application.
type GroupProcessed struct {
	Member    string
	Partition int32
	Offset    int64
	Value     string
	// At is taken before the client returned the record (before the poll that returned it),
	// so no commit covering the record can have been acknowledged before At.
	At time.Time
}

// GroupCommit is one committed offset (the next offset to read) acknowledged to a member, or
// read back by the journal's OffsetFetch watcher (Member == Observer).
type GroupCommit struct {
	Member    string
	Partition int32
	Offset    int64
	At        time.Time // when the acknowledgement, or the OffsetFetch answer, arrived
}

// GroupJournal records what the members of one group processed and committed on one topic.
// Safe for concurrent use.
type GroupJournal struct {
	mu          sync.Mutex
	processed   []GroupProcessed
	commits     []GroupCommit
	watchErrs   map[string]int
	lateCommits bool
}

// AllowLateCommit is for clients whose commit of a record can be sent in the generation after
// the one that delivered it (segmentio/kafka-go's Reader: one commit queue for every
// generation, served after the new generation's OffsetFetch): the member then taking the
// partition (the same or another) may start just below that late commit. Check counts such
// sessions apart (LateCommitRereads) when they start at or above every earlier commit.
func (j *GroupJournal) AllowLateCommit() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lateCommits = true
}

// NewGroupJournal returns an empty journal.
func NewGroupJournal() *GroupJournal { return &GroupJournal{watchErrs: map[string]int{}} }

// Processed records that member handed the record at partition/offset to the application; at
// must be taken before the poll that returned it.
func (j *GroupJournal) Processed(member string, partition int32, offset int64, value []byte, at time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.processed = append(j.processed, GroupProcessed{member, partition, offset, string(value), at})
}

// Committed records that the coordinator acknowledged member's commit of offset (the next
// offset to read) for partition.
func (j *GroupJournal) Committed(member string, partition int32, offset int64) {
	now := time.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.commits = append(j.commits, GroupCommit{member, partition, offset, now})
}

// ProcessedCount returns how many records were processed (repeats included).
func (j *GroupJournal) ProcessedCount() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.processed)
}

// ProcessedRecords returns a copy of every processed record, in the order journaled.
func (j *GroupJournal) ProcessedRecords() []GroupProcessed {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]GroupProcessed(nil), j.processed...)
}

// ProcessedBy returns the distinct partitions member processed records of.
func (j *GroupJournal) ProcessedBy(member string) []int32 {
	j.mu.Lock()
	defer j.mu.Unlock()
	set := map[int32]bool{}
	for _, p := range j.processed {
		if p.Member == member {
			set[p.Partition] = true
		}
	}
	var out []int32
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// Commits returns a copy of the commits recorded so far.
func (j *GroupJournal) Commits() []GroupCommit {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]GroupCommit(nil), j.commits...)
}

// MemberCommitsSince counts the commits acknowledged to members (not the watcher's reads)
// after from, and returns the earliest acknowledgement time among them.
func (j *GroupJournal) MemberCommitsSince(from time.Time) (int, time.Time) {
	n, first := 0, time.Time{}
	for _, cm := range j.Commits() {
		if cm.Member != Observer && cm.At.After(from) {
			n++
			if first.IsZero() || cm.At.Before(first) {
				first = cm.At
			}
		}
	}
	return n, first
}

// WatchCommits polls group's committed offsets for topic with OffsetFetch every interval
// until ctx ends, recording each answer (Member == Observer). The returned channel is closed
// when the watcher has stopped. Errors (a coordinator moving, loading) are counted, not fatal.
func (j *GroupJournal) WatchCommits(ctx context.Context, c *Cluster, group, topic string, interval time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			got, err := c.Groups.CommittedOffsets(rctx, group, topic)
			cancel()
			now := time.Now()
			j.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					j.watchErrs[err.Error()]++
				}
			} else {
				for p, o := range got {
					j.commits = append(j.commits, GroupCommit{Observer, p, o, now})
				}
			}
			j.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return done
}

// WatchErrors returns how often the OffsetFetch watcher failed, by error.
func (j *GroupJournal) WatchErrors() map[string]int {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[string]int{}
	for k, v := range j.watchErrs {
		out[k] = v
	}
	return out
}

// GroupCheck is the outcome of GroupJournal.Check.
type GroupCheck struct {
	Processed int // records handed to the application, repeats included
	Repeated  int // of those, records processed before (the uncommitted tail re-read)
	Sessions  int // runs of consecutive offsets one member processed on one partition
	// LateCommitRereads counts sessions started below the latest commit acknowledged before
	// them but at or above every earlier one (AllowLateCommit).
	LateCommitRereads int
	CommitsSeen       int      // commits acknowledged to members or read back by the watcher
	Violations        []string // each finding, in words
}

// Check judges the journal against what was produced (values[p][offset], offsets 0..n-1 of
// every partition) and returns the findings:
//   - skipped: a produced record nobody processed;
//   - phantom: a processed record whose value differs from the one produced at its offset;
//   - backwards: per partition, the commits acknowledged to members (in acknowledgement
//     order), or the watcher's successive OffsetFetch answers, going down;
//   - re-read below a commit: a member began processing a partition (a session: a run of
//     consecutive offsets) below an offset whose commit was acknowledged before the poll that
//     returned the session's first record: only the uncommitted tail may be processed twice;
//   - committed past the end, or, when finalCommitted is given, a final committed offset
//     above which something was never processed or below the end.
func (j *GroupJournal) Check(values map[int32][]string, finalCommitted map[int32]int64) GroupCheck {
	j.mu.Lock()
	processed := append([]GroupProcessed(nil), j.processed...)
	commits := append([]GroupCommit(nil), j.commits...)
	lateCommits := j.lateCommits
	j.mu.Unlock()
	res := GroupCheck{Processed: len(processed), CommitsSeen: len(commits)}
	bad := func(format string, args ...any) {
		if len(res.Violations) < 30 {
			res.Violations = append(res.Violations, fmt.Sprintf(format, args...))
		} else if len(res.Violations) == 30 {
			res.Violations = append(res.Violations, "(more findings left out)")
		}
	}

	seen := map[int32]map[int64]int{}
	for _, r := range processed {
		vs := values[r.Partition]
		if r.Offset < 0 || r.Offset >= int64(len(vs)) || vs[r.Offset] != r.Value {
			bad("phantom: %s processed partition %d offset %d value %q, which was not produced there", r.Member, r.Partition, r.Offset, r.Value)
			continue
		}
		if seen[r.Partition] == nil {
			seen[r.Partition] = map[int64]int{}
		}
		if seen[r.Partition][r.Offset] > 0 {
			res.Repeated++
		}
		seen[r.Partition][r.Offset]++
	}
	for p, vs := range values {
		missing, firstMissing := 0, int64(-1)
		for o := range vs {
			if seen[p][int64(o)] == 0 {
				if missing == 0 {
					firstMissing = int64(o)
				}
				missing++
			}
		}
		if missing > 0 {
			bad("skipped: partition %d: %d of %d produced records never processed (first at offset %d)", p, missing, len(vs), firstMissing)
		}
	}

	for _, v := range commitViolations(commits, values) {
		bad("%s", v)
	}

	// Sessions: per partition, in processing order, a run of offsets o, o+1, ... by one member.
	byPart := map[int32][]GroupProcessed{}
	for _, r := range processed {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for p, rs := range byPart {
		open := map[string]int64{} // member → next offset of its current session
		for _, r := range rs {
			if next, ok := open[r.Member]; ok && r.Offset == next {
				open[r.Member] = next + 1
				continue
			}
			open[r.Member] = r.Offset + 1
			res.Sessions++
			// The highest commit for p acknowledged before the poll that returned this
			// record: the session must not start below it.
			committed, by := int64(-1), ""
			for _, cm := range commits {
				if cm.Partition == p && cm.At.Before(r.At) && cm.Offset > committed {
					committed, by = cm.Offset, cm.Member
				}
			}
			if r.Offset >= committed {
				continue
			}
			if lateCommits {
				// The latest commit may have landed after the session's OffsetFetch; every
				// earlier one had to be seen.
				earlier := int64(-1)
				for _, cm := range commits {
					if cm.Partition == p && cm.At.Before(r.At) && cm.Offset < committed && cm.Offset > earlier {
						earlier = cm.Offset
					}
				}
				if r.Offset >= earlier {
					res.LateCommitRereads++
					continue
				}
			}
			bad("re-read below a commit: %s started partition %d at offset %d (%s) although offset %d had been committed (%s) before",
				r.Member, p, r.Offset, r.At.Format("15:04:05.000"), committed, by)
		}
	}

	for p, c := range finalCommitted {
		if end := int64(len(values[p])); c != end {
			bad("final commit: partition %d committed %d, produced %d", p, c, end)
		}
	}
	return res
}

// CommitViolations checks only the commits (for members whose processing is not journaled,
// such as kcat): per partition they never go back, and none passes ends[p].
func (j *GroupJournal) CommitViolations(ends map[int32]int64) []string {
	j.mu.Lock()
	commits := append([]GroupCommit(nil), j.commits...)
	j.mu.Unlock()
	values := map[int32][]string{}
	for p, e := range ends {
		values[p] = make([]string, e)
	}
	return commitViolations(commits, values)
}

// commitViolations: the members' acknowledged commits in acknowledgement order, and the
// watcher's answers in the order it asked, only go up per partition and never pass the number
// of records produced (len(values[p])). commits is sorted in place.
func commitViolations(commits []GroupCommit, values map[int32][]string) []string {
	var out []string
	sort.SliceStable(commits, func(a, b int) bool { return commits[a].At.Before(commits[b].At) })
	lastMember := map[int32]GroupCommit{}
	lastObserved := map[int32]GroupCommit{}
	for _, cm := range commits {
		last := lastMember
		if cm.Member == Observer {
			last = lastObserved
		}
		if prev, ok := last[cm.Partition]; ok && cm.Offset < prev.Offset {
			out = append(out, fmt.Sprintf("backwards: partition %d committed offset %d (%s, %s) after %d (%s, %s)",
				cm.Partition, cm.Offset, cm.Member, cm.At.Format("15:04:05.000"), prev.Offset, prev.Member, prev.At.Format("15:04:05.000")))
		}
		last[cm.Partition] = cm
		if end := int64(len(values[cm.Partition])); cm.Offset > end {
			out = append(out, fmt.Sprintf("past the end: partition %d committed offset %d (%s) beyond the %d records produced", cm.Partition, cm.Offset, cm.Member, end))
		}
	}
	return out
}
