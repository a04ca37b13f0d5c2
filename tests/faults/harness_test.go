package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Parameters of the fault matrix (docs/reliability.md): topic of 3 partitions, RF=3,
// min.insync.replicas=2, unclean leader election off, zookeeper.session.timeout.ms 6000,
// replica.lag.time.max.ms 10000 (so the ISR-shrink task runs every 5 s and a cut follower leaves
// the ISR within 10–15 s).
const (
	topicPartitions = 3
	replication     = 3
	minISR          = "2"
	sessionTimeout  = 6 * time.Second
	replicaLagMax   = 10 * time.Second
	// waitLong bounds a reaction to a fault: session expiry plus the controller's work, with
	// room for a loaded 2-core machine.
	waitLong = 45 * time.Second
)

// scenario is one fault scenario's cluster, topic, workload and watchers.
type scenario struct {
	t          *testing.T
	name       string
	c          *cluster.Cluster
	topic      string
	assignment map[int32][]int32
	idempotent bool

	all     *producer // acks=all: judged by L, D, O
	one     *producer // optional acks=1 producer: its loss is counted apart
	monitor *monitor
	watch   *epochWatch

	faultAt, healAt time.Time
	victim          int32
	extra           []string
	refused         []string // values of writes the broker refused (checker X)
	// mayLose: acknowledged values a row allows to be lost (power loss above every
	// replica's flushed data): judged apart from L and O, by the row itself.
	mayLose map[string]bool
}

// startScenario starts a cluster whose brokers have their own loopback addresses, creates the
// topic, waits for the full ISR and starts the watchers, the monitor consumer and the acks=all
// producer (idempotent when the broker offers InitProducerId).
func startScenario(t *testing.T, name string, overrides map[string]string) *scenario {
	t.Helper()
	return startScenarioWith(t, name, scenarioOptions{Overrides: overrides})
}

// scenarioOptions are the settings a row changes from the matrix's defaults.
type scenarioOptions struct {
	Overrides    map[string]string // broker settings over the matrix's
	Brokers      int               // 3 when 0
	TopicConfigs map[string]string // over min.insync.replicas=2
	Assignment   map[int32][]int32 // the topic's replicas; the controller's choice when nil
	// BeforeTopic runs once the brokers are up, before the topic is created (a row that
	// moves a broker's log dir onto another file system).
	BeforeTopic func(c *cluster.Cluster)
	// NoMonitor starts no consumer during the run: rows whose faults may legitimately move
	// the HW back (power loss) judge what survives at the end instead (checker M is skipped).
	NoMonitor bool
}

func startScenarioWith(t *testing.T, name string, opts scenarioOptions) *scenario {
	t.Helper()
	o := map[string]string{
		"replica.lag.time.max.ms":        strconv.FormatInt(replicaLagMax.Milliseconds(), 10),
		"unclean.leader.election.enable": "false",
		// Leadership moves only because of the fault, never by a rebalance mid-check.
		"auto.leader.rebalance.enable": "false",
	}
	for k, v := range opts.Overrides {
		o[k] = v
	}
	brokers := opts.Brokers
	if brokers == 0 {
		brokers = 3
	}
	c := cluster.Start(t, cluster.Options{Brokers: brokers, SessionTimeout: sessionTimeout, OwnAddresses: true, Overrides: o})
	s := &scenario{t: t, name: name, c: c, topic: "faults-" + name, victim: -1}
	tc := map[string]string{"min.insync.replicas": minISR}
	for k, v := range opts.TopicConfigs {
		tc[k] = v
	}
	if opts.BeforeTopic != nil {
		opts.BeforeTopic(c)
	}
	if opts.Assignment != nil {
		s.assignment = c.CreateTopicWithAssignment(s.topic, opts.Assignment, tc)
	} else {
		s.assignment = c.CreateTopicWithConfigs(s.topic, topicPartitions, replication, tc)
	}
	s.waitFullISR(waitLong)
	s.idempotent = idempotenceOffered(t, c)
	s.watch = startEpochWatch(c.ZK.Conn(), s.topic, topicPartitions)
	if !opts.NoMonitor {
		s.monitor = startMonitor(c, s.topic, topicPartitions)
	}
	s.all = startProducer(t, c, name, "all", s.topic, topicPartitions, true, s.idempotent)
	t.Logf("scenario %s: topic %s assignment %v; acks=all producer idempotent=%v; brokers at %v",
		name, s.topic, s.assignment, s.idempotent, c.BootstrapAddrs())
	return s
}

// waitFullISR waits until every partition's ISR (state znode) holds all its replicas and has a
// leader.
func (s *scenario) waitFullISR(timeout time.Duration) {
	s.t.Helper()
	cluster.WaitFor(s.t, timeout, func() (bool, string) {
		for p, replicas := range s.assignment {
			st, err := s.c.ZK.PartitionState(s.topic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader < 0 || !cluster.SameMembers(st.ISR, replicas) {
				return false, fmt.Sprintf("%s-%d: leader %d ISR %v, replicas %v", s.topic, p, st.Leader, st.ISR, replicas)
			}
		}
		return true, ""
	})
}

// leader returns the current leader of partition p from its state znode.
func (s *scenario) leader(p int32) int32 {
	s.t.Helper()
	st, err := s.c.ZK.PartitionState(s.topic, p)
	if err != nil {
		s.t.Fatal(err)
	}
	return st.Leader
}

// partitionNotLedBy returns a partition whose leader is not broker id (partition 0 when all are).
func (s *scenario) partitionNotLedBy(id int32) int32 {
	for p := int32(0); p < topicPartitions; p++ {
		if s.leader(p) != id {
			return p
		}
	}
	return 0
}

// fault records the moment of the fault and the broker it hits.
func (s *scenario) fault(victim int32, what string) {
	s.victim, s.faultAt = victim, time.Now()
	s.t.Logf("fault at %s: %s (broker %d)", s.faultAt.Format("15:04:05.000"), what, victim)
}

// heal records the moment the fault ended and checks U: a fresh client reads every partition
// from the start up to its end offset within 60 s of it.
func (s *scenario) heal(what string) {
	s.t.Helper()
	s.healAt = time.Now()
	s.t.Logf("healed at %s: %s", s.healAt.Format("15:04:05.000"), what)
	recs, err := readAll(s.c, s.topic, topicPartitions, s.healAt.Add(readableWithin))
	took := time.Since(s.healAt)
	if err != nil {
		s.t.Errorf("U: not everything readable within %v of healing: %v", readableWithin, err)
		s.extra = append(s.extra, "readable=FAILED")
		return
	}
	s.t.Logf("U: %d records readable %v after healing", len(recs), took.Round(time.Millisecond))
	s.extra = append(s.extra, "readable="+fmtDur(took))
}

// finish stops the workload and runs every checker; it prints the scenario's one-line result
// and fails the test on loss, divergence, duplicates of an idempotent producer, offsets going
// back or skipped during consumption, and epochs going back.
func (s *scenario) finish() result {
	t := s.t
	t.Helper()
	acks := s.all.finish(t)
	var oneAcks []ack
	if s.one != nil {
		oneAcks = s.one.finish(t)
	}
	divergentReplicas := checkReplicas(t, s.c, s.topic, s.assignment, waitLong)
	// The writes have stopped: the consumer that ran through the fault must reach the end.
	// Leadership may still be settling after the heal (NOT_LEADER_FOR_PARTITION while brokers
	// re-register): ask again until the answer is whole, within the U bound.
	var ends map[int32]int64
	var err error
	cluster.Poll(readableWithin, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err = s.c.EndOffsets(ctx, s.topic)
		return err == nil, fmt.Sprint(err)
	})
	var during []readRec
	var backward, skipped []string
	switch {
	case err != nil:
		t.Errorf("end offsets: %v", err)
	case s.monitor == nil:
	default:
		if why := s.monitor.waitCaughtUp(ends, readableWithin); why != "" {
			t.Errorf("M: the consumer running through the fault did not catch up within %v: %s", readableWithin, why)
			s.extra = append(s.extra, "consumer_stalled=true")
		}
	}
	if s.monitor != nil {
		during, backward, skipped = s.monitor.finish()
	}
	final, err := readAll(s.c, s.topic, topicPartitions, time.Now().Add(readableWithin))
	if err != nil {
		t.Errorf("U: final read: %v", err)
	}
	epochBad := s.watch.finish()

	if s.mayLose != nil {
		kept := acks[:0:0]
		for _, a := range acks {
			if !s.mayLose[a.Value] {
				kept = append(kept, a)
			}
		}
		acks = kept
	}
	a := analyse(s.all.prefix, acks, final, during, true)
	var seqBad []string
	if s.idempotent {
		seqBad = sequenceViolations(s.all.prefix, final)
	}
	refBad := refusedPresent(s.refused, final)
	res := result{
		Scenario: s.name, Acked: a.Acked, Lost: a.Lost, Duplicates: a.Duplicates,
		Divergent: a.Conflicts + divergentReplicas, NewLeader: -1, Unavailable: longestGap(acks),
	}
	if !s.faultAt.IsZero() && s.victim >= 0 {
		res.NewLeader = s.watch.newLeaderAfter(s.victim, s.faultAt)
	}
	for _, e := range a.Examples {
		t.Log(e)
	}
	if s.one != nil {
		b := analyse(s.one.prefix, oneAcks, final, nil, false)
		for _, e := range b.Examples {
			t.Log("acks=1 producer: " + e)
		}
		res.Extra = append(res.Extra, fmt.Sprintf("acks1_acked=%d acks1_lost=%d acks1_duplicates=%d", b.Acked, b.Lost, b.Duplicates))
	}
	res.Extra = append(res.Extra, s.extra...)
	if !s.idempotent {
		res.Extra = append(res.Extra, "idempotent=false")
	}
	if len(seqBad) > 0 || len(refBad) > 0 {
		res.Extra = append(res.Extra, fmt.Sprintf("out_of_sequence=%d refused_present=%d", len(seqBad), len(refBad)))
	}
	if len(backward) > 0 || len(skipped) > 0 {
		res.Extra = append(res.Extra, fmt.Sprintf("nonmonotonic=%d skipped=%d", len(backward), len(skipped)))
	}
	line := res.Line()
	fmt.Println(line)
	t.Log(line)
	t.Logf("checked %d acknowledged records against %d records read at the end and %d read during the run", len(acks), len(final), len(during))

	if res.Lost > 0 {
		t.Errorf("L: %d of %d acknowledged (acks=all) records lost", res.Lost, res.Acked)
	}
	if a.Conflicts > 0 {
		t.Errorf("O: %d offsets hold two values", a.Conflicts)
	}
	if res.Duplicates > 0 {
		if s.idempotent {
			t.Errorf("D: %d duplicates from an idempotent producer", res.Duplicates)
		} else {
			t.Logf("D: %d duplicates (producer not idempotent: reported, not failed)", res.Duplicates)
		}
	}
	if len(backward) > 0 {
		t.Errorf("M: the consumer's offsets went back %d times: %v", len(backward), first(backward, 5))
	}
	if len(skipped) > 0 {
		t.Errorf("M: the consumer skipped offsets %d times: %v", len(skipped), first(skipped, 5))
	}
	for _, e := range epochBad {
		t.Errorf("E: %s", e)
	}
	if len(seqBad) > 0 {
		t.Errorf("S: %d records out of their producer's sequence order: %v", len(seqBad), first(seqBad, 5))
	}
	if len(refBad) > 0 {
		t.Errorf("X: %d refused writes are in the log: %v", len(refBad), first(refBad, 5))
	}
	return res
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// idempotenceOffered reports whether the brokers advertise InitProducerId (API key 22), which
// kgo's default idempotent producer needs. ISRBROKER_FAULTS_IDEMPOTENT=0 or 1 forces the answer.
func idempotenceOffered(t *testing.T, c *cluster.Cluster) bool {
	t.Helper()
	switch os.Getenv("ISRBROKER_FAULTS_IDEMPOTENT") {
	case "0":
		return false
	case "1":
		return true
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 22 {
			return true
		}
	}
	return false
}

// rssBytes reads a process's resident set size (VmRSS) from /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

// firewall inserts iptables DROP rules on the loopback interface, each tagged with
// `-m comment --comment isrbroker-faults-<pid>`, and removes every one it inserted in
// t.Cleanup (and on Heal). Only loopback addresses may be targeted.
type firewall struct {
	t   testing.TB
	tag string

	mu    sync.Mutex
	rules [][]string // rule specs as inserted, without -I/-D INPUT
}

// firewallTag is the comment every rule of this test process carries.
func firewallTag() string { return "isrbroker-faults-" + strconv.Itoa(os.Getpid()) }

// requireFirewall returns a firewall, or skips the test when iptables cannot be used (not root
// or no iptables binary); with CI set that is a failure instead.
func requireFirewall(t testing.TB) *firewall {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := exec.LookPath("iptables"); err != nil {
		why = "no iptables"
	}
	if why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("iptables-based fault scenario: %s (CI is set)", why)
		}
		t.Skipf("iptables-based fault scenario skipped: %s", why)
	}
	sweepStaleRules(t)
	f := &firewall{t: t, tag: firewallTag()}
	t.Cleanup(f.Heal)
	return f
}

// Drop drops packets on lo from src to dst (to TCP port dport only when dport > 0).
func (f *firewall) Drop(src, dst string, dport int) {
	f.t.Helper()
	for _, a := range []string{src, dst} {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			f.t.Fatalf("firewall: %q is not a loopback address", a)
		}
	}
	rule := []string{"-i", "lo", "-s", src, "-d", dst}
	if dport > 0 {
		rule = append(rule, "-p", "tcp", "--dport", strconv.Itoa(dport))
	}
	rule = append(rule, "-m", "comment", "--comment", f.tag, "-j", "DROP")
	f.mu.Lock()
	defer f.mu.Unlock()
	if out, err := iptables(append([]string{"-I", "INPUT"}, rule...)...); err != nil {
		f.t.Fatalf("iptables -I INPUT %s: %v: %s", strings.Join(rule, " "), err, out)
	}
	f.rules = append(f.rules, rule)
}

// Cut drops traffic both ways between a and b.
func (f *firewall) Cut(a, b string) {
	f.t.Helper()
	f.Drop(a, b, 0)
	f.Drop(b, a, 0)
}

// Heal removes every rule this firewall inserted.
func (f *firewall) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.rules) - 1; i >= 0; i-- {
		if out, err := iptables(append([]string{"-D", "INPUT"}, f.rules[i]...)...); err != nil {
			f.t.Errorf("iptables -D INPUT %s: %v: %s", strings.Join(f.rules[i], " "), err, out)
		}
	}
	f.rules = nil
}

// Rules lists the INPUT rules that carry this process's tag (iptables -S).
func (f *firewall) Rules() ([]string, error) {
	out, err := iptables("-S", "INPUT")
	if err != nil {
		return nil, fmt.Errorf("iptables -S INPUT: %v: %s", err, out)
	}
	var rules []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, f.tag+" ") || strings.HasSuffix(line, f.tag) {
			rules = append(rules, line)
		}
	}
	return rules, nil
}

// sweepStaleRules deletes rules left by an earlier test process that died before its cleanup
// (its pid no longer exists); rules of live processes are left alone.
func sweepStaleRules(t testing.TB) {
	out, err := iptables("-S", "INPUT")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, "isrbroker-faults-")
		if !strings.HasPrefix(line, "-A INPUT ") || i < 0 {
			continue
		}
		pidText := strings.TrimRight(strings.Fields(line[i+len("isrbroker-faults-"):])[0], `"`)
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		spec := strings.Fields(strings.TrimPrefix(line, "-A INPUT "))
		if out, err := iptables(append([]string{"-D", "INPUT"}, spec...)...); err != nil {
			t.Logf("firewall: removing stale rule %q: %v: %s", line, err, out)
		} else {
			t.Logf("firewall: removed stale rule %q", line)
		}
	}
}

func iptables(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// -w waits for the xtables lock instead of failing when another iptables runs.
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	return string(out), err
}

// registration returns the czxid of broker id's /brokers/ids znode: a different one later means
// the broker's session ended and it registered again.
func (s *scenario) registration(id int32) int64 {
	s.t.Helper()
	_, st, err := s.c.ZK.Get("/brokers/ids/" + cluster.Itoa32(id))
	if err != nil {
		s.t.Fatal(err)
	}
	return st.Czxid
}

// waitReregistered waits until broker id holds a registration other than the one with czxid:
// its old ZooKeeper session expired and it registered again.
func (s *scenario) waitReregistered(id int32, czxid int64) {
	s.t.Helper()
	cluster.WaitFor(s.t, waitLong, func() (bool, string) {
		_, reg, err := s.c.ZK.Get("/brokers/ids/" + cluster.Itoa32(id))
		if err != nil {
			return false, fmt.Sprintf("broker %d not re-registered: %v", id, err)
		}
		return reg.Czxid != czxid, fmt.Sprintf("broker %d still has its old registration (its session did not expire)", id)
	})
}
