package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// The workload: paced franz-go producers writing unique values and logging every
// acknowledgement, an assign-mode consumer reading during the run (checker M), and ZooKeeper
// watchers on the partition state znodes and /controller_epoch (checker E). None of it uses the
// broker's packages.

// ack is one acknowledged record: where it landed, when Produce was called and when the
// acknowledgement arrived.
type ack struct {
	Value     string
	Partition int32
	Offset    int64
	Sent, At  time.Time
}

// producer writes values "<prefix>-<seq>" round-robin over the topic's partitions at a steady
// rate and records every acknowledgement (also appended to its ack log file).
type producer struct {
	name       string // e.g. "all" (acks=all) or "one" (acks=1)
	prefix     string // every value it writes starts with prefix + "-"
	idempotent bool
	cl         *kgo.Client

	mu      sync.Mutex
	acks    []ack
	fails   map[string]int
	logFile *os.File
	log     *bufio.Writer

	inflight sync.WaitGroup
	stop     chan struct{}
	done     chan struct{}
}

// producerRate is records per second per producer, 1000/s as the fault matrix of docs/reliability.md sets it.
const producerRate = 1000

// ackLogDir is where acknowledgement logs go: $ISRBROKER_FAULTS_DIR when set (scripts/faults.sh
// keeps them), otherwise the test's temporary directory.
func ackLogDir(t *testing.T) string {
	if d := os.Getenv("ISRBROKER_FAULTS_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// startProducer starts a producer on its own client. acksAll selects acks=all (else acks=1);
// idempotent keeps kgo's default idempotent producer (acks=all only), else it is disabled.
func startProducer(t *testing.T, c *cluster.Cluster, scenario, name, topic string, partitions int32, acksAll, idempotent bool) *producer {
	t.Helper()
	opts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// A short metadata age makes the client find a new leader soon, so the measured
		// unavailability is the broker's, not the client's back-off.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	if acksAll {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	}
	if !idempotent || !acksAll {
		idempotent = false
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	p := &producer{
		name: name, prefix: scenario + "-" + name, idempotent: idempotent,
		cl:    c.Client(opts...),
		fails: map[string]int{},
		stop:  make(chan struct{}), done: make(chan struct{}),
	}
	path := filepath.Join(ackLogDir(t), fmt.Sprintf("%s-%s.acks", scenario, name))
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("ack log: %v", err)
	}
	p.logFile, p.log = f, bufio.NewWriter(f)
	fmt.Fprintf(p.log, "# ack_unix_nano partition offset value sent_unix_nano (acks=%s idempotent=%v)\n",
		map[bool]string{true: "all", false: "1"}[acksAll], idempotent)
	t.Cleanup(func() { p.closeLog() })

	go func() {
		defer close(p.done)
		const tick = 10 * time.Millisecond // pacing, not synchronisation
		perTick := producerRate * int(tick) / int(time.Second)
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for seq := 0; ; {
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
			for i := 0; i < perTick; i++ {
				p.send(topic, int32(seq)%partitions, seq)
				seq++
			}
		}
	}()
	return p
}

func (p *producer) send(topic string, partition int32, seq int) {
	rec := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("%s-%08d", p.prefix, seq))}
	sent := time.Now()
	p.inflight.Add(1)
	// context.Background: stopping the workload must not fail records already handed over;
	// finish flushes them.
	p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		defer p.inflight.Done()
		now := time.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.fails[err.Error()]++
			return
		}
		a := ack{Value: string(r.Value), Partition: r.Partition, Offset: r.Offset, Sent: sent, At: now}
		p.acks = append(p.acks, a)
		if p.log != nil {
			fmt.Fprintf(p.log, "%d %d %d %s %d\n", now.UnixNano(), a.Partition, a.Offset, a.Value, sent.UnixNano())
		}
	})
}

// count is the number of acknowledgements so far (on partition part only when part >= 0).
func (p *producer) count(part int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if part < 0 {
		return len(p.acks)
	}
	n := 0
	for _, a := range p.acks {
		if a.Partition == part {
			n++
		}
	}
	return n
}

// waitAcks waits until n more records (on partition part, or any when part < 0) are
// acknowledged than when it was called.
func (p *producer) waitAcks(t *testing.T, part int32, n int, timeout time.Duration, why string) {
	t.Helper()
	start := p.count(part)
	cluster.WaitFor(t, timeout, func() (bool, string) {
		got := p.count(part) - start
		return got >= n, fmt.Sprintf("producer %s: %d of %d acknowledgements %s (partition %d); failures %v", p.name, got, n, why, part, p.failures())
	})
}

func (p *producer) failures() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.fails))
	for k, v := range p.fails {
		out[k] = v
	}
	return out
}

// finish stops writing, flushes, waits for every promise and returns the acknowledgements.
func (p *producer) finish(t *testing.T) []ack {
	t.Helper()
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("producer %s: flush: %v", p.name, err)
	}
	promises := make(chan struct{})
	go func() { p.inflight.Wait(); close(promises) }()
	select {
	case <-promises:
	case <-ctx.Done():
		t.Fatalf("producer %s: promises outstanding after flush", p.name)
	}
	p.closeLog()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("producer %s (%s): %d acknowledged; failed produces: %v", p.name, p.prefix, len(p.acks), p.fails)
	return append([]ack(nil), p.acks...)
}

func (p *producer) closeLog() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log != nil {
		_ = p.log.Flush()
		_ = p.logFile.Close()
		p.log, p.logFile = nil, nil
	}
}

// readRec is one record a consumer read.
type readRec struct {
	Partition int32
	Offset    int64
	Value     string
}

// monitor is an assign-mode consumer reading every partition from the start during the run:
// checker M (offsets only rise, without gaps, per partition) and input to checker O.
type monitor struct {
	cl *kgo.Client

	mu       sync.Mutex
	seen     []readRec
	next     map[int32]int64 // next offset expected per partition
	backward []string        // offsets that went back
	skipped  []string        // offsets jumped over (no compaction or transactions here)
	errs     map[string]int  // fetch errors by text

	stop chan struct{}
	done chan struct{}
}

func startMonitor(c *cluster.Cluster, topic string, partitions int32) *monitor {
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	m := &monitor{
		cl: c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(250*time.Millisecond)),
		next: map[int32]int64{}, errs: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-m.stop; cancel() }()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			m.mu.Lock()
			fs.EachError(func(_ string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					m.errs[fmt.Sprintf("p%d: %v", p, err)]++
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				rec := readRec{r.Partition, r.Offset, string(r.Value)}
				m.seen = append(m.seen, rec)
				next, started := m.next[r.Partition]
				switch {
				case started && r.Offset < next:
					m.backward = append(m.backward, fmt.Sprintf("p%d: %d after %d", r.Partition, r.Offset, next-1))
				case r.Offset > next:
					m.skipped = append(m.skipped, fmt.Sprintf("p%d: %d..%d", r.Partition, next, r.Offset-1))
				}
				m.next[r.Partition] = r.Offset + 1
			})
			m.mu.Unlock()
		}
	}()
	return m
}

// waitCaughtUp waits until the consumer has read every partition up to ends (liveness: a
// consumer that ran through the fault catches up after healing). It returns "" or why not.
func (m *monitor) waitCaughtUp(ends map[int32]int64, timeout time.Duration) string {
	ok, msg := cluster.Poll(timeout, func() (bool, string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for p, end := range ends {
			if m.next[p] < end {
				return false, fmt.Sprintf("partition %d read up to %d of %d; fetch errors %v", p, m.next[p], end, m.errs)
			}
		}
		return true, ""
	})
	if ok {
		return ""
	}
	return msg
}

// finish stops the consumer and returns what it read, the offsets that went back and the gaps.
func (m *monitor) finish() (seen []readRec, backward, skipped []string) {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]readRec(nil), m.seen...), append([]string(nil), m.backward...), append([]string(nil), m.skipped...)
}

// stateObs is one observed value of a watched znode.
type stateObs struct {
	At    time.Time
	State cluster.PartitionState // partition state znodes
	Epoch int32                  // /controller_epoch
}

// epochWatch follows every partition's state znode and /controller_epoch with ZooKeeper
// watches (checker E, and the time a new leader appears).
type epochWatch struct {
	mu         sync.Mutex
	states     map[int32][]stateObs
	controller []stateObs
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startEpochWatch(zkc *zk.Conn, topic string, partitions int32) *epochWatch {
	w := &epochWatch{states: map[int32][]stateObs{}, stop: make(chan struct{})}
	for p := int32(0); p < partitions; p++ {
		p := p
		w.follow(zkc, cluster.PartitionStatePath(topic, p), func(data []byte, stat *zk.Stat) {
			var st cluster.PartitionState
			if json.Unmarshal(data, &st) != nil {
				return
			}
			st.ZkVersion = stat.Version
			w.states[p] = append(w.states[p], stateObs{At: time.Now(), State: st})
		})
	}
	w.follow(zkc, "/controller_epoch", func(data []byte, _ *zk.Stat) {
		var e int32
		if _, err := fmt.Sscan(string(data), &e); err == nil {
			w.controller = append(w.controller, stateObs{At: time.Now(), Epoch: e})
		}
	})
	return w
}

// follow reads path and re-reads it at every change until stop; record runs under w.mu.
func (w *epochWatch) follow(zkc *zk.Conn, path string, record func([]byte, *zk.Stat)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			data, stat, ch, err := zkc.GetW(path)
			if err != nil {
				if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) {
					return
				}
				select { // ZooKeeper hiccup or no node yet: back off, then read again
				case <-w.stop:
					return
				case <-time.After(20 * time.Millisecond):
					continue
				}
			}
			w.mu.Lock()
			record(data, stat)
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-ch:
			}
		}
	}()
}

// leaderOf returns the latest observed leader of partition p (-1 when none observed).
func (w *epochWatch) leaderOf(p int32) int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.states[p]; len(s) > 0 {
		return s[len(s)-1].State.Leader
	}
	return -1
}

// newLeaderAfter returns how long after `from` a partition led by victim at that time was
// first seen with another live leader, the longest over such partitions; -1 when none moved.
func (w *epochWatch) newLeaderAfter(victim int32, from time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	longest := time.Duration(-1)
	for _, obs := range w.states {
		ledByVictim := false
		for _, o := range obs {
			if !o.At.After(from) {
				ledByVictim = o.State.Leader == victim
			}
		}
		if !ledByVictim {
			continue
		}
		for _, o := range obs {
			if o.At.After(from) && o.State.Leader >= 0 && o.State.Leader != victim {
				if d := o.At.Sub(from); d > longest {
					longest = d
				}
				break
			}
		}
	}
	return longest
}

// finish stops watching and returns the violations of checker E: a partition's leader_epoch or
// controller_epoch going back, a new leader without a higher leader_epoch, /controller_epoch
// going back.
func (w *epochWatch) finish() []string {
	close(w.stop)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	var bad []string
	parts := make([]int32, 0, len(w.states))
	for p := range w.states {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		bad = append(bad, epochViolations(p, w.states[p])...)
	}
	for i := 1; i < len(w.controller); i++ {
		if w.controller[i].Epoch < w.controller[i-1].Epoch {
			bad = append(bad, fmt.Sprintf("/controller_epoch went back: %d -> %d", w.controller[i-1].Epoch, w.controller[i].Epoch))
		}
	}
	return bad
}

// epochViolations checks one partition's observed states (checker E).
func epochViolations(p int32, obs []stateObs) []string {
	var bad []string
	for i := 1; i < len(obs); i++ {
		a, b := obs[i-1].State, obs[i].State
		switch {
		case b.LeaderEpoch < a.LeaderEpoch:
			bad = append(bad, fmt.Sprintf("partition %d leader_epoch went back: %+v -> %+v", p, a, b))
		case b.Leader != a.Leader && b.LeaderEpoch == a.LeaderEpoch:
			bad = append(bad, fmt.Sprintf("partition %d leader changed without a new leader_epoch: %+v -> %+v", p, a, b))
		case b.ControllerEpoch < a.ControllerEpoch:
			bad = append(bad, fmt.Sprintf("partition %d controller_epoch went back: %+v -> %+v", p, a, b))
		}
	}
	return bad
}
