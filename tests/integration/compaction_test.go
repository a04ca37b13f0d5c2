package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Log compaction on real brokers (docs/compaction.md): an RF=3 topic with
// cleanup.policy=compact gets 100,000 records over 1,000 keys, then tombstones for 100 of the
// keys, then a steady stream of updates of the other keys. Every replica cleans its own copy.
// Checked:
//   - a keyless record is refused with INVALID_RECORD;
//   - a consumer reading from the start while the cleaners run never misses the latest value
//     of a key (it sees, for every key, a record at or after the key's latest offset below the
//     end offset it read to);
//   - the leader killed with SIGKILL while a cleaning is in flight loses nothing on restart;
//   - the deleted keys disappear from every replica after delete.retention.ms;
//   - on every replica each live key's latest value is at its original offset, offsets rise,
//     and below the replica's cleaner-offset-checkpoint each key appears at most once.
func TestLogCompaction(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 4 * time.Second, Overrides: map[string]string{
		"log.cleaner.backoff.ms":         "100",
		"log.cleaner.dedupe.buffer.size": "2097152",
	}})
	const topic = "compacted"
	c.CreateTopicWithConfigs(topic, 1, 3, map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "131072",
		"min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms":       "2000",
		"min.insync.replicas":       "2",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A keyless record is refused (Kafka 2.4 LogValidator.validateKey).
	plain := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record to a compacted topic: %v, want INVALID_RECORD", err)
	}

	tr := &keyTracker{latest: map[string]trackedRec{}}
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	const keys, records, deleted = 1000, 100_000, 100
	for i := 0; i < records; i++ {
		v := fmt.Sprintf("v%d", i)
		tr.produce(ctx, cl, fmt.Sprintf("k%d", i%keys), &v)
	}
	for k := 0; k < deleted; k++ {
		tr.produce(ctx, cl, fmt.Sprintf("k%d", k), nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f := tr.failures(); f > 0 {
		t.Fatalf("%d produces failed before any fault", f)
	}

	// steady updates of the live keys while the cleaners work
	fillerCtx, stopFiller := context.WithCancel(ctx)
	fillerDone := make(chan struct{})
	go func() {
		defer close(fillerDone)
		tick := time.NewTicker(10 * time.Millisecond) // pacing, not synchronisation
		defer tick.Stop()
		for i := 0; fillerCtx.Err() == nil; i++ {
			for j := 0; j < 20; j++ {
				v := fmt.Sprintf("f%d-%d", i, j)
				tr.produce(fillerCtx, cl, fmt.Sprintf("k%d", deleted+(i*20+j)%(keys-deleted)), &v)
			}
			select {
			case <-fillerCtx.Done():
			case <-tick.C:
			}
		}
	}()
	defer func() { stopFiller(); <-fillerDone }()

	// consumer passes from the start, concurrent with the cleaning
	type pass struct {
		end      int64
		lastSeen map[string]int64
	}
	var passes []pass
	consumePass := func() {
		end := endOffsets(t, c, topic, 1)[0]
		seen, err := readKeysFromStart(ctx, c, topic, end)
		if err != nil {
			t.Fatalf("consumer pass to %d: %v", end, err)
		}
		passes = append(passes, pass{end, seen})
	}
	consumePass()

	// kill -9 the leader while one of its cleanings is in flight, and restart it
	leader := c.ZK.WaitPartitionState(topic, 0, 30*time.Second, func(st cluster.PartitionState) (bool, string) { return len(st.ISR) == 3, "ISR not full" }).Leader
	dir := c.Broker(leader).PartitionDir(topic, 0)
	caught := false
	deadline := time.Now().Add(30 * time.Second)
	for !caught && time.Now().Before(deadline) {
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
				caught = true
			}
		}
	}
	c.Broker(leader).Kill()
	t.Logf("killed leader %d (cleaning in flight observed: %v)", leader, caught)
	consumePass()
	c.Broker(leader).Start()
	c.WaitRegistered(leader)
	consumePass()

	// the deleted keys disappear from every replica after delete.retention.ms
	cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
		for _, id := range c.IDs() {
			recs, err := readReplica(c.Broker(id).PartitionDir(topic, 0))
			if err != nil {
				return false, fmt.Sprintf("broker %d: %v", id, err)
			}
			for _, r := range recs {
				if n, _ := strconv.Atoi(strings.TrimPrefix(r.key, "k")); n < deleted {
					return false, fmt.Sprintf("broker %d still holds %s at %d (value %v)", id, r.key, r.offset, r.value != nil)
				}
			}
		}
		return true, ""
	})
	consumePass()
	stopFiller()
	<-fillerDone
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// every replica: latest values at their offsets, rising offsets, one record per key below
	// its cleaner checkpoint
	end := endOffsets(t, c, topic, 1)[0]
	latest, ambiguous := tr.snapshot()
	cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
		for _, id := range c.IDs() {
			d := c.Broker(id).PartitionDir(topic, 0)
			if leo, err := cluster.LogEndOffsetOnDisk(d); err != nil || leo < end {
				return false, fmt.Sprintf("broker %d: LEO %d (%v), want %d", id, leo, err, end)
			}
			cp, err := cleanerCheckpoint(c.Broker(id).LogDir, topic, 0)
			if err != nil || cp <= 0 {
				return false, fmt.Sprintf("broker %d: cleaner checkpoint %d (%v)", id, cp, err)
			}
			recs, err := readReplica(d)
			if err != nil {
				return false, fmt.Sprintf("broker %d: %v", id, err)
			}
			if msg := checkReplica(recs, latest, ambiguous, cp); msg != "" {
				return false, fmt.Sprintf("broker %d: %s", id, msg)
			}
		}
		return true, ""
	})
	for _, p := range passes {
		for k, off := range tr.latestBelow(p.end) {
			if ambiguous[k] {
				continue
			}
			if seen, ok := p.lastSeen[k]; !ok || seen < off {
				t.Fatalf("a consumer reading to %d saw key %s last at %d (present %v); its latest offset below %d is %d", p.end, k, seen, ok, p.end, off)
			}
		}
	}
	t.Logf("%d consumer passes checked; %d records acknowledged, %d ambiguous keys (first produce error: %v)", len(passes), tr.count(), len(ambiguous), tr.firstErr)
}

// trackedRec is an acknowledged record: its offset and value (nil: tombstone).
type trackedRec struct {
	offset int64
	value  *string
}

// keyTracker records every acknowledged produce by key.
type keyTracker struct {
	mu     sync.Mutex
	latest map[string]trackedRec
	all    []struct {
		key string
		rec trackedRec
	}
	ambiguous map[string]bool // a produce of the key failed: it may or may not be in the log
	fails     int
	firstErr  error
}

func (tr *keyTracker) produce(ctx context.Context, cl *kgo.Client, key string, value *string) {
	r := &kgo.Record{Key: []byte(key)}
	if value != nil {
		r.Value = []byte(*value)
	}
	cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if err != nil {
			if tr.fails == 0 {
				tr.firstErr = err
			}
			tr.fails++
			if tr.ambiguous == nil {
				tr.ambiguous = map[string]bool{}
			}
			tr.ambiguous[key] = true
			return
		}
		rec := trackedRec{offset: r.Offset, value: value}
		tr.all = append(tr.all, struct {
			key string
			rec trackedRec
		}{key, rec})
		if cur, ok := tr.latest[key]; !ok || cur.offset < r.Offset {
			tr.latest[key] = rec
		}
	})
}

func (tr *keyTracker) failures() int { tr.mu.Lock(); defer tr.mu.Unlock(); return tr.fails }
func (tr *keyTracker) count() int    { tr.mu.Lock(); defer tr.mu.Unlock(); return len(tr.all) }

func (tr *keyTracker) snapshot() (map[string]trackedRec, map[string]bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	l := make(map[string]trackedRec, len(tr.latest))
	for k, v := range tr.latest {
		l[k] = v
	}
	a := map[string]bool{}
	for k := range tr.ambiguous {
		a[k] = true
	}
	return l, a
}

// latestBelow returns each key's latest non-tombstone acknowledged offset below end (keys
// whose latest record below end is a tombstone are left out: it may be gone).
func (tr *keyTracker) latestBelow(end int64) map[string]int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	best := map[string]trackedRec{}
	for _, e := range tr.all {
		if e.rec.offset < end {
			if cur, ok := best[e.key]; !ok || cur.offset < e.rec.offset {
				best[e.key] = e.rec
			}
		}
	}
	out := map[string]int64{}
	for k, r := range best {
		if r.value != nil {
			out[k] = r.offset
		}
	}
	return out
}

// readKeysFromStart consumes partition 0 from its start until it has seen a record at or
// after end-1, and returns each key's last offset.
func readKeysFromStart(ctx context.Context, c *cluster.Cluster, topic string, end int64) (map[string]int64, error) {
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	seen := map[string]int64{}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return seen, fmt.Errorf("consuming to %d: %w", end, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil && !kerr.IsRetriable(ferr) && !errors.Is(ferr, kerr.NotLeaderForPartition) {
			return seen, ferr
		}
		done := false
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				seen[string(r.Key)] = r.Offset
				// the producer keeps writing, so a record at or past end-1 always comes
				if r.Offset >= end-1 {
					done = true
				}
			}
		})
		if done {
			return seen, nil
		}
	}
}

// replicaRec is one record read from a partition directory.
type replicaRec struct {
	offset int64
	key    string
	value  *string
}

// readReplica reads every record of a partition directory from its segment files through kmsg
// and kgo's decompressor (the broker may rewrite segments meanwhile: an error means retry).
func readReplica(dir string) ([]replicaRec, error) {
	bases, err := cluster.SegmentBaseOffsets(dir)
	if err != nil {
		return nil, err
	}
	dec := kgo.DefaultDecompressor()
	var out []replicaRec
	for i, base := range bases {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
		if err != nil {
			return nil, err
		}
		for pos := 0; pos < len(data); {
			if len(data)-pos < 61 {
				if i == len(bases)-1 {
					break
				}
				return nil, fmt.Errorf("segment %d: stray bytes at %d", base, pos)
			}
			size := 12 + int(int32(binary.BigEndian.Uint32(data[pos+8:])))
			if size < 61 || pos+size > len(data) {
				if i == len(bases)-1 {
					break
				}
				return nil, fmt.Errorf("segment %d: bad batch at %d", base, pos)
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(data[pos : pos+size]); err != nil {
				return nil, err
			}
			pos += size
			raw, err := dec.Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
			if err != nil {
				return nil, err
			}
			for len(raw) > 0 {
				l, n := binary.Varint(raw)
				if n <= 0 || l < 0 || int(l) > len(raw)-n {
					return nil, fmt.Errorf("segment %d: bad record in batch %d", base, rb.FirstOffset)
				}
				var rec kmsg.Record
				if err := rec.ReadFrom(raw[:n+int(l)]); err != nil {
					return nil, err
				}
				raw = raw[n+int(l):]
				r := replicaRec{offset: rb.FirstOffset + int64(rec.OffsetDelta), key: string(rec.Key)}
				if rec.Value != nil {
					v := string(rec.Value)
					r.value = &v
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// checkReplica checks one replica's records against the acknowledged latest records.
func checkReplica(recs []replicaRec, latest map[string]trackedRec, ambiguous map[string]bool, cleanerCP int64) string {
	last := map[string]replicaRec{}
	below := map[string]int{}
	for i, r := range recs {
		if i > 0 && r.offset <= recs[i-1].offset {
			return fmt.Sprintf("offset %d after %d", r.offset, recs[i-1].offset)
		}
		last[r.key] = r
		if r.offset < cleanerCP {
			below[r.key]++
			if below[r.key] > 1 {
				return fmt.Sprintf("key %s appears %d times below the cleaner checkpoint %d", r.key, below[r.key], cleanerCP)
			}
		}
	}
	var missing []string
	for k, want := range latest {
		if want.value == nil || ambiguous[k] {
			continue
		}
		got, ok := last[k]
		if !ok || got.offset != want.offset || got.value == nil || *got.value != *want.value {
			missing = append(missing, fmt.Sprintf("%s: latest on replica %+v, acknowledged at %d", k, got, want.offset))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Sprintf("%d keys without their latest value, e.g. %s", len(missing), missing[0])
	}
	return ""
}

// cleanerCheckpoint reads topic-p's entry of a log dir's cleaner-offset-checkpoint
// (version 0, count, then `topic partition offset` lines), -1 if absent.
func cleanerCheckpoint(logDir, topic string, p int32) (int64, error) {
	f, err := os.Open(filepath.Join(logDir, "cleaner-offset-checkpoint"))
	if err != nil {
		return -1, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if line < 2 || len(fs) != 3 || fs[0] != topic || fs[1] != strconv.Itoa(int(p)) {
			continue
		}
		return strconv.ParseInt(fs[2], 10, 64)
	}
	return -1, sc.Err()
}
