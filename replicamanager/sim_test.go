package replicamanager

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/logstore"
)

// TestScenarios runs the replication scenario scripts in testdata/ (cockroachdb/datadriven, as
// etcd raft's interaction tests): a small cluster of real ReplicaManagers over temp-dir logs,
// with a fake clock, a fake ZooKeeper partition-state store and a follower fetch loop stepped
// one command at a time through the fetcher's own planners (fetcher.PlanTruncation,
// PlanOutOfRangeLatest/Earliest). Run with -rewrite to refresh the expected output.
//
// Commands (one partition, t-0):
//
//	replicas 1,2,3 [min-isr=N] [lag=10s]     create the brokers and the topic's assignment
//	leader-and-isr leader=L epoch=E isr=a,b [replicas=..] [to=..] [live=..] [no-zk]
//	                                         the controller writes the state to ZooKeeper
//	                                         (zkVersion+1, unless no-zk) and sends LeaderAndIsr
//	                                         to the live replicas (to=) naming live brokers (live=)
//	produce [count=1] [records=1] [acks=1] [to=L] [timeout=30s]
//	fetch follower=F [times=1] [max-bytes=N] one step of F's fetcher (a truncation round or a fetch)
//	delete-records offset=N [broker=L]       raise the leader's log start offset (DeleteRecords)
//	replicate [rounds=6]                     step every live follower, rounds times
//	tick 11s                                 advance the clock
//	shrink-isr [broker=L]                    run the leader's ISR-shrink task once (S10)
//	crash B [keep=N]                         stop B (HW checkpointed, the log cut to N: lost page cache)
//	restart B                                reopen B's logs; it waits for a LeaderAndIsr
//	zk fail=unknown-committed|unknown-lost|error [read-fail=N]
//	consume [offset=0] [replica=-1] [broker=L] a consumer's (or any replica id's) fetch
//	offset-for-epoch epoch=E [broker=L]      OffsetForLeaderEpoch as the leader answers it
//	state                                    ZooKeeper's state, then LEO/HW/ISR/epoch cache per replica
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := newSim(t)
		defer s.close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.run(t, d)
			if err != nil {
				out += "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

var simTP = TopicPartition{Topic: "t", Partition: 0}

// simZK is the fake ZooKeeper partition-state store: the controller writes it, the leader's
// ISR writes are a compare-and-set on its version (zkcoord.UpdateLeaderAndIsr's contract,
// including "the stored state equals ours → success" after a lost answer).
type simZK struct {
	mu                                   sync.Mutex
	exists                               bool
	leader, leaderEpoch, controllerEpoch int32
	isr                                  []int32
	version                              int32
	faults                               []string
	readFails                            int
	events                               *[]string
}

// simOutcomeUnknown is what the store answers when it gives up without knowing whether the
// write committed (zkcoord's retry deadline passed on a lost connection).
type simOutcomeUnknown struct{}

func (simOutcomeUnknown) Error() string        { return "sim zk: connection lost, outcome unknown" }
func (simOutcomeUnknown) OutcomeUnknown() bool { return true }

var errSimBadVersion = errors.New("sim zk: BADVERSION")

func (z *simZK) UpdateLeaderAndIsr(topic string, partition int32, leader, leaderEpoch int32, isr []int32, controllerEpoch int32, zkVersion int32) (int32, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	fault := ""
	if len(z.faults) > 0 {
		fault, z.faults = z.faults[0], z.faults[1:]
	}
	if fault == "error" {
		*z.events = append(*z.events, fmt.Sprintf("zk: ISR write %v by %d fails", isr, leader))
		return 0, errors.New("sim zk: write refused")
	}
	if zkVersion != z.version {
		if z.leader == leader && z.leaderEpoch == leaderEpoch && z.controllerEpoch == controllerEpoch && slices.Equal(z.isr, isr) {
			return z.version, nil
		}
		*z.events = append(*z.events, fmt.Sprintf("zk: ISR write %v by %d at zkVersion %d: BADVERSION (stored %d)", isr, leader, zkVersion, z.version))
		return 0, errSimBadVersion
	}
	if fault == "unknown-lost" {
		*z.events = append(*z.events, fmt.Sprintf("zk: ISR write %v by %d lost, outcome unknown to the leader", isr, leader))
		return 0, simOutcomeUnknown{}
	}
	z.isr = slices.Clone(isr)
	z.version++
	if fault == "unknown-committed" {
		*z.events = append(*z.events, fmt.Sprintf("zk: ISR write %v by %d committed at zkVersion %d, outcome unknown to the leader", isr, leader, z.version))
		return 0, simOutcomeUnknown{}
	}
	*z.events = append(*z.events, fmt.Sprintf("zk: ISR write %v by %d committed at zkVersion %d", isr, leader, z.version))
	return z.version, nil
}

func (z *simZK) TopicConfig(string) (map[string]string, error) { return nil, nil }

// ReadLeaderAndIsr reads the partition state znode (IsrWriter).
func (z *simZK) ReadLeaderAndIsr(topic string, partition int32) (int32, int32, []int32, int32, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.readFails > 0 {
		z.readFails--
		*z.events = append(*z.events, "zk: partition state read fails")
		return 0, 0, nil, 0, errors.New("sim zk: read failed")
	}
	*z.events = append(*z.events, fmt.Sprintf("zk: partition state read: leader %d epoch %d isr %v zkVersion %d", z.leader, z.leaderEpoch, z.isr, z.version))
	return z.leader, z.leaderEpoch, slices.Clone(z.isr), z.version, nil
}

// simFetchState is one follower's fetch state for t-0 (the fetcher thread's partitionState).
type simFetchState struct {
	leader      int32
	epoch       int32
	fetchOffset int64
	truncating  bool
}

// simFetchers stands for the fetcher manager: it records the replica manager's add/remove
// calls; the sim steps the fetch loop itself.
type simFetchers struct {
	mu sync.Mutex
	st map[TopicPartition]*simFetchState
}

func (f *simFetchers) AddFetcherForPartitions(m map[TopicPartition]fetcher.InitialFetchState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tp, init := range m {
		if s, ok := f.st[tp]; ok && s.epoch == init.CurrentLeaderEpoch && s.leader == init.Leader.ID {
			continue // S16: same epoch keeps its state
		}
		f.st[tp] = &simFetchState{leader: init.Leader.ID, epoch: init.CurrentLeaderEpoch, fetchOffset: init.InitOffset, truncating: true}
	}
}

func (f *simFetchers) RemoveFetcherForPartitions(tps []TopicPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range tps {
		delete(f.st, tp)
	}
}

func (f *simFetchers) ShutdownIdleFetcherThreads() {}
func (f *simFetchers) Close()                      {}

func (f *simFetchers) get(tp TopicPartition) *simFetchState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st[tp]
}

type simBroker struct {
	id      int32
	dir     string
	logs    *logstore.Manager
	rm      *ReplicaManager
	fetch   *simFetchers
	crashed bool
}

type sim struct {
	t        *testing.T
	now      time.Time
	lag      time.Duration
	minIsr   int
	replicas []int32
	brokers  map[int32]*simBroker
	zk       *simZK
	events   []string
	produces int
	lg       *logrus.Logger
	verbose  bool  // fetch (not replicate) reports empty fetches too
	maxBytes int32 // a follower fetch's partition_max_bytes (one batch at least, KIP-74)
}

func newSim(t *testing.T) *sim {
	lg := logrus.New()
	lg.SetLevel(logrus.PanicLevel)
	s := &sim{t: t, now: time.Unix(1_700_000_000, 0), lag: 10 * time.Second, minIsr: 1, brokers: map[int32]*simBroker{}, lg: lg, maxBytes: 1 << 20}
	s.zk = &simZK{leader: -1, leaderEpoch: -1, events: &s.events}
	return s
}

func (s *sim) clock() time.Time { return s.now }

func (s *sim) close() {
	for _, b := range s.brokers {
		if !b.crashed {
			_ = b.logs.Close()
		}
	}
}

func (s *sim) startBroker(b *simBroker) error {
	logs, err := logstore.Open([]string{b.dir}, b.id, logstore.DefaultConfig(), s.lg)
	if err != nil {
		return err
	}
	b.logs = logs
	b.fetch = &simFetchers{st: map[TopicPartition]*simFetchState{}}
	b.rm = newReplicaManager(Config{
		BrokerID:          b.id,
		ReplicaLagTimeMax: s.lag,
		MinInsyncReplicas: s.minIsr,
		LogDefaults:       logstore.DefaultConfig(),
		Registry:          metrics.NewRegistry(),
		Log:               s.lg,
		Now:               s.clock,
	}, logs, s.zk, b.fetch)
	b.crashed = false
	return nil
}

func parseIDs(v string) []int32 {
	if v == "" || v == "-" {
		return []int32{}
	}
	var out []int32
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			panic(fmt.Sprintf("bad broker list %q", v))
		}
		out = append(out, int32(n))
	}
	return out
}

func fmtIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

func argStr(d *datadriven.TestData, key, def string) string {
	if a, ok := d.Arg(key); ok && len(a.Vals) > 0 {
		return a.Vals[0]
	}
	return def
}

func argInt(d *datadriven.TestData, key string, def int64) int64 {
	v := argStr(d, key, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("bad %s=%q", key, v))
	}
	return n
}

func argDur(d *datadriven.TestData, key string, def time.Duration) time.Duration {
	v := argStr(d, key, "")
	if v == "" {
		return def
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		panic(fmt.Sprintf("bad %s=%q", key, v))
	}
	return dur
}

// firstPositional returns the first argument given without a value ("crash 2").
func firstPositional(d *datadriven.TestData) int32 {
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			if n, err := strconv.Atoi(a.Key); err == nil {
				return int32(n)
			}
		}
	}
	panic("missing broker id")
}

func (s *sim) live() []int32 {
	var out []int32
	for _, id := range s.replicas {
		if !s.brokers[id].crashed {
			out = append(out, id)
		}
	}
	return out
}

func (s *sim) broker(id int32) (*simBroker, error) {
	b := s.brokers[id]
	if b == nil {
		return nil, fmt.Errorf("no broker %d", id)
	}
	if b.crashed {
		return nil, fmt.Errorf("broker %d is down", id)
	}
	return b, nil
}

func (s *sim) run(t *testing.T, d *datadriven.TestData) (string, error) {
	s.events = nil
	var b strings.Builder
	err := s.dispatch(t, d, &b)
	for _, e := range s.events {
		b.WriteString(e + "\n")
	}
	s.events = nil
	return b.String(), err
}

func (s *sim) dispatch(t *testing.T, d *datadriven.TestData, out *strings.Builder) error {
	switch d.Cmd {
	case "replicas":
		for _, a := range d.CmdArgs {
			if len(a.Vals) == 0 {
				s.replicas = parseIDs(a.Key)
			}
		}
		s.minIsr = int(argInt(d, "min-isr", 1))
		s.lag = argDur(d, "lag", 10*time.Second)
		for _, id := range s.replicas {
			br := &simBroker{id: id, dir: t.TempDir()}
			if err := s.startBroker(br); err != nil {
				return err
			}
			s.brokers[id] = br
		}
		return nil
	case "leader-and-isr":
		return s.leaderAndIsr(d, out)
	case "produce":
		return s.produce(d, out)
	case "fetch":
		f := int32(argInt(d, "follower", -1))
		s.verbose = true
		s.maxBytes = int32(argInt(d, "max-bytes", 1<<20))
		defer func() { s.verbose, s.maxBytes = false, 1<<20 }()
		for i := int64(0); i < argInt(d, "times", 1); i++ {
			if _, err := s.step(f, out); err != nil {
				return err
			}
		}
		return nil
	case "replicate":
		rounds := argInt(d, "rounds", 6)
		for i := int64(0); i < rounds; i++ {
			for _, id := range s.live() {
				if s.brokers[id].fetch.get(simTP) == nil {
					continue
				}
				if _, err := s.step(id, out); err != nil {
					return err
				}
			}
		}
		return nil
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			return err
		}
		s.now = s.now.Add(dur)
		return nil
	case "shrink-isr":
		id := int32(argInt(d, "broker", int64(s.zk.leader)))
		br, err := s.broker(id)
		if err != nil {
			return err
		}
		br.rm.tasks.maybeShrinkIsr()
		return nil
	case "crash":
		return s.crash(firstPositional(d), argInt(d, "keep", -1))
	case "delete-records":
		br, err := s.broker(int32(argInt(d, "broker", int64(s.zk.leader))))
		if err != nil {
			return err
		}
		br.logs.Get(simTP).MaybeIncrementLogStartOffset(argInt(d, "offset", 0))
		return nil
	case "restart":
		br := s.brokers[firstPositional(d)]
		if !br.crashed {
			return fmt.Errorf("broker %d is up", br.id)
		}
		return s.startBroker(br)
	case "zk":
		s.zk.mu.Lock()
		defer s.zk.mu.Unlock()
		if f := argStr(d, "fail", ""); f != "" {
			s.zk.faults = append(s.zk.faults, f)
		}
		s.zk.readFails += int(argInt(d, "read-fail", 0))
		return nil
	case "consume":
		return s.consume(d, out)
	case "offset-for-epoch":
		br, err := s.broker(int32(argInt(d, "broker", int64(s.zk.leader))))
		if err != nil {
			return err
		}
		r := br.rm.Requests().LastOffsetForLeaderEpoch(-1, []EpochEndOffsetRequest{{TopicPartition: simTP, CurrentLeaderEpoch: -1, LeaderEpoch: int32(argInt(d, "epoch", 0))}})[0]
		fmt.Fprintf(out, "%s epoch=%d end=%d\n", codeName(r.ErrorCode), r.LeaderEpoch, r.EndOffset)
		return nil
	case "state":
		s.printState(out)
		return nil
	}
	return fmt.Errorf("unknown command %q", d.Cmd)
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return ke.Message
		}
		return e.Error()
	}
	return strconv.Itoa(int(code))
}

func (s *sim) leaderAndIsr(d *datadriven.TestData, out *strings.Builder) error {
	leader := int32(argInt(d, "leader", -1))
	epoch := int32(argInt(d, "epoch", 0))
	isr := parseIDs(argStr(d, "isr", fmtIDs(s.replicas)))
	replicas := parseIDs(argStr(d, "replicas", fmtIDs(s.replicas)))
	to := parseIDs(argStr(d, "to", fmtIDs(s.live())))
	live := parseIDs(argStr(d, "live", fmtIDs(s.live())))
	s.zk.mu.Lock()
	if !d.HasArg("no-zk") {
		s.zk.exists = true
		s.zk.leader, s.zk.leaderEpoch, s.zk.controllerEpoch, s.zk.isr = leader, epoch, 1, slices.Clone(isr)
		s.zk.version++
	}
	zkv := s.zk.version
	s.zk.mu.Unlock()
	liveLeaders := map[int32]string{}
	for _, id := range live {
		liveLeaders[id] = fmt.Sprintf("broker%d:9092", id)
	}
	for _, id := range to {
		br, err := s.broker(id)
		if err != nil {
			return err
		}
		res := br.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{
			ControllerID: 100, ControllerEpoch: 1, BrokerEpoch: -1,
			Partitions: []PartitionState{{TopicPartition: simTP, ControllerEpoch: 1, Leader: leader, LeaderEpoch: epoch,
				ISR: isr, ZkVersion: zkv, Replicas: replicas}},
			LiveLeaders: liveLeaders,
		})
		if res.ErrorCode != 0 {
			fmt.Fprintf(out, "%d: %s\n", id, codeName(res.ErrorCode))
		} else if c := res.Partitions[simTP]; c != 0 {
			fmt.Fprintf(out, "%d: %s\n", id, codeName(c))
		}
	}
	return nil
}

func (s *sim) produce(d *datadriven.TestData, out *strings.Builder) error {
	br, err := s.broker(int32(argInt(d, "to", int64(s.zk.leader))))
	if err != nil {
		return err
	}
	acks := int16(argInt(d, "acks", 1))
	records := int(argInt(d, "records", 1))
	timeout := argDur(d, "timeout", 30*time.Second)
	count := argInt(d, "count", 1)
	var lines []string
	firstN, firstOffset, lastOffset, allOK := s.produces+1, int64(-1), int64(-1), true
	for i := int64(0); i < count; i++ {
		s.produces++
		n := s.produces
		answered := false
		br.rm.Requests().AppendRecords(timeout, acks, map[TopicPartition][]byte{simTP: makeBatch(records, "v")}, func(m map[TopicPartition]ProduceResult) {
			r := m[simTP]
			line := fmt.Sprintf("produce #%d: %s", n, codeName(r.ErrorCode))
			if r.ErrorCode == 0 || r.BaseOffset >= 0 {
				line += fmt.Sprintf(" offset %d", r.BaseOffset)
			}
			if answered {
				s.events = append(s.events, line)
				return
			}
			answered = true
			lines = append(lines, line)
			if r.ErrorCode != 0 {
				allOK = false
			}
			if firstOffset < 0 {
				firstOffset = r.BaseOffset
			}
			lastOffset = r.BaseOffset
		})
		if !answered {
			lines = append(lines, fmt.Sprintf("produce #%d: waiting for the HW", n))
			allOK = false
			answered = true
		}
	}
	if count > 3 && allOK {
		fmt.Fprintf(out, "produce #%d..#%d: NONE offsets %d..%d\n", firstN, s.produces, firstOffset, lastOffset+int64(records)-1)
		return nil
	}
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	return nil
}

// read performs a fetch as replica id from br and returns the result.
func (s *sim) read(br *simBroker, replica int32, offset int64, epoch int32, maxBytes int32) FetchPartitionResult {
	var res []FetchPartitionResult
	br.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxBytes: 1 << 20, MinBytes: 1, Partitions: []FetchPartition{{
		TopicPartition: simTP, FetchOffset: offset, LogStartOffset: -1, PartitionMaxBytes: maxBytes, CurrentLeaderEpoch: epoch,
	}}}, func(r []FetchPartitionResult) { res = r })
	if res == nil {
		panic("a fetch with max_wait 0 did not answer at once")
	}
	return res[0]
}

func batchRanges(records []byte) string {
	hs, err := logstore.BatchHeaders(records)
	if err != nil {
		return "corrupt: " + err.Error()
	}
	if len(hs) == 0 {
		return "no records"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%d-%d@%d", h.BaseOffset, h.LastOffset(), h.LeaderEpoch)
	}
	return "batches " + strings.Join(parts, " ")
}

func (s *sim) consume(d *datadriven.TestData, out *strings.Builder) error {
	br, err := s.broker(int32(argInt(d, "broker", int64(s.zk.leader))))
	if err != nil {
		return err
	}
	r := s.read(br, int32(argInt(d, "replica", -1)), argInt(d, "offset", 0), -1, 1<<20)
	if r.ErrorCode != 0 {
		fmt.Fprintf(out, "%s\n", codeName(r.ErrorCode))
		return nil
	}
	fmt.Fprintf(out, "hw=%d %s\n", r.HighWatermark, batchRanges(r.Records))
	return nil
}

// step runs one iteration of follower f's fetch loop for t-0: a truncation round while
// Truncating (K1), else one fetch (S17, S18) with OFFSET_OUT_OF_RANGE handling (S19–S21).
// It mirrors fetcher's thread, deciding with the fetcher's planners.
func (s *sim) step(f int32, out *strings.Builder) (bool, error) {
	fb, err := s.broker(f)
	if err != nil {
		return false, err
	}
	st := fb.fetch.get(simTP)
	if st == nil {
		fmt.Fprintf(out, "%d: no fetcher\n", f)
		return false, nil
	}
	lb := s.brokers[st.leader]
	if lb == nil || lb.crashed {
		fmt.Fprintf(out, "%d: leader %d unreachable; backing off\n", f, st.leader)
		return false, nil
	}
	local := fb.rm.followers
	if st.truncating {
		epoch, ok, err := local.LatestEpoch(simTP)
		if err != nil {
			fmt.Fprintf(out, "%d: %v\n", f, err)
			return false, nil
		}
		if !ok {
			if err := local.TruncateTo(simTP, st.fetchOffset); err != nil {
				return false, err
			}
			leo, _ := local.LogEndOffset(simTP)
			st.fetchOffset, st.truncating = leo, false
			fmt.Fprintf(out, "%d: no leader epochs; truncated to HW, LEO %d\n", f, leo)
			return true, nil
		}
		r := lb.rm.Requests().LastOffsetForLeaderEpoch(f, []EpochEndOffsetRequest{{TopicPartition: simTP, CurrentLeaderEpoch: st.epoch, LeaderEpoch: epoch}})[0]
		if r.ErrorCode != 0 {
			if r.ErrorCode == kerr.FencedLeaderEpoch.Code {
				fb.fetch.RemoveFetcherForPartitions([]TopicPartition{simTP})
				fmt.Fprintf(out, "%d: OffsetForLeaderEpoch: FENCED_LEADER_EPOCH; partition failed\n", f)
				return false, nil
			}
			fmt.Fprintf(out, "%d: OffsetForLeaderEpoch: %s; backing off\n", f, codeName(r.ErrorCode))
			return false, nil
		}
		leo, _ := local.LogEndOffset(simTP)
		in := fetcher.TruncationInput{
			AskedEpoch: epoch,
			Leader:     fetcher.EpochEndOffset{LeaderEpoch: r.LeaderEpoch, EndOffset: r.EndOffset},
			Local:      fetcher.EpochEndOffset{LeaderEpoch: -1, EndOffset: -1},
			LEO:        leo,
			InitOffset: st.fetchOffset,
		}
		if r.EndOffset >= 0 && r.LeaderEpoch >= 0 {
			found, end, err := local.EndOffsetForEpoch(simTP, r.LeaderEpoch)
			if err != nil {
				return false, err
			}
			in.Local = fetcher.EpochEndOffset{LeaderEpoch: found, EndOffset: end}
		}
		plan := fetcher.PlanTruncation(in)
		fmt.Fprintf(out, "%d: asked epoch %d, leader %d answered epoch %d end %d; %s to %d",
			f, epoch, lb.id, r.LeaderEpoch, r.EndOffset, plan.Action, plan.Offset)
		if plan.Action == fetcher.BackOff {
			fmt.Fprintln(out)
			return false, nil
		}
		if err := local.TruncateTo(simTP, plan.Offset); err != nil {
			return false, err
		}
		newLEO, _ := local.LogEndOffset(simTP)
		fmt.Fprintf(out, ", LEO %d\n", newLEO)
		st.fetchOffset = newLEO
		st.truncating = plan.Action != fetcher.TruncateAndFetch
		return true, nil
	}
	r := s.read(lb, f, st.fetchOffset, st.epoch, s.maxBytes)
	switch r.ErrorCode {
	case 0:
		leo, err := local.ProcessPartitionData(simTP, st.fetchOffset, r.Records, r.HighWatermark, r.LogStartOffset)
		if err != nil {
			fmt.Fprintf(out, "%d: append failed: %v\n", f, err)
			if l, lerr := local.LogEndOffset(simTP); lerr == nil {
				st.fetchOffset, st.truncating = l, true
			}
			return false, nil
		}
		moved := leo != st.fetchOffset
		if moved {
			fmt.Fprintf(out, "%d: fetched %d..%d from %d\n", f, st.fetchOffset, leo-1, lb.id)
		} else if s.verbose {
			fmt.Fprintf(out, "%d: fetched nothing new at %d from %d\n", f, st.fetchOffset, lb.id)
		}
		st.fetchOffset = leo
		return moved, nil
	case kerr.OffsetOutOfRange.Code:
		localLEO, _ := local.LogEndOffset(simTP)
		lst := lb.rm.Requests().ListOffsets(f, 0, []ListOffsetsPartition{{TopicPartition: simTP, Timestamp: -1, CurrentLeaderEpoch: st.epoch}})[0]
		if fetcher.PlanOutOfRangeLatest(lst.Offset, localLEO) == fetcher.TruncateToLeaderLEO {
			if err := local.TruncateTo(simTP, lst.Offset); err != nil {
				return false, err
			}
			st.fetchOffset, _ = local.LogEndOffset(simTP)
			fmt.Fprintf(out, "%d: OFFSET_OUT_OF_RANGE, leader LEO %d below ours (S19); truncated to %d\n", f, lst.Offset, st.fetchOffset)
			return true, nil
		}
		early := lb.rm.Requests().ListOffsets(f, 0, []ListOffsetsPartition{{TopicPartition: simTP, Timestamp: -2, CurrentLeaderEpoch: st.epoch}})[0]
		if fetcher.PlanOutOfRangeEarliest(early.Offset, localLEO) == fetcher.StartAtLeaderLogStart {
			if err := local.TruncateFullyAndStartAt(simTP, early.Offset); err != nil {
				return false, err
			}
			st.fetchOffset = early.Offset
			fmt.Fprintf(out, "%d: OFFSET_OUT_OF_RANGE, leader log start %d above our LEO (S20); log emptied, start at %d\n", f, early.Offset, early.Offset)
			return true, nil
		}
		st.fetchOffset = localLEO
		fmt.Fprintf(out, "%d: OFFSET_OUT_OF_RANGE, leader LEO grew meanwhile (S21); refetch from %d\n", f, localLEO)
		return true, nil
	case kerr.FencedLeaderEpoch.Code:
		fb.fetch.RemoveFetcherForPartitions([]TopicPartition{simTP})
		fmt.Fprintf(out, "%d: fetch: FENCED_LEADER_EPOCH; partition failed\n", f)
		return false, nil
	default:
		fmt.Fprintf(out, "%d: fetch: %s; backing off\n", f, codeName(r.ErrorCode))
		return false, nil
	}
}

func (s *sim) crash(id int32, keep int64) error {
	br, err := s.broker(id)
	if err != nil {
		return err
	}
	_ = br.rm.tasks.checkpointHighWatermarks()
	if keep >= 0 {
		if l := br.logs.Get(simTP); l != nil {
			if err := l.TruncateTo(keep); err != nil {
				return err
			}
		}
	}
	if err := br.logs.Close(); err != nil {
		return err
	}
	br.crashed = true
	br.rm = nil
	return nil
}

func fmtEpochs(es []logstore.EpochEntry) string {
	if len(es) == 0 {
		return "-"
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset)
	}
	return strings.Join(parts, ",")
}

func (s *sim) printState(out *strings.Builder) {
	s.zk.mu.Lock()
	if s.zk.exists {
		fmt.Fprintf(out, "zk: leader=%d epoch=%d isr=%s zkVersion=%d\n", s.zk.leader, s.zk.leaderEpoch, fmtIDs(s.zk.isr), s.zk.version)
	} else {
		fmt.Fprintln(out, "zk: no partition state")
	}
	s.zk.mu.Unlock()
	ids := slices.Clone(s.replicas)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		br := s.brokers[id]
		if br.crashed {
			fmt.Fprintf(out, "%d: down\n", id)
			continue
		}
		p := br.rm.getPartition(simTP)
		if p == nil {
			fmt.Fprintf(out, "%d: no replica\n", id)
			continue
		}
		fmt.Fprintf(out, "%d: %s\n", id, p.describe())
		if st := br.fetch.get(simTP); st != nil {
			phase := "fetching"
			if st.truncating {
				phase = "truncating"
			}
			fmt.Fprintf(out, "   fetcher: leader=%d epoch=%d %s at %d\n", st.leader, st.epoch, phase, st.fetchOffset)
		}
	}
}
