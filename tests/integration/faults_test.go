package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// faultSession is zookeeper.session.timeout.ms for kill tests: a killed broker's znode goes away
// after this (ZooKeeper allows >= 2 ticks; zktest ticks every second).
const faultSession = 4 * time.Second

// failoverTimeout bounds how long a reaction to a killed broker may take: session expiry plus the
// controller's work, with room for a loaded 2-core machine.
const failoverTimeout = 40 * time.Second

// Issue 6: kill -9 a broker while it takes writes, restart it: every acknowledged record is
// there (the page cache survives a process crash; recovery must keep every complete batch).
func TestKill9WhileProducing_EveryAckedRecordSurvivesRestart(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession})
	const topic, partitions = "kill9", 6
	assignment := c.CreateTopic(topic, partitions, 1)
	victim := assignment[0][0]
	victimParts := map[int32]bool{}
	for p, r := range assignment {
		if r[0] == victim {
			victimParts[p] = true
		}
	}

	// As fast as the client takes records, keyed over 97 keys: the hashing partitioner spreads
	// them over all the partitions, the victim's and the others'.
	w := startAckProducer(t, c.Client(), topic, ackProducerOptions{unpaced: true, keys: 97})
	onVictim := func(a acked) bool { return victimParts[a.Partition] }
	onOthers := func(a acked) bool { return !victimParts[a.Partition] }

	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := w.countWhere(onVictim)
		return n >= 2000, fmt.Sprintf("%d records acknowledged on broker %d's partitions", n, victim)
	})
	c.Broker(victim).Kill()
	killedAt := w.countWhere(onVictim)
	t.Logf("killed broker %d after %d acknowledged records on its partitions", victim, killedAt)

	// RF=1: the other brokers' partitions keep taking writes while the victim is down.
	others := w.countWhere(onOthers)
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := w.countWhere(onOthers)
		return n >= others+1000, fmt.Sprintf("%d records acknowledged on other brokers since the kill", n-others)
	})

	c.Broker(victim).Start()
	c.WaitRegistered(victim)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		n := w.countWhere(onVictim)
		return n >= killedAt+500, fmt.Sprintf("%d records acknowledged on broker %d's partitions since its restart", n-killedAt, victim)
	})
	want, _ := w.stop(t) // produces may fail, canceled at the end or during the outage

	got := readAll(t, c, topic, partitions)
	// Every acknowledged record is at its offset with its value. Unacknowledged records may also
	// be there (a produce whose answer was lost), so look up instead of comparing whole logs.
	at := map[int32]map[int64]*kgo.Record{}
	for p, rs := range got {
		at[p] = map[int64]*kgo.Record{}
		for _, r := range rs {
			at[p][r.Offset] = r
		}
	}
	missing := 0
	for _, a := range want {
		r := at[a.Partition][a.Offset]
		if r == nil || string(r.Value) != string(a.Value) {
			if missing < 10 {
				t.Errorf("acknowledged %s at %s-%d offset %d: consumed %v", a.Value, topic, a.Partition, a.Offset, r)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged records lost", missing, len(want))
	}
}

// batchBoundaries parses a segment file as Kafka's on-disk log (a sequence of record batches:
// baseOffset int64, batchLength int32, then batchLength bytes) and returns each complete batch's
// start position and base offset, plus the end of the last complete batch.
func batchBoundaries(data []byte) (starts []int64, bases []int64, end int64) {
	pos := int64(0)
	for pos+12 <= int64(len(data)) {
		length := int64(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if length < 0 || pos+12+length > int64(len(data)) {
			break
		}
		starts = append(starts, pos)
		bases = append(bases, int64(binary.BigEndian.Uint64(data[pos:])))
		pos += 12 + length
	}
	return starts, bases, pos
}

// activeSegment returns the .log file with the highest base offset in a partition directory.
func activeSegment(t *testing.T, partDir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(partDir, "*.log"))
	if err != nil || len(logs) == 0 {
		entries, _ := os.ReadDir(filepath.Dir(partDir))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("no segment in %s (err %v); log dir holds %v", partDir, err, names)
	}
	sort.Strings(logs) // names are 20-digit zero-padded base offsets
	return logs[len(logs)-1]
}

// Issue 6 / docs/reliability.md, fault matrix row 12: a torn tail (bytes cut from the active segment, garbage
// appended) is truncated on start, the broker serves again, and every record acknowledged before
// the cut batch is readable.
func TestTornTail_TruncatedOnStartAndBrokerServesAgain(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession})
	const topic = "torn"
	assignment := c.CreateTopic(topic, 1, 1)
	leader := assignment[0][0]

	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var produced []acked
	for call := 0; call < 20; call++ {
		var batch []*kgo.Record
		for i := 0; i < 25; i++ {
			batch = append(batch, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("call-%02d-rec-%02d", call, i))})
		}
		res := cl.ProduceSync(ctx, batch...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce call %d: %v", call, err)
		}
		for _, r := range res {
			produced = append(produced, acked{Seq: len(produced), Value: r.Record.Value, Partition: r.Record.Partition, Offset: r.Record.Offset})
		}
	}

	c.Broker(leader).Kill()
	seg := activeSegment(t, filepath.Join(c.Broker(leader).LogDir, topic+"-0"))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	starts, bases, end := batchBoundaries(data)
	if len(starts) < 2 || end != int64(len(data)) {
		t.Fatalf("%s: %d bytes, %d complete batches ending at %d: not the expected batch sequence", seg, len(data), len(starts), end)
	}
	cutStart, cutBase := starts[len(starts)-1], bases[len(bases)-1]
	const cut = 7
	garbage := make([]byte, 3000)
	rand.New(rand.NewSource(42)).Read(garbage)
	if err := os.Truncate(seg, end-cut); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(garbage); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("%s: cut %d bytes off the last batch (base offset %d at byte %d) and appended %d bytes of garbage",
		filepath.Base(seg), cut, cutBase, cutStart, len(garbage))

	c.Broker(leader).Start()
	c.WaitRegistered(leader)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		st, err := os.Stat(seg)
		if err != nil {
			return false, err.Error()
		}
		return st.Size() == cutStart, fmt.Sprintf("%s is %d bytes, want it truncated to %d (end of the last intact batch)", seg, st.Size(), cutStart)
	})
	if out := strings.ToLower(c.Broker(leader).OutputSince()); !strings.Contains(out, "truncat") {
		t.Errorf("broker %d's log after restart does not mention truncating the torn tail:\n%s", leader, c.Broker(leader).Tail(30))
	}
	c.ZK.WaitTopicOnline(topic, failoverTimeout)
	c.WaitMetadataLeaders(topic, 1, failoverTimeout)

	var want []acked
	for _, a := range produced {
		if a.Offset < cutBase {
			want = append(want, a)
		}
	}
	got := readAll(t, c, topic, 1)
	checkPartitionLogs(t, got, want)

	// The broker serves writes again, continuing at the truncation point.
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after-restart")})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	if off := res[0].Record.Offset; off != cutBase {
		t.Errorf("first record after restart got offset %d, want %d (the LEO after truncation)", off, cutBase)
	}
	got = readAll(t, c, topic, 1)
	if rs := got[0]; len(rs) != len(want)+1 || string(rs[len(rs)-1].Value) != "after-restart" {
		t.Errorf("after restart: consumed %d records, want %d ending with the new one", len(rs), len(want)+1)
	}
}

// Issue 6 / S9, K3: killing the controller moves the controller role to another broker and
// increments /controller_epoch by exactly one; the restarted broker does not take it back.
func TestControllerKill_RoleMovesWithControllerEpochPlusOne(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession})
	old, epoch := c.ZK.WaitController(30 * time.Second)
	c.Broker(old).Kill()

	var next, nextEpoch int32
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		id, err := c.ZK.ControllerID()
		if err != nil {
			return false, err.Error()
		}
		if id < 0 || id == old {
			return false, fmt.Sprintf("/controller names broker %d (killed %d)", id, old)
		}
		e, err := c.ZK.ControllerEpoch()
		if err != nil {
			return false, err.Error()
		}
		next, nextEpoch = id, e
		return true, ""
	})
	if nextEpoch != epoch+1 {
		t.Errorf("controller moved %d -> %d with /controller_epoch %d -> %d, want +1", old, next, epoch, nextEpoch)
	}
	if !c.Broker(next).Running() {
		t.Errorf("new controller %d is not a running broker", next)
	}

	c.Broker(old).Start()
	c.WaitRegistered(old)
	id, err := c.ZK.ControllerID()
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := c.ZK.ControllerEpoch(); id != next || e != nextEpoch {
		t.Errorf("after broker %d returned: controller %d epoch %d, want %d epoch %d unchanged", old, id, e, next, nextEpoch)
	}
}

// Issue 6 / docs/kafka-facts.md §2: a broker that dies leaves its RF=1 partitions offline (leader
// -1, the ISR keeps its last member, leader_epoch+1) until it returns; then they come back with
// it as leader (leader_epoch+1 again) and serve writes. Other partitions are untouched.
func TestRF1PartitionsOfflineWhileBrokerDownThenBack(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession})
	const topic, partitions = "offline", 6
	assignment := c.CreateTopic(topic, partitions, 1)
	victim := assignment[0][0]
	before := map[int32]cluster.PartitionState{}
	for p := int32(0); p < partitions; p++ {
		st, err := c.ZK.PartitionState(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = st
	}

	c.Broker(victim).Kill()
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		for p := int32(0); p < partitions; p++ {
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			b := before[p]
			if assignment[p][0] != victim {
				if st.Leader != b.Leader || st.LeaderEpoch != b.LeaderEpoch {
					t.Fatalf("%s-%d on broker %d changed when broker %d died: %+v -> %+v", topic, p, assignment[p][0], victim, b, st)
				}
				continue
			}
			if st.Leader != -1 || !reflect.DeepEqual(st.ISR, []int32{victim}) || st.LeaderEpoch != b.LeaderEpoch+1 {
				return false, fmt.Sprintf("%s-%d state %+v, want leader -1, isr [%d], leader_epoch %d", topic, p, st, victim, b.LeaderEpoch+1)
			}
		}
		return true, ""
	})

	// Live brokers' metadata shows the partitions without a leader.
	for _, id := range c.IDs() {
		if id == victim {
			continue
		}
		cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
			mctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			leaders, err := cluster.MetadataLeaders(mctx, c.Broker(id).Addr, topic)
			if err != nil {
				return false, err.Error()
			}
			for p, r := range assignment {
				if r[0] == victim && leaders[p] != -1 {
					return false, fmt.Sprintf("broker %d metadata: %s-%d leader %d, want -1", id, topic, p, leaders[p])
				}
			}
			return true, ""
		})
	}

	c.Broker(victim).Start()
	c.WaitRegistered(victim)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		for p, r := range assignment {
			if r[0] != victim {
				continue
			}
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader != victim || !reflect.DeepEqual(st.ISR, []int32{victim}) || st.LeaderEpoch != before[p].LeaderEpoch+2 {
				return false, fmt.Sprintf("%s-%d state %+v, want leader %d, isr [%d], leader_epoch %d", topic, p, st, victim, victim, before[p].LeaderEpoch+2)
			}
		}
		return true, ""
	})
	c.WaitMetadataLeaders(topic, partitions, failoverTimeout)

	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p, r := range assignment {
		if r[0] != victim {
			continue
		}
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("back")})
		if err := res.FirstErr(); err != nil {
			t.Errorf("produce to %s-%d after broker %d returned: %v", topic, p, victim, err)
		}
	}
}

// SIGTERM stops a broker gracefully (exit status 0, its znode removed at once rather than after
// the session timeout); restarted, it serves the records it had.
func TestSIGTERM_GracefulStopThenRestartKeepsRecords(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "graceful"
	assignment := c.CreateTopic(topic, 1, 1)
	leader := assignment[0][0]
	cl := c.Client()
	produced := produceAll(t, cl, topic, 500,
		func(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) },
		func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) })

	if code := c.Broker(leader).Terminate(); code != 0 {
		t.Errorf("broker %d exited with status %d after SIGTERM, want 0:\n%s", leader, code, c.Broker(leader).Tail(20))
	}
	// A closed session deletes the ephemeral znode immediately: well within the 6 s session timeout.
	c.WaitUnregistered(3*time.Second, leader)

	c.Broker(leader).Start()
	c.WaitRegistered(leader)
	c.ZK.WaitTopicOnline(topic, failoverTimeout)
	c.WaitMetadataLeaders(topic, 1, failoverTimeout)
	checkPartitionLogs(t, readAll(t, c, topic, 1), produced)
}
