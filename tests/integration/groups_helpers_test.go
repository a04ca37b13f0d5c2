package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Shared helpers of the consumer-group tests (groups_test.go): a cluster with small group
// settings, a record of what was produced, franz-go and kcat group members that write what
// they process and commit into a cluster.GroupJournal.

// offsetsPartitions is offsets.topic.num.partitions in the group tests: small, so that
// __consumer_offsets is created and loaded fast.
const offsetsPartitions = 6

// groupOverrides are the broker settings of the group tests: __consumer_offsets with 6
// partitions and RF 3, a short initial rebalance delay, and a 1 s minimum session timeout so
// members may use short sessions.
func groupOverrides(extra map[string]string) map[string]string {
	o := map[string]string{
		"offsets.topic.num.partitions":     fmt.Sprint(offsetsPartitions),
		"offsets.topic.replication.factor": "3",
		"group.initial.rebalance.delay.ms": "100",
		"group.min.session.timeout.ms":     "1000",
		"auto.leader.rebalance.enable":     "false",
		"unclean.leader.election.enable":   "false",
		"offsets.commit.timeout.ms":        "5000",
		"offsets.retention.minutes":        "1440",
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// startGroupCluster starts three brokers with groupOverrides(extra).
func startGroupCluster(t *testing.T, extra map[string]string) *cluster.Cluster {
	t.Helper()
	return cluster.Start(t, cluster.Options{Brokers: 3, Overrides: groupOverrides(extra)})
}

// produced wraps cluster.ProducedLog with test-failing helpers.
type produced struct{ *cluster.ProducedLog }

func newProduced() *produced { return &produced{cluster.NewProducedLog()} }

// produceRoundRobin writes n records "<prefix>-<i>" round-robin over the partitions with
// acks=all; the topic must hold only what this log recorded, so the offsets stay dense.
func (pr *produced) produceRoundRobin(t *testing.T, c *cluster.Cluster, topic string, partitions int32, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.ProduceRoundRobin(ctx, topic, partitions, prefix, 0, n, pr.ProducedLog); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
	if gaps := pr.Gaps(); gaps != "" {
		t.Fatal(gaps)
	}
}

// addAcked records what an ackProducer had acknowledged.
func (pr *produced) addAcked(t *testing.T, acks []acked) {
	t.Helper()
	for _, a := range acks {
		pr.Add(a.Partition, a.Offset, string(a.Value))
	}
	if gaps := pr.Gaps(); gaps != "" {
		t.Fatal(gaps)
	}
}

func (pr *produced) ends(partitions int32) map[int32]int64 { return pr.Ends(partitions) }

func (pr *produced) snapshot() map[int32][]string { return pr.Values() }

// startCommittingPair is the start of the coordinator-failure tests: three brokers with
// session as zookeeper.session.timeout.ms, topic with partitions written by an acknowledging
// producer, and franz-go members m1 and m2 of group (that session timeout, heartbeats every
// 500 ms) journaling into j, which a watcher reads with OffsetFetch every 100 ms until the test
// ends. It returns once the group is Stable and the members have committed 20 times.
func startCommittingPair(t *testing.T, session time.Duration, topic, group string, partitions int32, what string) (*cluster.Cluster, *cluster.GroupJournal, *ackProducer, *kgoMember, *kgoMember) {
	t.Helper()
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: session, Overrides: groupOverrides(nil)})
	c.CreateTopic(topic, partitions, 3)
	j := cluster.NewGroupJournal()
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, c, group, topic, 100*time.Millisecond)
	t.Cleanup(func() { wcancel(); <-watched })
	p := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic,
		ackProducerOptions{every: 5 * time.Millisecond, perTick: 5, partitions: partitions})
	opts := []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(500 * time.Millisecond), kgo.MetadataMinAge(250 * time.Millisecond)}
	m1 := startKgoMember(t, c, j, "m1", group, topic, opts...)
	m2 := startKgoMember(t, c, j, "m2", group, topic, opts...)
	c.Groups.WaitStable(group, topic, partitions, 2, 60*time.Second)
	waitMemberCommits(t, j, time.Now(), 20, 60*time.Second, what)
	return c, j, p, m1, m2
}

// drainCommits ends a run of a group under an acknowledging producer: it stops p, waits until
// group has committed the end of every partition that p had acknowledged, stops the members
// (stopMembers) and returns what p acknowledged with the final commits (OffsetFetch), for
// checkJournal.
func drainCommits(t *testing.T, c *cluster.Cluster, p *ackProducer, group, topic string, partitions int32, stopMembers func()) (*produced, map[int32]int64) {
	t.Helper()
	acks, _ := p.stop(t)
	pr := newProduced()
	pr.addAcked(t, acks)
	c.Groups.WaitCommitted(group, topic, pr.ends(partitions), 60*time.Second)
	stopMembers()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	final, err := c.Groups.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatalf("final OffsetFetch: %v", err)
	}
	return pr, final
}

// checkJournal runs the journal's checks and fails the test on any finding.
func checkJournal(t *testing.T, j *cluster.GroupJournal, pr *produced, final map[int32]int64) cluster.GroupCheck {
	t.Helper()
	res := j.Check(pr.snapshot(), final)
	t.Logf("journal: %d records processed (%d repeats of the uncommitted tail), %d sessions, %d commits seen; watcher errors %v",
		res.Processed, res.Repeated, res.Sessions, res.CommitsSeen, j.WatchErrors())
	for _, v := range res.Violations {
		t.Error(v)
	}
	return res
}

// kgoMember is one franz-go group consumer processing records into a journal: autocommit every
// 200 ms, every acknowledged commit (autocommits and the commit on revoke) journaled.
type kgoMember struct {
	name string
	cl   *kgo.Client

	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	assigned  []map[string][]int32 // every OnPartitionsAssigned, in order
	lost      []map[string][]int32
	groupErrs []error // ErrGroupSession errors from PollFetches
}

// startKgoMember starts a group member named name in group on topic; opts are added (a
// balancer, InstanceID, session timeout...). kgo's default revoke commits what was polled
// (through the AutoCommitCallback, so it is journaled too). It is stopped by stop (which
// closes the client: commit on revoke, then LeaveGroup unless static) or at cleanup.
func startKgoMember(t *testing.T, c *cluster.Cluster, j *cluster.GroupJournal, name, group, topic string, opts ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{name: name, done: make(chan struct{})}
	all := []kgo.Opt{
		kgo.SeedBrokers(c.BootstrapAddrs()...),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil || j == nil {
				return
			}
			journalCommits(j, name, req, resp)
		}),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			m.assigned = append(m.assigned, a)
			m.mu.Unlock()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			m.lost = append(m.lost, l)
			m.mu.Unlock()
		}),
	}
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		t.Fatalf("%s: kgo client: %v", name, err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			at := time.Now()
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(topic string, p int32, err error) {
				if errors.Is(err, context.Canceled) {
					return
				}
				var gs *kgo.ErrGroupSession
				if errors.As(err, &gs) {
					m.mu.Lock()
					m.groupErrs = append(m.groupErrs, err)
					m.mu.Unlock()
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if j != nil {
					j.Processed(name, r.Partition, r.Offset, r.Value, at)
				}
			})
		}
	}()
	t.Cleanup(func() { m.stop() })
	return m
}

// journalCommits journals every partition of an OffsetCommit the coordinator accepted.
func journalCommits(j *cluster.GroupJournal, member string, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) {
	want := map[string]map[int32]int64{}
	for _, rt := range req.Topics {
		want[rt.Topic] = map[int32]int64{}
		for _, rp := range rt.Partitions {
			want[rt.Topic][rp.Partition] = rp.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if off, ok := want[t.Topic][p.Partition]; ok && p.ErrorCode == 0 {
				j.Committed(member, p.Partition, off)
			}
		}
	}
}

// stop ends the poll loop and closes the client (kgo commits on revoke and leaves the group;
// a static member does not leave). Idempotent.
func (m *kgoMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// events returns copies of the callbacks and group errors seen so far.
func (m *kgoMember) events() (assigned, lost []map[string][]int32, groupErrs []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(assigned, m.assigned...), append(lost, m.lost...), append(groupErrs, m.groupErrs...)
}

// kcatMember is one `kcat -G` process (librdkafka's balanced consumer) printing
// "partition offset key value" per record.
type kcatMember struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu             sync.Mutex
	stdout, stderr bytes.Buffer
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startKcatMember starts `kcat -G group topic` reading from the earliest offset when the group
// has no commit, committing every 200 ms; extra are more kcat arguments (-X ...).
func startKcatMember(t *testing.T, c *cluster.Cluster, group, topic string, extra ...string) *kcatMember {
	t.Helper()
	args := []string{"-b", strings.Join(c.BootstrapAddrs(), ","), "-G", group,
		"-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=200",
		"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
		"-u", "-f", "%p %o %k %s\n"} // -u: unbuffered, each record printed as consumed
	args = append(append(args, extra...), topic)
	m := &kcatMember{done: make(chan struct{})}
	m.cmd = exec.Command(kcatPath(t), args...)
	m.cmd.Stdout = lockedWriter{&m.mu, &m.stdout}
	m.cmd.Stderr = lockedWriter{&m.mu, &m.stderr}
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		select {
		case <-m.done:
		default:
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
		if t.Failed() {
			t.Logf("kcat -G stderr:\n%s", m.errText())
		}
	})
	return m
}

// lines parses what the member has printed so far.
func (m *kcatMember) lines(t *testing.T) []kcatLine {
	t.Helper()
	m.mu.Lock()
	out := m.stdout.String()
	m.mu.Unlock()
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i+1] // only whole lines
	} else {
		out = ""
	}
	return parseKcatLines(t, out)
}

func (m *kcatMember) errText() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stderr.String()
}

// terminate sends SIGTERM (librdkafka's consumer close: final commit, LeaveGroup) and waits
// for the exit.
func (m *kcatMember) terminate(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("kcat -G did not exit within 30 s of SIGTERM; stderr:\n%s", m.errText())
	}
}

// freeze stops the kcat process (SIGSTOP): it neither heartbeats nor commits until thaw.
func (m *kcatMember) freeze(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(m.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP kcat: %v", err)
	}
}

// thaw resumes a frozen kcat process (SIGCONT).
func (m *kcatMember) thaw(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(m.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT kcat: %v", err)
	}
}

// partitionSet returns the distinct partitions of lines.
func partitionSet(lines []kcatLine) map[int32]bool {
	s := map[int32]bool{}
	for _, l := range lines {
		s[l.Partition] = true
	}
	return s
}

// waitMemberCommits waits until n commits were acknowledged to members after from and returns
// the earliest acknowledgement time among them.
func waitMemberCommits(t *testing.T, j *cluster.GroupJournal, from time.Time, n int, timeout time.Duration, what string) time.Time {
	t.Helper()
	var first time.Time
	cluster.WaitFor(t, timeout, func() (bool, string) {
		got, f := j.MemberCommitsSince(from)
		first = f
		return got >= n, fmt.Sprintf("%s: %d commits acknowledged to members, want %d", what, got, n)
	})
	return first
}
