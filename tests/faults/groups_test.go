package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// groupOverrides are row 15's group settings: __consumer_offsets with 6 partitions, RF 3, a
// short initial rebalance delay and a 1 s minimum session timeout.
var groupOverrides = map[string]string{
	"offsets.topic.num.partitions":     "6",
	"offsets.topic.replication.factor": "3",
	"group.initial.rebalance.delay.ms": "100",
	"group.min.session.timeout.ms":     "1000",
}

// groupSession is the members' session timeout in row 15.
const groupSession = 6 * time.Second

// groupMember is a franz-go group consumer (kgo defaults: cooperative-sticky, autocommit, the
// commit on revoke) writing what it processes and every acknowledged commit into a journal.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startGroupMember(t *testing.T, c *cluster.Cluster, j *cluster.GroupJournal, name, group, topic string, extra ...kgo.Opt) *groupMember {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(c.BootstrapAddrs()...), kgo.ClientID(name),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.AutoCommitInterval(200 * time.Millisecond), kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				return
			}
			sent := map[int32]int64{}
			for _, rt := range req.Topics {
				for _, rp := range rt.Partitions {
					if rt.Topic == topic {
						sent[rp.Partition] = rp.Offset
					}
				}
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if off, ok := sent[rp.Partition]; ok && rt.Topic == topic && rp.ErrorCode == 0 {
						j.Committed(name, rp.Partition, off)
					}
				}
			}
		}),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			at := time.Now() // before the poll: no commit of what it returns precedes this
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Logf("%s: %v", name, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { j.Processed(name, r.Partition, r.Offset, r.Value, at) })
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends the poll loop and closes the client: commit on revoke, then LeaveGroup.
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// Row 15, issue 10: SIGKILL the group coordinator (the leader of the group's __consumer_offsets
// partition) while two members consume the acks=all workload and commit every 200 ms. Another
// broker must lead the partition and answer FindCoordinator for the group, the members' commits
// must be acknowledged again within the session timeout + 10 s, and the group checker G must
// find no committed offset going back (acknowledged commits, and the OffsetFetch answers of a
// watcher polling every 100 ms), no record below the final commits unprocessed, no member
// starting a partition below a commit acknowledged before, and final commits at the end
// offsets; L, D, O, M, R, E, U as in every row.
func TestFault15_GroupCoordinatorFailover(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "15-coordinator-failover", groupOverrides)
	group := "faults-15-group"
	j := cluster.NewGroupJournal()
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, s.c, group, s.topic, 100*time.Millisecond)
	defer func() { wcancel(); <-watched }()
	m1 := startGroupMember(t, s.c, j, "m1", group, s.topic)
	m2 := startGroupMember(t, s.c, j, "m2", group, s.topic)
	s.c.Groups.WaitStable(group, s.topic, topicPartitions, 2, waitLong)
	started := time.Now()
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n, _ := j.MemberCommitsSince(started)
		return n >= 20, fmt.Sprintf("%d commits acknowledged, want 20 before the fault", n)
	})
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	coord, err := s.c.Groups.Coordinator(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	pp := cluster.OffsetsPartitionFor(group, 6)
	if st, err := s.c.ZK.PartitionState(cluster.OffsetsTopic, pp); err != nil || st.Leader != coord {
		t.Errorf("G: FindCoordinator names broker %d, %s-%d is led by %d (%v)", coord, cluster.OffsetsTopic, pp, st.Leader, err)
	}
	s.fault(coord, fmt.Sprintf("SIGKILL the coordinator of group %s (leader of %s-%d)", group, cluster.OffsetsTopic, pp))
	s.c.Broker(coord).Kill()
	st := s.c.ZK.WaitPartitionState(cluster.OffsetsTopic, pp, waitLong, func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != coord, fmt.Sprintf("%s-%d led by %d, want a broker other than %d", cluster.OffsetsTopic, pp, st.Leader, coord)
	})
	moved := time.Since(s.faultAt)
	cluster.WaitFor(t, waitLong, func() (bool, string) {
		id, err := s.c.Groups.Coordinator(ctx, group)
		return err == nil && id == st.Leader, fmt.Sprintf("FindCoordinator: %d (%v), want the new leader %d", id, err, st.Leader)
	})
	var firstCommit time.Time
	cluster.WaitFor(t, waitLong, func() (bool, string) {
		n, first := j.MemberCommitsSince(s.faultAt)
		firstCommit = first
		return n >= 12, fmt.Sprintf("%d commits acknowledged since the kill", n)
	})
	resumed := firstCommit.Sub(s.faultAt)
	t.Logf("%s-%d: broker %d leads after %v; commits acknowledged again %v after the kill",
		cluster.OffsetsTopic, pp, st.Leader, moved.Round(time.Millisecond), resumed.Round(time.Millisecond))
	if limit := groupSession + 10*time.Second; resumed > limit {
		t.Errorf("G: commits resumed %v after the kill, want within the session timeout + 10 s = %v", resumed, limit)
	}

	s.c.Broker(coord).Start()
	s.c.WaitRegistered(coord)
	s.heal(fmt.Sprintf("broker %d restarted", coord))
	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 1000, waitLong, "after the old coordinator rejoined")

	g := checkGroup(s, j, group, m1, m2)
	s.extra = append(s.extra, "coordinator_moved="+fmtDur(moved), "commits_resumed="+fmtDur(resumed),
		fmt.Sprintf("group_commits=%d group_reread=%d group_violations=%d", g.CommitsSeen, g.Repeated, len(g.Violations)))
	s.finish()
}

// checkGroup ends a group row: it stops the workload, reads the log back (what the group must
// process and commit), waits until the members committed its end offsets, stops them and runs
// checker G over the journal and the final OffsetFetch; every violation fails the test.
func checkGroup(s *scenario, j *cluster.GroupJournal, group string, members ...*groupMember) cluster.GroupCheck {
	t := s.t
	t.Helper()
	s.all.finish(t)
	recs, err := readAll(s.c, s.topic, topicPartitions, time.Now().Add(readableWithin))
	if err != nil {
		t.Fatalf("U: %v", err)
	}
	log := cluster.NewProducedLog()
	for _, r := range recs {
		log.Add(r.Partition, r.Offset, r.Value)
	}
	if gaps := log.Gaps(); gaps != "" {
		t.Errorf("final read: %s", gaps)
	}
	s.c.Groups.WaitCommitted(group, s.topic, log.Ends(topicPartitions), waitLong)
	for _, m := range members {
		m.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	final, err := s.c.Groups.CommittedOffsets(ctx, group, s.topic)
	if err != nil {
		t.Fatalf("G: final OffsetFetch: %v", err)
	}
	g := j.Check(log.Values(), final)
	for _, v := range g.Violations {
		t.Errorf("G: %s", v)
	}
	t.Logf("G: %d records processed (%d re-read from the uncommitted tail), %d sessions, %d commits seen; watcher errors %v",
		g.Processed, g.Repeated, g.Sessions, g.CommitsSeen, j.WatchErrors())
	return g
}

// rollingRestarts is row 17's number of rolling restarts (docs/reliability.md, fault matrix: ×5).
const rollingRestarts = 5

// Row 17, rolling restart ×5: SIGTERM brokers 1, 2, 3 in turn (each a controlled shutdown,
// restarted and back in every ISR before the next), five times over, while two static members
// (KIP-345, group.instance.id) consume the acks=all workload and commit every 200 ms. A
// coordinator that moves hands the group over from __consumer_offsets: the members keep their
// member ids and generation (no rebalance beyond the static members' own joins at the start),
// committed offsets never go back (G), and L, D, O, M, R, E, U hold as in every row.
func TestFault17_RollingRestart(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "17-rolling-restart", groupOverrides)
	processKeepOutputs(s)
	group := "faults-17-group"
	j := cluster.NewGroupJournal()
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, s.c, group, s.topic, 100*time.Millisecond)
	defer func() { wcancel(); <-watched }()
	m1 := startGroupMember(t, s.c, j, "m1", group, s.topic, kgo.InstanceID("faults-17-m1"))
	m2 := startGroupMember(t, s.c, j, "m2", group, s.topic, kgo.InstanceID("faults-17-m2"))
	s.c.Groups.WaitStable(group, s.topic, topicPartitions, 2, waitLong)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the first restart")
	type memberGen struct {
		id  string
		gen int32
	}
	gens := func() map[string]memberGen {
		out := map[string]memberGen{}
		for name, m := range map[string]*groupMember{"m1": m1, "m2": m2} {
			id, gen := m.cl.GroupMetadata()
			out[name] = memberGen{id, gen}
		}
		return out
	}
	var before map[string]memberGen
	cluster.WaitFor(t, waitLong, func() (bool, string) {
		before = gens()
		return before["m1"].gen > 0 && before["m1"].gen == before["m2"].gen, fmt.Sprintf("members' generations %v", before)
	})
	t.Logf("static members before the restarts: %v", before)

	bounces := 0
	for round := 1; round <= rollingRestarts; round++ {
		for _, id := range s.c.IDs() {
			bounces++
			s.fault(id, fmt.Sprintf("rolling restart %d/%d: SIGTERM broker %d", round, rollingRestarts, id))
			if code := s.c.Broker(id).Terminate(); code != 0 {
				t.Errorf("broker %d exited with code %d after SIGTERM:\n%s", id, code, s.c.Broker(id).Tail(30))
			}
			s.c.Broker(id).Start()
			s.c.WaitRegistered(id)
			s.waitFullISR(waitLong)
			s.waitOffsetsISR(waitLong)
			since := time.Now()
			cluster.WaitFor(t, waitLong, func() (bool, string) {
				n, _ := j.MemberCommitsSince(since)
				return n >= 4, fmt.Sprintf("%d commits acknowledged since broker %d came back", n, id)
			})
		}
	}
	after := gens()
	t.Logf("static members after %d restarts: %v", bounces, after)
	for name, g := range before {
		if a := after[name]; a != g {
			t.Errorf("G: member %s was %+v before the rolling restarts, %+v after: a rebalance beyond the static members' own", name, g, a)
		}
	}
	s.heal(fmt.Sprintf("%d rolling restarts done", rollingRestarts))

	g := checkGroup(s, j, group, m1, m2)
	s.extra = append(s.extra, fmt.Sprintf("bounces=%d generation=%d->%d group_commits=%d group_reread=%d group_violations=%d",
		bounces, before["m1"].gen, after["m1"].gen, g.CommitsSeen, g.Repeated, len(g.Violations)))
	s.finish()
}

// waitOffsetsISR waits until every __consumer_offsets partition has a leader and its whole
// replica set in the ISR, so the next restart never takes the last in-sync copy of a group.
func (s *scenario) waitOffsetsISR(timeout time.Duration) {
	s.t.Helper()
	assign, err := s.c.ZK.TopicAssignment(cluster.OffsetsTopic)
	if err != nil {
		s.t.Fatalf("%s: %v", cluster.OffsetsTopic, err)
	}
	cluster.WaitFor(s.t, timeout, func() (bool, string) {
		for p, replicas := range assign {
			st, err := s.c.ZK.PartitionState(cluster.OffsetsTopic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader < 0 || !cluster.SameMembers(st.ISR, replicas) {
				return false, fmt.Sprintf("%s-%d: leader %d ISR %v, replicas %v", cluster.OffsetsTopic, p, st.Leader, st.ISR, replicas)
			}
		}
		return true, ""
	})
}
