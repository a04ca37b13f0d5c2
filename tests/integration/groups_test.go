package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 10: consumer groups served by the group coordinator, proven with stock clients against
// real ZooKeeper and broker processes. The sarama and kafka-go group tests are in the nested
// module tests/clients (groups_test.go); fault row 15 is tests/faults TestFault15.

// Issue 10 item 1: two `kcat -G` members (librdkafka's balanced consumer) share a 6-partition
// RF=3 topic: each consumes a non-empty set of partitions, the sets are disjoint, every record
// is consumed exactly once across the two; after both exit (SIGTERM: commit and LeaveGroup)
// the group is Empty with the end offsets committed, and a third member resumes from the
// commits, consuming only the records produced after.
func TestGroups_KcatTwoMembersShareAndResume(t *testing.T) {
	kcatPath(t)
	c := startGroupCluster(t, nil)
	const topic, group, partitions = "kcat-group", "kcat-grp", 6
	c.CreateTopic(topic, partitions, 3)

	m1 := startKcatMember(t, c, group, topic)
	m2 := startKcatMember(t, c, group, topic)
	d := c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	for id, ps := range cluster.MemberPartitions(d, topic) {
		if len(ps) == 0 {
			t.Fatalf("member %s was assigned no partition: %v", id, cluster.MemberPartitions(d, topic))
		}
	}
	// Records are produced only once both members hold their partitions, so no rebalance can
	// make one re-read what the other consumed.
	pr := newProduced()
	const first = 600
	pr.produceRoundRobin(t, c, topic, partitions, "before", first)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n1, n2 := len(m1.lines(t)), len(m2.lines(t))
		return n1+n2 >= first, fmt.Sprintf("kcat members consumed %d + %d of %d records", n1, n2, first)
	})
	m1.terminate(t)
	m2.terminate(t)
	l1, l2 := m1.lines(t), m2.lines(t)
	s1, s2 := partitionSet(l1), partitionSet(l2)
	t.Logf("member 1 consumed %d records from partitions %v, member 2 %d from %v", len(l1), s1, len(l2), s2)
	if len(s1) == 0 || len(s2) == 0 {
		t.Errorf("a member consumed nothing: partitions %v and %v", s1, s2)
	}
	for p := range s1 {
		if s2[p] {
			t.Errorf("partition %d consumed by both members", p)
		}
	}
	checkExactlyOnce(t, pr.snapshot(), append(l1, l2...))

	ends := pr.ends(partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	committed, err := c.Groups.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatalf("OffsetFetch after both members left: %v", err)
	}
	for p, end := range ends {
		if committed[p] != end {
			t.Errorf("partition %d: committed %d after both members left, end offset %d", p, committed[p], end)
		}
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		d, err := c.Groups.Describe(ctx, group)
		return err == nil && d.State == "Empty" && len(d.Members) == 0, fmt.Sprintf("group after both left: %s, %d members, %v", d.State, len(d.Members), err)
	})

	// A third member with auto.offset.reset=earliest: had the commits been lost it would
	// start at offset 0 and print the old records before the new ones of each partition.
	const second = 300
	pr.produceRoundRobin(t, c, topic, partitions, "after", second)
	m3 := startKcatMember(t, c, group, topic)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := len(m3.lines(t))
		return n >= second, fmt.Sprintf("third member consumed %d of the %d new records", n, second)
	})
	m3.terminate(t)
	l3 := m3.lines(t)
	for _, l := range l3 {
		if l.Offset < committed[l.Partition] {
			t.Errorf("third member re-read partition %d offset %d (%s), below the committed %d", l.Partition, l.Offset, l.Value, committed[l.Partition])
		}
	}
	if len(l3) != second {
		t.Errorf("third member consumed %d records, want the %d produced after the commits", len(l3), second)
	}
	for _, l := range l3 {
		if !strings.HasPrefix(l.Value, "after-") {
			t.Errorf("third member consumed %q at partition %d offset %d, produced before the commits", l.Value, l.Partition, l.Offset)
		}
	}
}

// checkExactlyOnce checks that lines hold every produced record exactly once with its value.
func checkExactlyOnce(t *testing.T, values map[int32][]string, lines []kcatLine) {
	t.Helper()
	count := map[int32]map[int64]int{}
	for _, l := range lines {
		vs := values[l.Partition]
		if l.Offset < 0 || l.Offset >= int64(len(vs)) || vs[l.Offset] != l.Value {
			t.Errorf("consumed partition %d offset %d value %q: not what was produced there", l.Partition, l.Offset, l.Value)
			continue
		}
		if count[l.Partition] == nil {
			count[l.Partition] = map[int64]int{}
		}
		count[l.Partition][l.Offset]++
	}
	for p, vs := range values {
		for o := range vs {
			if n := count[p][int64(o)]; n != 1 {
				t.Errorf("partition %d offset %d consumed %d times, want exactly once", p, o, n)
			}
		}
	}
}

// Issue 10 item 2 (franz-go): members join and leave while a producer writes; with an eager
// balancer (range) and with the cooperative-sticky one, every produced record is processed,
// commits only go up, a member taking over a partition starts at or above every commit
// acknowledged before, and the final commits are the end offsets.
func TestGroups_KgoJoinLeaveMidStreamLosesNothingRereadsOnlyUncommittedTail(t *testing.T) {
	c := startGroupCluster(t, nil)
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, group := "midstream-"+tc.name, "midstream-grp-"+tc.name
			runKgoMidStream(t, c, topic, group, kgo.Balancers(tc.balancer))
		})
	}
}

// runKgoMidStream is one join/leave run: m1 alone, m2 joins, m3 joins, m1 leaves, m2 leaves,
// all while a producer writes 6 partitions round-robin; then the producer stops, m3 commits
// the end offsets, and the journal is checked.
func runKgoMidStream(t *testing.T, c *cluster.Cluster, topic, group string, opts ...kgo.Opt) {
	const partitions = 6
	c.CreateTopic(topic, partitions, 3)
	j := cluster.NewGroupJournal()
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, c, group, topic, 100*time.Millisecond)
	defer func() { wcancel(); <-watched }()

	p := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic,
		ackProducerOptions{every: 5 * time.Millisecond, perTick: 5, partitions: partitions})
	members := map[string]*kgoMember{}
	stopM3 := c.Groups.JoinLeaveMidStream(j, group, topic, partitions, 60*time.Second, func(name string) func() {
		members[name] = startKgoMember(t, c, j, name, group, topic, opts...)
		return members[name].stop
	})
	m1, m2, m3 := members["m1"], members["m2"], members["m3"]

	pr, final := drainCommits(t, c, p, group, topic, partitions, stopM3)
	for _, m := range []*kgoMember{m1, m2, m3} {
		t.Logf("%s processed partitions %v", m.name, j.ProcessedBy(m.name))
		if _, lost, gerrs := m.events(); len(lost) > 0 || len(gerrs) > 0 {
			t.Errorf("%s: partitions lost %v, group errors %v (only graceful joins and leaves happened)", m.name, lost, gerrs)
		}
	}
	if len(j.ProcessedBy("m3")) == 0 {
		t.Errorf("m3 processed nothing")
	}
	checkJournal(t, j, pr, final)
}

// Issue 10 item 3: a static member (group.instance.id) restarted within its session timeout
// takes its place back without a rebalance: the generation stays, the other member sees no new
// assignment, the restarted member gets its old partitions under a new member id.
func TestGroups_StaticMemberRestartKeepsGenerationAndAssignment(t *testing.T) {
	c := startGroupCluster(t, nil)
	const topic, group, partitions = "static-restart", "static-grp", 6
	c.CreateTopic(topic, partitions, 3)
	opts := func(instance string) []kgo.Opt {
		return []kgo.Opt{kgo.InstanceID(instance), kgo.Balancers(kgo.RangeBalancer()),
			kgo.SessionTimeout(30 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond)}
	}
	a := startKgoMember(t, c, nil, "a", group, topic, opts("static-a")...)
	b := startKgoMember(t, c, nil, "b", group, topic, opts("static-b")...)
	d := c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	memberOf := func(d kadm.DescribedGroup, instance string) kadm.DescribedGroupMember {
		for _, m := range d.Members {
			if m.InstanceID != nil && *m.InstanceID == instance {
				return m
			}
		}
		t.Fatalf("no member with group.instance.id %s in %+v", instance, d.Members)
		return kadm.DescribedGroupMember{}
	}
	oldB := memberOf(d, "static-b")
	bParts := cluster.MemberPartitions(d, topic)[oldB.MemberID]
	// Both members have synced the generation the group is Stable in.
	var genA int32
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		idA, gA := a.cl.GroupMetadata()
		idB, gB := b.cl.GroupMetadata()
		genA = gA
		return idB == oldB.MemberID && gA == gB && gA > 0, fmt.Sprintf("a at generation %d (%s), b at %d (%s), described b %s", gA, idA, gB, idB, oldB.MemberID)
	})
	assignedA, _, _ := a.events()

	b.stop() // static: no LeaveGroup
	b2 := startKgoMember(t, c, nil, "b2", group, topic, opts("static-b")...)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		as, _, errs := b2.events()
		return len(as) > 0, fmt.Sprintf("restarted b has no assignment yet (group errors %v)", errs)
	})
	idB2, genB2 := b2.cl.GroupMetadata()
	_, genAAfter := a.cl.GroupMetadata()
	assignedB2, _, _ := b2.events()
	t.Logf("generation %d; b was %s with %v; restarted as %s at generation %d assigned %v", genA, oldB.MemberID, bParts, idB2, genB2, assignedB2)
	if genB2 != genA || genAAfter != genA {
		t.Errorf("the restart changed the generation: a %d -> %d, restarted b at %d (a rebalance happened)", genA, genAAfter, genB2)
	}
	if got := assignedB2[0][topic]; !sameInt32s(got, bParts) {
		t.Errorf("restarted b was assigned %v, b held %v", got, bParts)
	}
	if idB2 == oldB.MemberID {
		t.Errorf("restarted b kept member id %s; the coordinator gives a rejoining static member a new one", idB2)
	}
	if as, lost, errs := a.events(); len(as) != len(assignedA) || len(lost) > 0 || len(errs) > 0 {
		t.Errorf("member a saw the restart: assignments %v (before %v), lost %v, group errors %v", as, assignedA, lost, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d2, err := c.Groups.Describe(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d2.State != "Stable" || len(d2.Members) != 2 || memberOf(d2, "static-b").MemberID != idB2 {
		t.Errorf("after the restart the group is %s with members %+v, want Stable with static-b as %s", d2.State, d2.Members, idB2)
	}
}

func sameInt32s(a, b []int32) bool {
	a, b = append([]int32(nil), a...), append([]int32(nil), b...)
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// Issue 10 item 3: a second instance with the same group.instance.id takes the place over, as
// in Kafka 2.4: the newer joiner gets the assignment, the older member is fenced
// (FENCED_INSTANCE_ID on its next heartbeat) and stays out.
func TestGroups_DuplicateStaticInstanceFencesTheOlder(t *testing.T) {
	c := startGroupCluster(t, nil)
	const topic, group, partitions = "static-fence", "fence-grp", 3
	c.CreateTopic(topic, partitions, 3)
	opts := []kgo.Opt{kgo.InstanceID("dup"), kgo.SessionTimeout(30 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond)}
	older := startKgoMember(t, c, nil, "older", group, topic, opts...)
	c.Groups.WaitStable(group, topic, partitions, 1, 60*time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		as, _, _ := older.events()
		return len(as) > 0, "older member not assigned yet"
	})
	newer := startKgoMember(t, c, nil, "newer", group, topic, opts...)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		as, _, errs := newer.events()
		return len(as) > 0, fmt.Sprintf("newer member not assigned yet (group errors %v)", errs)
	})
	// Kafka 2.4 answers the older member's next heartbeat FENCED_INSTANCE_ID: that is the
	// first error it sees (not UNKNOWN_MEMBER_ID first, which makes a client rejoin).
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		_, _, errs := older.events()
		return len(errs) > 0, "older member: no group error yet, want FENCED_INSTANCE_ID"
	})
	if _, _, errs := older.events(); !errors.Is(errs[0], kerr.FencedInstanceID) {
		t.Errorf("older member's first group error: %v, want FENCED_INSTANCE_ID (all: %v)", errs[0], errs)
	}
	idNewer, genNewer := newer.cl.GroupMetadata()
	if _, _, errs := newer.events(); len(errs) > 0 {
		t.Errorf("the newer member got group errors: %v", errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.Groups.Describe(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Members) != 1 || d.Members[0].MemberID != idNewer || d.Members[0].InstanceID == nil || *d.Members[0].InstanceID != "dup" {
		t.Errorf("group members %+v, want only the newer member %s with instance dup", d.Members, idNewer)
	}
	if got := cluster.MemberPartitions(d, topic)[idNewer]; len(got) != partitions {
		t.Errorf("the newer member holds %v, want all %d partitions", got, partitions)
	}
	// The fenced member keeps retrying with its old member id; it must not take the place back.
	if id, gen := newer.cl.GroupMetadata(); id != idNewer || gen != genNewer {
		t.Errorf("the newer member moved from %s generation %d to %s generation %d", idNewer, genNewer, id, gen)
	}
}

// Issue 10 item 4: __consumer_offsets holds the commits in Kafka's record format: a member's
// commits and an admin commit (with metadata strings) decode with kmsg.OffsetCommitKey/Value
// (group, topic, partition, offset, metadata) and the group's metadata with
// kmsg.GroupMetadataKey/Value, all in the partition Utils.abs(groupId.hashCode) %
// offsets.topic.num.partitions. OffsetFetch returns the metadata, and ListGroups lists both
// groups from their coordinator ("consumer" and, for the commit-only group, no protocol type).
func TestGroups_ConsumerOffsetsRecordsDecodeToOurCommits(t *testing.T) {
	c := startGroupCluster(t, nil)
	const topic, partitions = "decode-me", 3
	// decode-admin-grp-10's hashCode is negative (-1816281660): Utils.abs gives partition 0,
	// masking the sign bit would give 2.
	const memberGroup, adminGroup = "decode-member-grp", "decode-admin-grp-10"
	c.CreateTopic(topic, partitions, 3)
	pr := newProduced()
	pr.produceRoundRobin(t, c, topic, partitions, "rec", 90)
	ends := pr.ends(partitions)

	m := startKgoMember(t, c, nil, "decoder", memberGroup, topic)
	c.Groups.WaitCommitted(memberGroup, topic, ends, 60*time.Second)
	m.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adminCommit := map[int32]int64{0: 7, 1: 8, 2: 9}
	offs := kadm.Offsets{}
	for p, o := range adminCommit {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1, Metadata: fmt.Sprintf("meta-%d", p)})
	}
	if err := c.Admin().CommitAllOffsets(ctx, adminGroup, offs); err != nil {
		t.Fatalf("admin OffsetCommit: %v", err)
	}
	fetched, err := c.Admin().FetchOffsets(ctx, adminGroup)
	if err != nil || fetched.Error() != nil {
		t.Fatalf("OffsetFetch(%s): %v %v", adminGroup, err, fetched.Error())
	}
	for p, o := range adminCommit {
		f, ok := fetched.Lookup(topic, p)
		if !ok || f.At != o || f.Metadata != fmt.Sprintf("meta-%d", p) {
			t.Errorf("OffsetFetch(%s) %s-%d: %+v (found %v), committed offset %d metadata meta-%d", adminGroup, topic, p, f, ok, o, p)
		}
	}
	listed, err := c.Admin().ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	for g, want := range map[string]string{memberGroup: "consumer", adminGroup: ""} {
		lg, ok := listed[g]
		coord, cerr := c.Groups.Coordinator(ctx, g)
		if !ok || lg.ProtocolType != want || cerr != nil || lg.Coordinator != coord {
			t.Errorf("ListGroups: %s %+v (listed %v), want protocol type %q listed by its coordinator %d (%v)", g, lg, ok, want, coord, cerr)
		}
	}

	// Read the internal topic to its end (it must be named explicitly).
	offEnds, err := c.EndOffsets(ctx, cluster.OffsetsTopic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", cluster.OffsetsTopic, err)
	}
	if len(offEnds) != offsetsPartitions {
		t.Errorf("%s has %d partitions, offsets.topic.num.partitions is %d", cluster.OffsetsTopic, len(offEnds), offsetsPartitions)
	}
	cl := c.Client(kgo.ConsumeTopics(cluster.OffsetsTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := map[int32]int64{}
	type commitKey struct {
		group string
		p     int32
	}
	lastCommit := map[commitKey]int64{}
	commitPart := map[string]map[int32]bool{}
	metaPart := map[string]int32{}
	var meta []kmsg.GroupMetadataValue
	for {
		done := true
		for p, e := range offEnds {
			if next[p] < e {
				done = false
			}
		}
		if done {
			break
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %s: read up to %v of %v", cluster.OffsetsTopic, next, offEnds)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if len(r.Key) < 2 {
				t.Errorf("%s-%d offset %d: key of %d bytes", cluster.OffsetsTopic, r.Partition, r.Offset, len(r.Key))
				return
			}
			switch v := int16(binary.BigEndian.Uint16(r.Key)); v {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Errorf("offset commit key at %d/%d: %v", r.Partition, r.Offset, err)
					return
				}
				if commitPart[k.Group] == nil {
					commitPart[k.Group] = map[int32]bool{}
				}
				commitPart[k.Group][r.Partition] = true
				if r.Value == nil || k.Topic != topic {
					return // a tombstone, or another topic
				}
				var val kmsg.OffsetCommitValue
				if err := val.ReadFrom(r.Value); err != nil {
					t.Errorf("offset commit value at %d/%d: %v", r.Partition, r.Offset, err)
					return
				}
				lastCommit[commitKey{k.Group, k.Partition}] = val.Offset
				if k.Group == adminGroup && val.Metadata != fmt.Sprintf("meta-%d", k.Partition) {
					t.Errorf("%s commit record of %s-%d: metadata %q, committed meta-%d", adminGroup, topic, k.Partition, val.Metadata, k.Partition)
				}
			case 2:
				var k kmsg.GroupMetadataKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Errorf("group metadata key at %d/%d: %v", r.Partition, r.Offset, err)
					return
				}
				metaPart[k.Group] = r.Partition
				if r.Value == nil || k.Group != memberGroup {
					return
				}
				var val kmsg.GroupMetadataValue
				if err := val.ReadFrom(r.Value); err != nil {
					t.Errorf("group metadata value at %d/%d: %v", r.Partition, r.Offset, err)
					return
				}
				meta = append(meta, val)
			default:
				t.Errorf("%s-%d offset %d: key version %d", cluster.OffsetsTopic, r.Partition, r.Offset, v)
			}
		})
	}
	for p, end := range ends {
		if got := lastCommit[commitKey{memberGroup, p}]; got != end {
			t.Errorf("%s: last commit record of %s-%d holds offset %d, the member committed %d", memberGroup, topic, p, got, end)
		}
	}
	for p, o := range adminCommit {
		if got := lastCommit[commitKey{adminGroup, p}]; got != o {
			t.Errorf("%s: commit record of %s-%d holds offset %d, committed %d", adminGroup, topic, p, got, o)
		}
	}
	for _, g := range []string{memberGroup, adminGroup} {
		want := cluster.OffsetsPartitionFor(g, offsetsPartitions)
		if len(commitPart[g]) != 1 || !commitPart[g][want] {
			t.Errorf("group %s's commit records are in partitions %v, want only %d (abs(hashCode) %% %d)", g, commitPart[g], want, offsetsPartitions)
		}
	}
	if p, ok := metaPart[memberGroup]; !ok || p != cluster.OffsetsPartitionFor(memberGroup, offsetsPartitions) {
		t.Errorf("group metadata of %s in partition %d (found %v), want %d", memberGroup, p, ok, cluster.OffsetsPartitionFor(memberGroup, offsetsPartitions))
	}
	sawMember := false
	for _, v := range meta {
		if v.ProtocolType != "consumer" {
			t.Errorf("group metadata of %s: protocol type %q, want consumer", memberGroup, v.ProtocolType)
		}
		for _, mm := range v.Members {
			if mm.ClientID == "decoder" && v.Generation > 0 && v.Leader != nil && *v.Leader == mm.MemberID {
				sawMember = true
			}
		}
	}
	if !sawMember {
		t.Errorf("no group metadata record of %s names the member (client id decoder) as leader of a generation: %+v", memberGroup, meta)
	}
}

// Issue 10 item 6: the lag computed from ListOffsets and OffsetFetch (kadm.Lag) is log end
// minus committed for every partition, after admin commits and after a member's commits.
func TestGroups_LagIsLogEndMinusCommitted(t *testing.T) {
	c := startGroupCluster(t, nil)
	const topic, group, partitions = "lag-topic", "lag-grp", 3
	c.CreateTopic(topic, partitions, 3)
	pr := newProduced()
	pr.produceRoundRobin(t, c, topic, partitions, "lag", 300)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	commit := map[int32]int64{0: 10, 1: 55, 2: 100}
	offs := kadm.Offsets{}
	for p, o := range commit {
		offs.AddOffset(topic, p, o, -1)
	}
	if err := c.Admin().CommitAllOffsets(ctx, group, offs); err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	checkLag := func(what string, want map[int32]int64) {
		t.Helper()
		lags, err := c.Admin().Lag(ctx, group)
		if err != nil {
			t.Fatalf("%s: Lag: %v", what, err)
		}
		l := lags[group]
		if l.Error() != nil {
			t.Fatalf("%s: Lag(%s): %v", what, group, l.Error())
		}
		for p, w := range want {
			ml, ok := l.Lag.Lookup(topic, p)
			if !ok {
				t.Errorf("%s: no lag for %s-%d", what, topic, p)
				continue
			}
			if ml.Lag != w || ml.End.Offset-ml.Commit.At != w {
				t.Errorf("%s: %s-%d lag %d (end %d, committed %d), want %d", what, topic, p, ml.Lag, ml.End.Offset, ml.Commit.At, w)
			}
		}
	}
	ends := pr.ends(partitions)
	want := map[int32]int64{}
	for p, o := range commit {
		want[p] = ends[p] - o
	}
	checkLag("after the admin commit", want)

	// A member consumes from the commits to the end; then 30 more records arrive.
	m := startKgoMember(t, c, nil, "lagger", group, topic)
	c.Groups.WaitCommitted(group, topic, ends, 60*time.Second)
	m.stop()
	checkLag("after the member committed the end", map[int32]int64{0: 0, 1: 0, 2: 0})
	pr.produceRoundRobin(t, c, topic, partitions, "more", 30)
	checkLag("after 30 more records", map[int32]int64{0: 10, 1: 10, 2: 10})
}

// Issue 10 item 5: kill -9 the broker leading the group's __consumer_offsets partition (the
// coordinator) while two members consume and commit under a steady producer: another broker
// leads the partition and coordinates the group, the members' commits are acknowledged again
// within the session timeout + 10 s, no committed offset ever goes back (neither the
// acknowledged commits nor what OffsetFetch answers), nothing is skipped, and re-reads stay in
// the uncommitted tail. Fault row 15 (tests/faults) runs the same fault with the fault
// matrix's checker.
func TestGroups_CoordinatorKillNineFailsOverCommitsNeverGoBack(t *testing.T) {
	const session = 6 * time.Second
	const topic, group, partitions = "failover-topic", "failover-grp", 6
	c, j, p, m1, m2 := startCommittingPair(t, session, topic, group, partitions, "before the fault")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	coord, err := c.Groups.Coordinator(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	pp := cluster.OffsetsPartitionFor(group, offsetsPartitions)
	if st, err := c.ZK.PartitionState(cluster.OffsetsTopic, pp); err != nil || st.Leader != coord {
		t.Errorf("FindCoordinator names broker %d; %s-%d is led by %d (%v)", coord, cluster.OffsetsTopic, pp, st.Leader, err)
	}
	killedAt := time.Now()
	t.Logf("kill -9 coordinator %d (leader of %s-%d) at %s", coord, cluster.OffsetsTopic, pp, killedAt.Format("15:04:05.000"))
	c.Broker(coord).Kill()
	st := c.ZK.WaitPartitionState(cluster.OffsetsTopic, pp, 45*time.Second, func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != coord, fmt.Sprintf("%s-%d: leader %d, want one other than %d", cluster.OffsetsTopic, pp, st.Leader, coord)
	})
	movedAfter := time.Since(killedAt)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		id, err := c.Groups.Coordinator(ctx, group)
		return err == nil && id == st.Leader, fmt.Sprintf("FindCoordinator: %d (%v), want the new leader %d", id, err, st.Leader)
	})
	resumedAt := waitMemberCommits(t, j, killedAt, 12, session+30*time.Second, "since the kill")
	resumed := resumedAt.Sub(killedAt)
	t.Logf("%s-%d moved to broker %d after %v; the first commit after the kill was acknowledged after %v",
		cluster.OffsetsTopic, pp, st.Leader, movedAfter.Round(time.Millisecond), resumed.Round(time.Millisecond))
	if limit := session + 10*time.Second; resumed > limit {
		t.Errorf("commits resumed %v after the kill, want within the session timeout + 10 s = %v", resumed, limit)
	}

	c.Broker(coord).Start()
	c.WaitRegistered(coord)
	progressFrom := j.ProcessedCount()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := j.ProcessedCount() - progressFrom
		return n >= 1000, fmt.Sprintf("%d records processed since broker %d restarted", n, coord)
	})
	pr, final := drainCommits(t, c, p, group, topic, partitions, func() { m1.stop(); m2.stop() })
	checkJournal(t, j, pr, final)
}

// Issue 10, coordinator moves (beyond item 5): the coordinator A is killed (B takes the offsets
// partition), A comes back as a follower and a preferred election gives it the partition back
// (B resigns alive, A loads what B committed), then A is killed again and B, which coordinated
// the group before, loads the partition once more. Throughout, two members commit under a
// steady producer: a coordinator serving a cache left from an earlier term, or a load missing
// commits made while it followed, would make commits go back or a member re-read below a commit.
func TestGroups_CoordinatorMovesAwayAndBackNeverServesStaleOffsets(t *testing.T) {
	const session = 6 * time.Second
	const topic, group, partitions = "moves-topic", "moves-grp", 6
	c, j, p, m1, m2 := startCommittingPair(t, session, topic, group, partitions, "before the first kill")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pp := cluster.OffsetsPartitionFor(group, offsetsPartitions)
	waitCoordinator := func(what string, cond func(cluster.PartitionState) (bool, string)) int32 {
		t.Helper()
		st := c.ZK.WaitPartitionState(cluster.OffsetsTopic, pp, 45*time.Second, cond)
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			id, err := c.Groups.Coordinator(ctx, group)
			return err == nil && id == st.Leader, fmt.Sprintf("%s: FindCoordinator %d (%v), want the leader %d of %s-%d", what, id, err, st.Leader, cluster.OffsetsTopic, pp)
		})
		t.Logf("%s: broker %d coordinates (leader epoch %d of %s-%d)", what, st.Leader, st.LeaderEpoch, cluster.OffsetsTopic, pp)
		return st.Leader
	}
	a := waitCoordinator("start", func(st cluster.PartitionState) (bool, string) { return st.Leader >= 0, "no leader" })
	assignment, err := c.ZK.TopicAssignment(cluster.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if assignment[pp][0] != a {
		t.Fatalf("%s-%d: the coordinator %d is not the preferred replica of %v", cluster.OffsetsTopic, pp, a, assignment[pp])
	}

	// 1. kill -9 A: B coordinates.
	killed := time.Now()
	c.Broker(a).Kill()
	b := waitCoordinator("A killed", func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != a, fmt.Sprintf("leader %d", st.Leader)
	})
	waitMemberCommits(t, j, killed, 20, session+30*time.Second, "with B coordinating")

	// 2. A back as a follower, in the ISR; a preferred election hands it the partition: B
	// resigns alive and A loads what B committed.
	c.Broker(a).Start()
	c.WaitRegistered(a)
	c.ZK.WaitPartitionState(cluster.OffsetsTopic, pp, 45*time.Second, func(st cluster.PartitionState) (bool, string) {
		return slices.Contains(st.ISR, a), fmt.Sprintf("ISR %v without %d", st.ISR, a)
	})
	waitMemberCommits(t, j, time.Now(), 10, 30*time.Second, "after A rejoined the ISR")
	moved := time.Now()
	r := cluster.RunBinary(t, "", adminRunTimeout, "leader-election", "--zookeeper="+c.ZK.Addr, "--election-type", "preferred",
		"--topic", cluster.OffsetsTopic, "--partition", fmt.Sprint(pp))
	if r.ExitCode != 0 {
		t.Fatalf("leader-election: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	waitCoordinator("preferred election", func(st cluster.PartitionState) (bool, string) {
		return st.Leader == a, fmt.Sprintf("leader %d, want %d", st.Leader, a)
	})
	waitMemberCommits(t, j, moved, 20, 30*time.Second, "with A coordinating again")

	// 3. kill -9 A again: B, which coordinated the group before, loads the partition again.
	killed = time.Now()
	c.Broker(a).Kill()
	if again := waitCoordinator("A killed again", func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != a, fmt.Sprintf("leader %d", st.Leader)
	}); again != b {
		t.Logf("broker %d (not %d) took the partition the second time", again, b)
	}
	waitMemberCommits(t, j, killed, 20, session+30*time.Second, "after the second kill")
	c.Broker(a).Start()
	c.WaitRegistered(a)

	pr, final := drainCommits(t, c, p, group, topic, partitions, func() { m1.stop(); m2.stop() })
	checkJournal(t, j, pr, final)
}

// Issue 10, heartbeat expiry with librdkafka: of two `kcat -G` members, one is frozen
// (SIGSTOP) after committing everything it consumed. Within its session timeout (6 s) + 10 s
// the coordinator expires it and the group is Stable with the other member holding all six
// partitions; that member resumes the frozen one's partitions exactly at its commits (no record
// re-read, none skipped). Thawed (SIGCONT), the stale member rejoins and the group is Stable
// with two members again; OffsetFetch never shows a commit going back (a stale member's
// commit accepted after its expiry would).
func TestGroups_KcatFrozenMemberExpiresPartnerResumesAtItsCommits(t *testing.T) {
	kcatPath(t)
	c := startGroupCluster(t, nil)
	const topic, group, partitions = "kcat-freeze", "kcat-freeze-grp", 6
	const session = 6 * time.Second
	c.CreateTopic(topic, partitions, 3)
	j := cluster.NewGroupJournal()
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, c, group, topic, 100*time.Millisecond)
	defer func() { wcancel(); <-watched }()

	live := startKcatMember(t, c, group, topic, "-X", "client.id=kcat-live")
	frozen := startKcatMember(t, c, group, topic, "-X", "client.id=kcat-frozen")
	d := c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	var frozenParts []int32
	for _, m := range d.Members {
		if m.ClientID == "kcat-frozen" {
			frozenParts = cluster.MemberPartitions(d, topic)[m.MemberID]
		}
	}
	if len(frozenParts) == 0 {
		t.Fatalf("the member to freeze holds no partition: %+v", cluster.MemberPartitions(d, topic))
	}
	pr := newProduced()
	pr.produceRoundRobin(t, c, topic, partitions, "before", 600)
	ends := pr.ends(partitions)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := len(live.lines(t)) + len(frozen.lines(t))
		return n >= 600, fmt.Sprintf("consumed %d of 600", n)
	})
	c.Groups.WaitCommitted(group, topic, ends, 30*time.Second)

	frozen.freeze(t)
	frozenAt := time.Now()
	c.Groups.WaitStable(group, topic, partitions, 1, session+10*time.Second)
	t.Logf("the frozen member (partitions %v) was expired and its partitions reassigned %v after SIGSTOP",
		frozenParts, time.Since(frozenAt).Round(time.Millisecond))
	before := len(live.lines(t))
	if err := c.ProduceRoundRobin(context.Background(), topic, partitions, "after", 600, 300, pr.ProducedLog); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := len(live.lines(t)) - before
		return n >= 300, fmt.Sprintf("live member consumed %d of the 300 records produced after the freeze", n)
	})
	after := live.lines(t)[before:]
	first := map[int32]int64{}
	for _, l := range after {
		if _, ok := first[l.Partition]; !ok {
			first[l.Partition] = l.Offset
		}
	}
	for _, p := range frozenParts {
		if first[p] != ends[p] {
			t.Errorf("partition %d (the frozen member's, committed %d): the live member resumed at %d", p, ends[p], first[p])
		}
	}
	values := pr.snapshot()
	for p, vs := range values {
		values[p] = vs[ends[p]:]
	}
	seen := map[string]int{}
	for _, l := range after {
		seen[l.Value]++
	}
	for p, vs := range values {
		for _, v := range vs {
			if seen[v] != 1 {
				t.Errorf("partition %d: %q consumed %d times by the live member, want once", p, v, seen[v])
			}
		}
	}
	if len(after) != 300 {
		t.Errorf("the live member consumed %d records after the freeze, want the 300 produced", len(after))
	}

	frozen.thaw(t)
	c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	final := pr.ends(partitions)
	c.Groups.WaitCommitted(group, topic, final, 30*time.Second)
	live.terminate(t)
	frozen.terminate(t)
	for _, v := range j.CommitViolations(final) {
		t.Error(v)
	}
}

// Issue 10, coordinator kill -9 in the middle of a rebalance: two members are Stable when a
// third starts joining and the coordinator is killed at once (the group is then preparing or
// completing a rebalance, which Kafka does not persist). The new coordinator loads the last
// stored generation; the group must settle Stable with all three members holding the six
// partitions, and the journal checks hold (nothing skipped, commits only up, re-reads only in
// the uncommitted tail, final commits at the end offsets).
func TestGroups_CoordinatorKilledMidRebalanceGroupSettles(t *testing.T) {
	const session = 6 * time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: session, Overrides: groupOverrides(nil)})
	const topic, group, partitions = "midrebalance-topic", "midrebalance-grp", 6
	c.CreateTopic(topic, partitions, 3)
	j := cluster.NewGroupJournal()
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, c, group, topic, 100*time.Millisecond)
	defer func() { wcancel(); <-watched }()
	p := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic,
		ackProducerOptions{every: 5 * time.Millisecond, perTick: 5, partitions: partitions})
	// Heartbeats every 2 s: the members learn of m3's join (and the group stays preparing
	// the rebalance) up to 2 s later, a window the kill below reliably falls into.
	opts := []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(2 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond), kgo.Balancers(kgo.RangeBalancer())}
	m1 := startKgoMember(t, c, j, "m1", group, topic, opts...)
	m2 := startKgoMember(t, c, j, "m2", group, topic, opts...)
	c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	waitMemberCommits(t, j, time.Now(), 20, 60*time.Second, "before the third member")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	coord, err := c.Groups.Coordinator(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	m3 := startKgoMember(t, c, j, "m3", group, topic, opts...)
	// The kill goes in as soon as the coordinator has taken m3's JoinGroup (the group leaves
	// Stable), polling DescribeGroups; if the rebalance completes first, the kill still hits
	// a group whose latest generation was just written.
	cluster.Poll(10*time.Second, func() (bool, string) {
		d, err := c.Groups.Describe(ctx, group)
		return err == nil && d.State != "Stable", fmt.Sprintf("%s %v", d.State, err)
	})
	d, _ := c.Groups.Describe(ctx, group)
	killed := time.Now()
	c.Broker(coord).Kill()
	t.Logf("killed coordinator %d while the group was %s with %d members", coord, d.State, len(d.Members))
	c.Groups.WaitStable(group, topic, partitions, 3, session+45*time.Second)
	t.Logf("Stable with 3 members %v after the kill", time.Since(killed).Round(time.Millisecond))
	waitMemberCommits(t, j, time.Now(), 20, 60*time.Second, "after the group settled")
	c.Broker(coord).Start()
	c.WaitRegistered(coord)

	pr, final := drainCommits(t, c, p, group, topic, partitions, func() {
		for _, m := range []*kgoMember{m1, m2, m3} {
			m.stop()
		}
	})
	if len(j.ProcessedBy("m3")) == 0 {
		t.Errorf("m3 never processed anything")
	}
	checkJournal(t, j, pr, final)
}

// Issue 10, offsets retention (KIP-211) in real processes: with offsets.retention.minutes=1
// (checked every second), the offsets of a group that became Empty disappear one minute after
// it did, never before, leaving tombstones in __consumer_offsets, while a group whose member
// stays keeps its offsets.
func TestGroups_OffsetsExpireOneRetentionAfterGroupEmptyNotWhileActive(t *testing.T) {
	c := startGroupCluster(t, map[string]string{"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "1000"})
	const topic, partitions = "retention-topic", 3
	const gone, active = "retention-gone-grp", "retention-active-grp"
	c.CreateTopic(topic, partitions, 3)
	pr := newProduced()
	pr.produceRoundRobin(t, c, topic, partitions, "r", 90)
	ends := pr.ends(partitions)

	leaver := startKgoMember(t, c, nil, "leaver", gone, topic)
	stayer := startKgoMember(t, c, nil, "stayer", active, topic)
	c.Groups.WaitCommitted(gone, topic, ends, 60*time.Second)
	c.Groups.WaitCommitted(active, topic, ends, 60*time.Second)
	leaver.stop() // LeaveGroup: the group becomes Empty
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		d, err := c.Groups.Describe(ctx, gone)
		return err == nil && d.State == "Empty", fmt.Sprintf("%s is %s (%v)", gone, d.State, err)
	})
	emptyAt := time.Now()

	var expiredAfter time.Duration
	cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
		got, err := c.Groups.CommittedOffsets(ctx, gone, topic)
		if err != nil {
			return false, err.Error()
		}
		if len(got) > 0 {
			return false, fmt.Sprintf("%s still has offsets %v after %v", gone, got, time.Since(emptyAt).Round(time.Second))
		}
		expiredAfter = time.Since(emptyAt)
		return true, ""
	})
	t.Logf("the Empty group's offsets expired %v after it became Empty", expiredAfter.Round(time.Millisecond))
	// The Empty state began before emptyAt was taken; 1 s of slack covers that.
	if expiredAfter < 59*time.Second || expiredAfter > 80*time.Second {
		t.Errorf("offsets of the Empty group expired %v after it became Empty, want one retention (1 min) + up to a check interval", expiredAfter)
	}
	got, err := c.Groups.CommittedOffsets(ctx, active, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range ends {
		if got[p] != end {
			t.Errorf("the active group's offset of partition %d is %d (all: %v), want %d kept", p, got[p], got, end)
		}
	}
	stayer.stop()

	// Tombstones for the expired group's commits in its __consumer_offsets partition.
	pp := cluster.OffsetsPartitionFor(gone, offsetsPartitions)
	offEnds, err := c.EndOffsets(ctx, cluster.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cluster.OffsetsTopic: {pp: kgo.NewOffset().AtStart()}}))
	tombstoned := map[int32]bool{}
	for next := int64(0); next < offEnds[pp]; {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %s-%d: at %d of %d", cluster.OffsetsTopic, pp, next, offEnds[pp])
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if len(r.Key) < 2 || binary.BigEndian.Uint16(r.Key) > 1 || r.Value != nil {
				return
			}
			var k kmsg.OffsetCommitKey
			if err := k.ReadFrom(r.Key); err == nil && k.Group == gone && k.Topic == topic {
				tombstoned[k.Partition] = true
			}
		})
	}
	if len(tombstoned) != partitions {
		t.Errorf("tombstones in %s-%d for %s's commits of partitions %v, want all %d", cluster.OffsetsTopic, pp, gone, tombstoned, partitions)
	}
}

// Issue 10, two client libraries in one group: a `kcat -G` member (librdkafka offers range and
// roundrobin) and a franz-go member offering only range join one group; the coordinator selects
// the protocol both support (range), both get partitions and together consume every record
// exactly once. A franz-go member offering only cooperative-sticky is refused with
// INCONSISTENT_GROUP_PROTOCOL and the group stays as it was.
func TestGroups_KcatAndKgoShareOneGroupOnTheCommonAssignor(t *testing.T) {
	kcatPath(t)
	c := startGroupCluster(t, nil)
	const topic, group, partitions = "mixed-topic", "mixed-grp", 6
	c.CreateTopic(topic, partitions, 3)
	j := cluster.NewGroupJournal()
	kc := startKcatMember(t, c, group, topic, "-X", "client.id=kcat-mixed", "-X", "partition.assignment.strategy=range,roundrobin")
	kg := startKgoMember(t, c, j, "kgo-range", group, topic, kgo.Balancers(kgo.RangeBalancer()))
	d := c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	if d.Protocol != "range" || d.ProtocolType != "consumer" {
		t.Errorf("group protocol %q type %q, want range / consumer", d.Protocol, d.ProtocolType)
	}
	for id, ps := range cluster.MemberPartitions(d, topic) {
		if len(ps) == 0 {
			t.Errorf("member %s holds no partition: %v", id, cluster.MemberPartitions(d, topic))
		}
	}
	pr := newProduced()
	pr.produceRoundRobin(t, c, topic, partitions, "mixed", 600)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n1, n2 := len(kc.lines(t)), j.ProcessedCount()
		return n1+n2 >= 600, fmt.Sprintf("kcat consumed %d, franz-go %d, of 600", n1, n2)
	})

	coop := startKgoMember(t, c, nil, "kgo-coop", group, topic, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		_, _, errs := coop.events()
		for _, err := range errs {
			if errors.Is(err, kerr.InconsistentGroupProtocol) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("cooperative-only member's group errors %v, want INCONSISTENT_GROUP_PROTOCOL", errs)
	})
	coop.stop()
	if d2 := c.Groups.WaitStable(group, topic, partitions, 2, 30*time.Second); d2.Protocol != "range" {
		t.Errorf("after the refused member the group's protocol is %q", d2.Protocol)
	}
	kc.terminate(t)
	kg.stop()
	all := kc.lines(t)
	for _, r := range j.ProcessedRecords() {
		all = append(all, kcatLine{Partition: r.Partition, Offset: r.Offset, Value: r.Value})
	}
	checkExactlyOnce(t, pr.snapshot(), all)
}
