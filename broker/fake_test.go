package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore"
	"github.com/isrbroker/isrbroker/logstore/record"
	rm "github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// fakePart is one partition of fakeReplicas: a list of batches with offsets stamped.
type fakePart struct {
	leader  bool
	batches [][]byte
	bases   []int64
	next    int64
	// preferred, when redirect is set, is the preferred read replica answered to consumer
	// fetches with client metadata (KIP-392).
	preferred int32
	redirect  bool
}

// fakeReplicas is an in-memory replica manager: every append is committed at once (HW =
// LEO); acks=-1 appends wait on gate when set.
type fakeReplicas struct {
	mu          sync.Mutex
	parts       map[rm.TopicPartition]*fakePart
	notify      chan struct{} // closed and replaced on each append
	maxMsg      int
	gate        chan struct{} // when non-nil, acks=-1 completions wait for it to close
	appends     int
	lastLAI     rm.LeaderAndIsrRequest
	lastStop    rm.StopReplicaRequest
	ctrlEpoch   int32
	immediate   bool // fetch never waits (fuzzing)
	lastListRID int32
	lastClient  *rm.ClientMetadata // the last fetch's client metadata
}

func newFakeReplicas() *fakeReplicas {
	return &fakeReplicas{parts: map[rm.TopicPartition]*fakePart{}, notify: make(chan struct{}), maxMsg: 1 << 20}
}

func (f *fakeReplicas) addPartition(topic string, p int32, leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[tp(topic, p)] == nil {
		f.parts[tp(topic, p)] = &fakePart{leader: leader}
	}
}

func (f *fakeReplicas) appendCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appends
}

func (f *fakeReplicas) AppendRecords(timeout time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult)) {
	f.mu.Lock()
	out := make(map[rm.TopicPartition]rm.ProduceResult, len(entries))
	for k, b := range entries {
		p := f.parts[k]
		res := rm.ProduceResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
		switch {
		case p == nil:
			res.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case !p.leader:
			res.ErrorCode = kerr.NotLeaderForPartition.Code
		case len(b) > f.maxMsg:
			res.ErrorCode = kerr.MessageTooLarge.Code
		case !crcOK(b):
			// The real log checks the CRC-32C on append (logstore.AppendAsLeader).
			res.ErrorCode = kerr.CorruptMessage.Code
		default:
			nb := append([]byte(nil), b...)
			binary.BigEndian.PutUint64(nb, uint64(p.next))
			n := int64(int32(binary.BigEndian.Uint32(nb[23:]))) + 1
			p.batches = append(p.batches, nb)
			p.bases = append(p.bases, p.next)
			res.BaseOffset, res.LogStartOffset = p.next, 0
			p.next += n
		}
		out[k] = res
	}
	f.appends++
	close(f.notify)
	f.notify = make(chan struct{})
	gate := f.gate
	f.mu.Unlock()
	if acks == -1 && gate != nil {
		go func() { <-gate; done(out) }()
		return
	}
	done(out)
}

func (f *fakeReplicas) read(p rm.FetchParams) ([]rm.FetchPartitionResult, int, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastClient = p.Client
	var out []rm.FetchPartitionResult
	total := 0
	for _, fp := range p.Partitions {
		res := rm.FetchPartitionResult{TopicPartition: fp.TopicPartition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
		part := f.parts[fp.TopicPartition]
		switch {
		case part == nil:
			res.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case !part.leader && p.Client == nil: // a follower serves consumers with client metadata (KIP-392)
			res.ErrorCode = kerr.NotLeaderForPartition.Code
		case part.redirect && p.Client != nil:
			res.HighWatermark, res.LastStableOffset, res.LogStartOffset = part.next, part.next, 0
			res.HasPreferredReadReplica, res.PreferredReadReplica = true, part.preferred
		case fp.FetchOffset < 0 || fp.FetchOffset > part.next:
			res.ErrorCode = kerr.OffsetOutOfRange.Code
		default:
			res.HighWatermark, res.LastStableOffset, res.LogStartOffset = part.next, part.next, 0
			for i, b := range part.batches {
				n := int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
				if part.bases[i]+n > fp.FetchOffset {
					res.Records = append(res.Records, b...)
				}
			}
			total += len(res.Records)
		}
		out = append(out, res)
	}
	return out, total, f.notify
}

func (f *fakeReplicas) FetchMessages(p rm.FetchParams, done func([]rm.FetchPartitionResult)) {
	res, n, ch := f.read(p)
	if f.immediate || n >= int(p.MinBytes) || p.MaxWait <= 0 {
		done(res)
		return
	}
	go func() {
		t := time.NewTimer(p.MaxWait)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				res, _, _ = f.read(p)
				done(res)
				return
			case <-ch:
				res, n, ch = f.read(p)
				if n >= int(p.MinBytes) {
					done(res)
					return
				}
			}
		}
	}()
}

func (f *fakeReplicas) ListOffsets(replicaID int32, _ int8, parts []rm.ListOffsetsPartition) []rm.ListOffsetsResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastListRID = replicaID
	var out []rm.ListOffsetsResult
	for _, lp := range parts {
		res := rm.ListOffsetsResult{TopicPartition: lp.TopicPartition, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
		part := f.parts[lp.TopicPartition]
		switch {
		case part == nil:
			res.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case lp.Timestamp == -2:
			res.Offset, res.LeaderEpoch = 0, 0
		default:
			res.Offset, res.LeaderEpoch = part.next, 0
		}
		out = append(out, res)
	}
	return out
}

func (f *fakeReplicas) LastOffsetForLeaderEpoch(_ int32, parts []rm.EpochEndOffsetRequest) []rm.EpochEndOffsetResult {
	var out []rm.EpochEndOffsetResult
	for _, p := range parts {
		out = append(out, rm.EpochEndOffsetResult{TopicPartition: p.TopicPartition, LeaderEpoch: p.LeaderEpoch, EndOffset: 42})
	}
	return out
}

func (f *fakeReplicas) BecomeLeaderOrFollower(req rm.LeaderAndIsrRequest) rm.LeaderAndIsrResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastLAI = req
	out := rm.LeaderAndIsrResult{Partitions: map[rm.TopicPartition]int16{}}
	if req.ControllerEpoch < f.ctrlEpoch {
		out.ErrorCode = kerr.StaleControllerEpoch.Code
		return out
	}
	for _, p := range req.Partitions {
		out.Partitions[p.TopicPartition] = 0
	}
	return out
}

func (f *fakeReplicas) StopReplicas(req rm.StopReplicaRequest) rm.StopReplicaResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastStop = req
	out := rm.StopReplicaResult{Partitions: map[rm.TopicPartition]int16{}}
	for _, p := range req.Partitions {
		out.Partitions[p] = 0
	}
	return out
}

func (f *fakeReplicas) CheckControllerEpoch(_, controllerEpoch int32, _ int64) int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if controllerEpoch < f.ctrlEpoch {
		return kerr.StaleControllerEpoch.Code
	}
	f.ctrlEpoch = controllerEpoch
	return 0
}

// fakeAdmin validates like zkcoord and, playing the controller, makes this broker the
// leader of every new partition and tells the server's metadata cache (unless silent).
type fakeAdmin struct {
	mu      sync.Mutex
	topics  map[string]int32
	brokers int
	silent  bool // never "elect" leaders: CreateTopics/DeleteTopics waits time out
	srv     *Server
	reps    *fakeReplicas
	fail    error // when set, every call fails with it (fuzzing)
}

func (a *fakeAdmin) CreateTopic(_ context.Context, spec zkcoord.TopicSpec, validateOnly bool) (map[int32][]int32, error) {
	if a.fail != nil {
		return nil, a.fail
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !validTopicName(spec.Name) {
		return nil, zkcoord.ErrInvalidTopic
	}
	if _, ok := a.topics[spec.Name]; ok {
		return nil, zkcoord.ErrTopicExists
	}
	if spec.NumPartitions <= 0 {
		return nil, zkcoord.ErrInvalidPartitions
	}
	if spec.NumPartitions > 1<<16 {
		// Refuse to loop towards a huge count: the server must have refused it first.
		return nil, fmt.Errorf("fake admin: asked to assign %d partitions", spec.NumPartitions)
	}
	if spec.ReplicationFactor <= 0 || int(spec.ReplicationFactor) > a.brokers {
		return nil, zkcoord.ErrInvalidReplicationFactor
	}
	assign := map[int32][]int32{}
	for p := int32(0); p < spec.NumPartitions; p++ {
		assign[p] = []int32{1}
	}
	if validateOnly {
		return assign, nil
	}
	a.topics[spec.Name] = spec.NumPartitions
	if !a.silent {
		for p := int32(0); p < spec.NumPartitions; p++ {
			a.reps.addPartition(spec.Name, p, true)
		}
		go a.srv.Metadata().Update(updateMetadataReq(a.srv, map[string]int32{spec.Name: spec.NumPartitions}, 1))
	}
	return assign, nil
}

func (a *fakeAdmin) DeleteTopic(_ context.Context, topic string) error {
	if a.fail != nil {
		return a.fail
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.topics[topic]
	if !ok {
		return zkcoord.ErrUnknownTopic
	}
	delete(a.topics, topic)
	if !a.silent {
		go a.srv.Metadata().Update(updateMetadataReq(a.srv, map[string]int32{topic: n}, LeaderDuringDelete))
	}
	return nil
}

// updateMetadataReq describes broker 1 (this server, PLAINTEXT listener) as the only live
// broker and controller, with leader for the given topics' partitions.
func updateMetadataReq(s *Server, topics map[string]int32, leader int32) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 6
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 1, 1, 1
	host, port := splitAddr(s.Addrs()[0])
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = 1
	ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
	ep.Host, ep.Port, ep.ListenerName = host, port, "PLAINTEXT"
	lb.Endpoints = append(lb.Endpoints, ep)
	req.LiveBrokers = append(req.LiveBrokers, lb)
	for t, n := range topics {
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = t
		for p := int32(0); p < n; p++ {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Partition, ps.Leader, ps.LeaderEpoch = p, leader, 0
			ps.ISR, ps.Replicas = []int32{1}, []int32{1}
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = append(req.TopicStates, ts)
	}
	return req
}

func splitAddr(a net.Addr) (string, int32) {
	h, p, _ := net.SplitHostPort(a.String())
	n, _ := strconv.Atoi(p)
	return h, int32(n)
}

type testEnv struct {
	srv   *Server
	reps  *fakeReplicas
	admin *fakeAdmin
	addr  string
}

// startServer runs a Server on 127.0.0.1:0 with the fakes; mod adjusts the config.
func startServer(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	return startServerWith(t, mod, nil)
}

// startServerWith is startServer with the collaborators set by wrap (nil: the fakes, the
// admin also allocating producer ids, and no other capability).
func startServerWith(t testing.TB, mod func(*Config), wrap func(*fakeAdmin, *Deps)) *testEnv {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	cfg := Config{
		BrokerID: 1, ClusterID: "test-cluster",
		Listeners:             []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 0}},
		SocketRequestMaxBytes: 1 << 20,
		AutoCreateTopics:      true, NumPartitions: 1, DefaultReplicationFactor: 1,
		Log: log,
	}
	if mod != nil {
		mod(&cfg)
	}
	reps := newFakeReplicas()
	admin := &fakeAdmin{topics: map[string]int32{}, brokers: 1, reps: reps}
	deps := Deps{Replicas: reps, Admin: admin, ProducerIDs: admin}
	if wrap != nil {
		wrap(admin, &deps)
	}
	srv := New(cfg, deps)
	admin.srv = srv
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		_ = srv.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return &testEnv{srv: srv, reps: reps, admin: admin, addr: srv.Addrs()[0].String()}
}

// createTopic makes topic known to the fakes and the metadata cache (leader: this broker).
func (e *testEnv) createTopic(topic string, n int32) {
	e.admin.mu.Lock()
	e.admin.topics[topic] = n
	e.admin.mu.Unlock()
	for p := int32(0); p < n; p++ {
		e.reps.addPartition(topic, p, true)
	}
	e.srv.Metadata().Update(updateMetadataReq(e.srv, map[string]int32{topic: n}, 1))
}

func dial(t testing.TB, addr string) *kproto.Conn {
	t.Helper()
	c, err := kproto.Dial(context.Background(), addr, "", "test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func roundTrip[R kmsg.Response](t testing.TB, c *kproto.Conn, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Ask at the nearest advertised version (docs/compatibility.md): tests written for a
	// version above the served range exercise the highest served one.
	if h := lookupHandler(req.Key()); h != nil {
		req.SetVersion(min(max(req.GetVersion(), h.min), h.max))
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp.(R)
}

// makeBatch builds a valid record batch v2 of n records with the given value.
func makeBatch(n int, value []byte) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // key: null
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, record.BatchHeaderSize, record.BatchHeaderSize+len(recs))
	binary.BigEndian.PutUint32(b[8:], uint32(record.BatchMinLength+len(recs)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	now := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint64(b[27:], now)
	binary.BigEndian.PutUint64(b[35:], now)
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func produceReq(version, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// checkFor polls cond until it holds or the deadline passes.
func checkFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not synchronisation
	}
}

// crcOK checks a batch's CRC-32C the way the log does on append.
func crcOK(b []byte) bool {
	_, err := logstore.BatchHeaders(b)
	return err == nil
}
