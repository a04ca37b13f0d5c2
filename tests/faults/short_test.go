package faults

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// The short tier of the fault matrix in docs/reliability.md (rows 1, 5, 12, 14): part of the ordinary test run.

// Row 1, S3/S4/K1: SIGKILL the leader of partition 0 under an acks=all load. A new leader from
// the ISR within session timeout + 5 s; the old leader restarts and rejoins; L, D, O, M, R, E, U.
func TestFault01_KillLeader(t *testing.T) {
	s := startScenario(t, "01-kill-leader", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	victim := s.leader(0)
	s.fault(victim, "SIGKILL the leader of partition 0")
	s.c.Broker(victim).Kill()
	st := s.c.ZK.WaitPartitionState(s.topic, 0, waitLong, func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != victim, fmt.Sprintf("want a leader other than the killed %d", victim)
	})
	t.Logf("partition 0: broker %d leads with leader_epoch %d, ISR %v", st.Leader, st.LeaderEpoch, st.ISR)
	s.all.waitAcks(t, 0, 300, waitLong, "on partition 0 after the kill")
	// docs/reliability.md, fault matrix row 1: at least 5000 acknowledged in all.
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := s.all.count(-1)
		return n >= 5000, fmt.Sprintf("%d acknowledged, want 5000", n)
	})

	s.c.Broker(victim).Start()
	s.c.WaitRegistered(victim)
	s.heal(fmt.Sprintf("broker %d restarted", victim))
	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after the old leader rejoined")

	res := s.finish()
	if limit := sessionTimeout + 5*time.Second; res.NewLeader < 0 || res.NewLeader > limit {
		t.Errorf("new leader of partition 0 after %v, want within session timeout + 5 s = %v", res.NewLeader, limit)
	}
}

// Row 5: SIGSTOP the leader of a partition (not the controller) for 1.5 × the session timeout,
// then SIGCONT. No acks=all loss; after waking, the zombie answers produce for that partition
// with NOT_LEADER_FOR_PARTITION or FENCED_LEADER_EPOCH, never success. A second producer with
// acks=1 runs alongside: its loss is counted apart (the zombie window may lose acks=1 writes).
func TestFault05_ZombieLeader(t *testing.T) {
	s := startScenario(t, "05-zombie-leader", nil)
	s.one = startProducer(t, s.c, s.name, "one", s.topic, topicPartitions, false, false)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")
	s.one.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ctrl, _ := s.c.ZK.WaitController(30 * time.Second)
	p := s.partitionNotLedBy(ctrl)
	victim := s.leader(p)
	regBefore := s.registration(victim)
	frozen := sessionTimeout * 3 / 2
	s.fault(victim, fmt.Sprintf("SIGSTOP the leader of partition %d for %v (controller is %d)", p, frozen, ctrl))
	s.c.Broker(victim).Pause()
	wake := time.NewTimer(frozen) // the fault's duration, not synchronisation
	defer wake.Stop()
	st := s.c.ZK.WaitPartitionState(s.topic, p, waitLong, func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != victim, fmt.Sprintf("want a leader other than the stopped %d", victim)
	})
	t.Logf("partition %d: broker %d leads with leader_epoch %d, ISR %v, while %d is stopped", p, st.Leader, st.LeaderEpoch, st.ISR, victim)
	<-wake.C
	s.c.Broker(victim).Resume()
	wokeAt := time.Now()

	// The zombie must not take an acks=all write for the partition it lost: poll it directly
	// until it answers NOT_LEADER_FOR_PARTITION / FENCED_LEADER_EPOCH.
	var answers []string
	fenced := false
	ok, msg := cluster.Poll(waitLong, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		off, err := s.c.Broker(victim).ProduceOnce(ctx, s.topic, p, -1, 2*time.Second, []byte(fmt.Sprintf("zombie-probe-%d", len(answers))))
		if err == nil {
			t.Errorf("the zombie %d acknowledged an acks=all write to partition %d at offset %d after waking", victim, p, off)
			answers = append(answers, "success")
			return false, "zombie answered success"
		}
		answers = append(answers, err.Error())
		if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.FencedLeaderEpoch) {
			fenced = true
			return true, ""
		}
		return false, fmt.Sprintf("zombie %d answered %v", victim, err)
	})
	if !ok {
		t.Errorf("the zombie %d never answered NOT_LEADER_FOR_PARTITION / FENCED_LEADER_EPOCH for partition %d: %s", victim, p, msg)
	}
	fencedAfter := time.Since(wokeAt)
	t.Logf("zombie %d's answers to produce for partition %d after waking: %v", victim, p, answers)
	s.heal(fmt.Sprintf("broker %d resumed (SIGCONT)", victim))
	if fenced {
		s.extra = append(s.extra, "fenced_after="+fmtDur(fencedAfter))
	}

	s.waitReregistered(victim, regBefore)
	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after the zombie rejoined")
	s.finish()
}

// Row 12: SIGKILL a follower; cut 1..batch−1 bytes off the last batch of each of its partitions'
// active segments and append 0–4 KiB of garbage; restart it. It starts, logs the truncation,
// rejoins the ISR; R and L hold.
func TestFault12_TornTail(t *testing.T) {
	s := startScenario(t, "12-torn-tail", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ctrl, _ := s.c.ZK.WaitController(30 * time.Second)
	leader0 := s.leader(0)
	victim := int32(-1)
	for _, r := range s.assignment[0] {
		if r != leader0 && (victim < 0 || r != ctrl) {
			victim = r
		}
	}
	s.fault(victim, "SIGKILL a follower of partition 0, then tear its segments' tails")
	s.c.Broker(victim).Kill()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	torn := 0
	for p := int32(0); p < topicPartitions; p++ {
		if tearTail(t, rng, s.c.Broker(victim).PartitionDir(s.topic, p)) {
			torn++
		}
	}
	if torn == 0 {
		t.Fatalf("broker %d holds no batch to tear", victim)
	}
	t.Logf("tore %d segment tails on broker %d (seed %d)", torn, victim, seed)
	s.all.waitAcks(t, -1, 500, waitLong, "while the follower is down")

	s.c.Broker(victim).Start()
	s.c.WaitRegistered(victim)
	s.heal(fmt.Sprintf("broker %d restarted on its torn logs", victim))
	if out := strings.ToLower(s.c.Broker(victim).OutputSince()); !strings.Contains(out, "truncat") {
		t.Errorf("broker %d's log after restart does not mention truncating the torn tails:\n%s", victim, s.c.Broker(victim).Tail(30))
	}
	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after the follower rejoined")
	s.finish()
}

// tearTail cuts 1..size−1 bytes off the last complete batch of a partition's active segment and
// appends 0–4096 random bytes. It reports false when the partition holds no batch.
func tearTail(t *testing.T, rng *rand.Rand, dir string) bool {
	t.Helper()
	bs, err := cluster.ReadPartitionBatches(dir)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if len(bs) == 0 {
		return false
	}
	last := bs[len(bs)-1]
	seg := filepath.Join(dir, fmt.Sprintf("%020d.log", last.Segment))
	size := 12 + int64(last.Length)
	cut := 1 + rng.Int63n(size-1)
	garbage := make([]byte, rng.Intn(4097))
	rng.Read(garbage)
	if err := os.Truncate(seg, last.Position+size-cut); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(garbage); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s/%s: cut %d of the %d bytes of the batch at offset %d (byte %d), appended %d bytes of garbage",
		filepath.Base(dir), filepath.Base(seg), cut, size, last.BaseOffset, last.Position, len(garbage))
	return true
}

// Row 14: bad input to the leader of partition 0 while the workload runs: a frame of size
// 2^31−1, an array count larger than the bytes left and an unknown API key close the
// connection; a batch of message.max.bytes+1 bytes gets MESSAGE_TOO_LARGE, a flipped CRC byte
// CORRUPT_MESSAGE, acks=2 INVALID_REQUIRED_ACKS. Repeated, the broker's RSS grows < 10 MB; it
// stays alive and serving.
func TestFault14_BadInput(t *testing.T) {
	s := startScenario(t, "14-bad-input", nil)
	s.all.waitAcks(t, -1, 500, time.Minute, "before the bad input")
	victim := s.leader(0)
	addr := s.c.Broker(victim).Addr
	pid := s.c.Broker(victim).Pid()
	regBefore := s.registration(victim)
	failures := map[string]int{}
	round := func() {
		for _, f := range badInputRound(addr, s.topic) {
			failures[f]++
		}
	}
	// Warm up (the first 1 MiB batch sizes the broker's buffers), then measure.
	round()
	round()
	before, err := rssBytes(pid)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 25
	for i := 0; i < rounds; i++ {
		round()
	}
	after, err := rssBytes(pid)
	if err != nil {
		t.Fatalf("broker %d (pid %d) after the bad input: %v", victim, pid, err)
	}
	for f, n := range failures {
		t.Errorf("%s (%d of %d rounds)", f, n, rounds+2)
	}
	s.extra = append(s.extra, fmt.Sprintf("bad_answers=%d", len(failures)))
	growth := after - before
	t.Logf("broker %d RSS %.1f MB -> %.1f MB over %d rounds of bad input", victim, float64(before)/(1<<20), float64(after)/(1<<20), rounds)
	if growth >= 10<<20 {
		t.Errorf("broker %d's RSS grew %.1f MB over %d rounds of bad input, want < 10 MB", victim, float64(growth)/(1<<20), rounds)
	}
	s.extra = append(s.extra, fmt.Sprintf("rss_growth=%.1fMB", float64(growth)/(1<<20)))

	if !s.c.Broker(victim).Running() || s.c.Broker(victim).Pid() != pid {
		t.Fatalf("broker %d died on bad input:\n%s", victim, s.c.Broker(victim).Tail(30))
	}
	_, regAfter, err := s.c.ZK.Get("/brokers/ids/" + cluster.Itoa32(victim))
	if err != nil || regAfter.Czxid != regBefore {
		t.Errorf("broker %d lost its registration during the bad input: %v", victim, err)
	}
	s.all.waitAcks(t, 0, 200, waitLong, "on partition 0 after the bad input")
	s.refused = refusedValues
	s.finish()
}

// badInputRound sends each kind of bad input once to the broker at addr and returns what went
// wrong (empty when every answer was the expected one).
func badInputRound(addr, topic string) []string {
	var bad []string
	// A frame claiming 2^31−1 bytes: far above socket.request.max.bytes.
	huge := []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 3, 0, 0, 0, 1}
	bad = append(bad, expectClosed(addr, huge, "frame of size 2^31-1")...)

	// A Produce request whose topics array claims 2^30 entries with one present.
	body := produceBody(topic, -1, cluster.EncodeBatch(0, -1, time.Now().UnixMilli(), []byte("x")))
	// Produce v7 body: transactional_id (int16 -1), acks int16, timeout int32, then the count.
	binary.BigEndian.PutUint32(body[8:], 1<<30)
	bad = append(bad, expectClosed(addr, frame(0, 7, body), "array count larger than the bytes left")...)

	// An API key no broker knows.
	bad = append(bad, expectClosed(addr, frame(32000, 0, nil), "unknown API key 32000")...)

	// Well-formed requests the broker must refuse per partition. They go out as raw frames:
	// kgo rewrites a ProduceRequest's acks to the client's own setting.
	bad = append(bad, expectCode(addr, produceBody(topic, -1, oversizedBatch(1048588+1)), kerr.MessageTooLarge, "batch of message.max.bytes+1 bytes")...)
	crc := cluster.EncodeBatch(0, -1, time.Now().UnixMilli(), []byte("refused-crc"))
	crc[17] ^= 0x5a // first byte of the CRC-32C
	bad = append(bad, expectCode(addr, produceBody(topic, -1, crc), kerr.CorruptMessage, "flipped CRC byte")...)
	// Batches Kafka 2.4's LogValidator refuses with INVALID_RECORD (docs/kafka-facts.md §13),
	// each with a valid CRC: a 72-byte batch claiming 2^31-1 records, gzip flagged over random
	// bytes, compression id 7.
	now := time.Now().UnixMilli()
	claims := cluster.EncodeBatch(0, -1, now, []byte("rf72"))
	binary.BigEndian.PutUint32(claims[23:], math.MaxInt32-1) // lastOffsetDelta
	binary.BigEndian.PutUint32(claims[57:], math.MaxInt32)   // records count
	bad = append(bad, expectCode(addr, produceBody(topic, -1, resealBatch(claims)), kerr.InvalidRecord, "72-byte batch claiming 2^31-1 records")...)
	random := make([]byte, 200)
	rand.New(rand.NewSource(now)).Read(random)
	gz := append(cluster.EncodeBatch(0, -1, now, []byte("x"))[:61], random...)
	binary.BigEndian.PutUint32(gz[8:], uint32(len(gz)-12))
	gz[22] = 1 // attributes: gzip
	bad = append(bad, expectCode(addr, produceBody(topic, -1, resealBatch(gz)), kerr.InvalidRecord, "gzip over random bytes")...)
	codec7 := cluster.EncodeBatch(0, -1, now, []byte("refused-codec7"))
	codec7[22] = 7
	bad = append(bad, expectCode(addr, produceBody(topic, -1, resealBatch(codec7)), kerr.InvalidRecord, "compression id 7")...)
	// CreateTopics with 2^31-1 partitions, validate_only: refused at once, nothing allocated.
	bad = append(bad, expectCreateTopicsCode(addr, math.MaxInt32, kerr.InvalidPartitions, "CreateTopics of 2^31-1 partitions")...)
	acks2 := cluster.EncodeBatch(0, -1, time.Now().UnixMilli(), []byte("acks2"))
	bad = append(bad, expectCode(addr, produceBody(topic, 2, acks2), kerr.InvalidRequiredAcks, "acks=2")...)
	return bad
}

// produceBody encodes a Produce v7 request body (through kmsg) for partition 0 of topic.
func produceBody(topic string, acks int16, records []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req.AppendTo(nil)
}

// frame builds a request frame with a v1 header (api key, version, correlation id, client id)
// around body.
func frame(key, version int16, body []byte) []byte {
	const clientID = "faults"
	b := make([]byte, 4, 4+10+len(clientID)+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// expectClosed writes raw bytes on a fresh connection and expects the broker to close it (EOF
// or reset) within 10 s without answering.
func expectClosed(addr string, raw []byte, what string) []string {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return []string{fmt.Sprintf("%s: dial %s: %v", what, addr, err)}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(raw); err != nil && !closedErr(err) {
		return []string{fmt.Sprintf("%s: write: %v", what, err)}
	}
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	switch {
	case n > 0:
		return []string{fmt.Sprintf("%s: the broker answered (%x...) instead of closing the connection", what, buf[:min(n, 8)])}
	case closedErr(err):
		return nil
	default:
		return []string{fmt.Sprintf("%s: the connection was not closed within 10 s: %v", what, err)}
	}
}

func closedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// expectCode sends a Produce v7 body as one raw frame on a fresh connection, decodes the answer
// with kmsg and expects partition 0's error code to be want.
func expectCode(addr string, body []byte, want *kerr.Error, what string) []string {
	data, errs := roundTrip(addr, frame(0, 7, body), what)
	if errs != nil {
		return errs
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	if err := resp.ReadFrom(data); err != nil {
		return []string{fmt.Sprintf("%s: decoding the answer: %v", what, err)}
	}
	for _, tr := range resp.Topics {
		for _, pr := range tr.Partitions {
			if got := kerr.ErrorForCode(pr.ErrorCode); !errors.Is(got, want) {
				return []string{fmt.Sprintf("%s: partition error %v, want %v", what, got, want)}
			}
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: the Produce answer lacks the partition", what)}
}

// refusedValues are the values of row 14's refused batches that a consumer could read if one
// were appended (checker X).
var refusedValues = []string{"refused-crc", "rf72", "refused-codec7"}

// resealBatch sets a batch's CRC-32C (over attributes..end) after a change.
func resealBatch(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// expectCreateTopicsCode sends CreateTopics v3 (validate_only) for one topic of n partitions
// as a raw frame and expects the topic's error code to be want within 20 s.
func expectCreateTopicsCode(addr string, n int32, want *kerr.Error, what string) []string {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 3
	req.TimeoutMillis = 5000
	req.ValidateOnly = true
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = "faults-14-huge"
	rt.NumPartitions = n
	rt.ReplicationFactor = 3
	req.Topics = append(req.Topics, rt)
	data, errs := roundTrip(addr, frame(19, 3, req.AppendTo(nil)), what)
	if errs != nil {
		return errs
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(data); err != nil {
		return []string{fmt.Sprintf("%s: decoding the answer: %v", what, err)}
	}
	if len(resp.Topics) != 1 {
		return []string{fmt.Sprintf("%s: %d topics in the answer", what, len(resp.Topics))}
	}
	if got := kerr.ErrorForCode(resp.Topics[0].ErrorCode); !errors.Is(got, want) {
		return []string{fmt.Sprintf("%s: error %v, want %v", what, got, want)}
	}
	return nil
}

// roundTrip writes one raw request frame on a fresh connection and returns the answer's body
// (after the correlation id), or what went wrong.
func roundTrip(addr string, raw []byte, what string) ([]byte, []string) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: dial %s: %v", what, addr, err)}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		return nil, []string{fmt.Sprintf("%s: write: %v", what, err)}
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, []string{fmt.Sprintf("%s: no answer: %v", what, err)}
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return nil, []string{fmt.Sprintf("%s: answer of %d bytes", what, n)}
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(conn, data); err != nil {
		return nil, []string{fmt.Sprintf("%s: reading the answer: %v", what, err)}
	}
	return data[4:], nil
}

// oversizedBatch returns one valid record batch of exactly size bytes (log overhead included).
func oversizedBatch(size int) []byte {
	n := size - 100
	for i := 0; i < 10; i++ {
		raw := cluster.EncodeBatch(0, -1, time.Now().UnixMilli(), make([]byte, n))
		if len(raw) == size {
			return raw
		}
		n += size - len(raw)
	}
	panic(fmt.Sprintf("no batch of %d bytes", size))
}
