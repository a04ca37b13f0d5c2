package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// rawConn is a client connection that writes raw frames and reads raw response frames.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (r *rawConn) send(req kmsg.Request, corr int32) {
	r.t.Helper()
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// recv reads one response frame and returns its correlation id and body (after the
// response header; flexible says whether a tag byte follows the correlation id).
func (r *rawConn) recv(flexible bool) (int32, []byte) {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := kproto.ReadFrame(r.nc, 1<<30)
	if err != nil {
		r.t.Fatalf("reading response: %v", err)
	}
	body := f[4:]
	if flexible {
		body = body[1:]
	}
	return int32(binary.BigEndian.Uint32(f)), body
}

// expectClosed asserts the server closes the connection without answering.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(r.nc)
	if err != nil {
		r.t.Fatalf("expected EOF, got %v", err)
	}
	if len(b) != 0 {
		r.t.Fatalf("expected the connection closed without an answer, got %d bytes", len(b))
	}
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestApiVersionsAllVersions(t *testing.T) {
	e := startServer(t, nil)
	c := dial(t, e.addr)
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := roundTrip[*kmsg.ApiVersionsResponse](t, c, req)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		checkAdvertised(t, resp.ApiKeys)
	}
}

func checkAdvertised(t *testing.T, keys []kmsg.ApiVersionsResponseApiKey) {
	t.Helper()
	want := documentedKeys(t, "docs/compatibility.md", docSection(t, "../docs/compatibility.md", "")) // checked against the registry
	if len(keys) != len(want) {
		t.Fatalf("advertised %d keys, want %d: %+v", len(keys), len(want), keys)
	}
	for _, k := range keys {
		w, ok := want[k.ApiKey]
		if !ok || w != [2]int16{k.MinVersion, k.MaxVersion} {
			t.Fatalf("key %d advertised %d-%d, want %v", k.ApiKey, k.MinVersion, k.MaxVersion, w)
		}
	}
}

// TestApiVersionsUnsupportedVersion: KIP-511, a v5 request gets a v0 body with error 35
// and the key list, and the connection stays usable (kgo's downgrade).
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	e := startServer(t, nil)
	rc := dialRaw(t, e.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	rc.send(req, 7)
	corr, body := rc.recv(false) // ApiVersions responses always use header v0
	if corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
	if got := int16(binary.BigEndian.Uint16(body)); got != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want 35", got)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.Version = 0
	if err := v0.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	checkAdvertised(t, v0.ApiKeys)

	req.Version = 3
	rc.send(req, 8)
	corr, body = rc.recv(false)
	v3 := kmsg.NewPtrApiVersionsResponse()
	v3.Version = 3
	if err := v3.ReadFrom(body); err != nil || corr != 8 || v3.ErrorCode != 0 {
		t.Fatalf("v3 after downgrade: corr %d err %v code %d", corr, err, v3.ErrorCode)
	}
}

func TestProduceErrors(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 1)
	e.reps.addPartition("follower", 0, false)
	e.reps.maxMsg = 500
	c := dial(t, e.addr)
	good := makeBatch(2, []byte("hello"))
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	cases := []struct {
		name  string
		req   *kmsg.ProduceRequest
		want  int16
		after func(t *testing.T, rp kmsg.ProduceResponseTopicPartition)
	}{
		{"ok", produceReq(9, 1, "t", 0, good), 0, func(t *testing.T, rp kmsg.ProduceResponseTopicPartition) {
			if rp.BaseOffset != 0 {
				t.Fatalf("base offset %d", rp.BaseOffset)
			}
		}},
		{"ok v3 second batch", produceReq(3, -1, "t", 0, good), 0, func(t *testing.T, rp kmsg.ProduceResponseTopicPartition) {
			if rp.BaseOffset != 2 {
				t.Fatalf("base offset %d", rp.BaseOffset)
			}
		}},
		{"UNKNOWN_TOPIC_OR_PARTITION", produceReq(7, 1, "t", 9, good), kerr.UnknownTopicOrPartition.Code, nil},
		{"NOT_LEADER_OR_FOLLOWER", produceReq(7, 1, "follower", 0, good), kerr.NotLeaderForPartition.Code, nil},
		{"MESSAGE_TOO_LARGE", produceReq(8, 1, "t", 0, makeBatch(1, make([]byte, 600))), kerr.MessageTooLarge.Code, nil},
		{"CORRUPT_MESSAGE crc", produceReq(9, 1, "t", 0, corrupt), kerr.CorruptMessage.Code, nil},
		{"INVALID_RECORD truncated", produceReq(9, 1, "t", 0, good[:40]), kerr.InvalidRecord.Code, nil},
		{"INVALID_RECORD two batches", produceReq(9, 1, "t", 0, append(append([]byte(nil), good...), good...)), kerr.InvalidRecord.Code, nil},
		{"INVALID_RECORD magic 1", produceReq(7, 1, "t", 0, withByte(good, 16, 1)), kerr.InvalidRecord.Code, nil},
		{"CORRUPT_MESSAGE length below the header", produceReq(7, 1, "t", 0, withByte(good, 11, 20)), kerr.CorruptMessage.Code, nil},
		{"INVALID_RECORD compression id 7", produceReq(7, 1, "t", 0, withByte(good, 22, 7)), kerr.InvalidRecord.Code, nil},
		{"UNSUPPORTED_COMPRESSION_TYPE zstd at v6", produceReq(6, 1, "t", 0, withByte(good, 22, 4)), kerr.UnsupportedCompressionType.Code, nil},
		{"zstd at v7 reaches the log", produceReq(7, 1, "t", 0, withByte(good, 22, 4)), 0, nil},
		{"INVALID_REQUIRED_ACKS", produceReq(9, 2, "t", 0, good), kerr.InvalidRequiredAcks.Code, nil},
		{"INVALID_TOPIC_EXCEPTION", produceReq(9, 1, "bad/topic", 0, good), kerr.InvalidTopicException.Code, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.reps.appendCount()
			resp := roundTrip[*kmsg.ProduceResponse](t, c, tc.req)
			rp := resp.Topics[0].Partitions[0]
			if rp.ErrorCode != tc.want {
				t.Fatalf("error %d (%v), want %d", rp.ErrorCode, kerr.ErrorForCode(rp.ErrorCode), tc.want)
			}
			if tc.want == kerr.InvalidRequiredAcks.Code && e.reps.appendCount() != before {
				t.Fatal("INVALID_REQUIRED_ACKS must not append")
			}
			if tc.after != nil {
				tc.after(t, rp)
			}
		})
	}
}

// withByte returns a copy of batch with byte i set to v and the CRC-32C recomputed.
func withByte(batch []byte, i int, v byte) []byte {
	b := append([]byte(nil), batch...)
	b[i] = v
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestProduceAcksZeroNoResponse: acks=0 gets no response; the next request's answer is
// the first thing on the wire. An acks=0 error closes the connection (Kafka's way).
func TestProduceAcksZeroNoResponse(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 1)
	rc := dialRaw(t, e.addr)
	rc.send(produceReq(7, 0, "t", 0, makeBatch(1, []byte("x"))), 1)
	rc.send(kmsg.NewPtrMetadataRequest(), 2)
	corr, _ := rc.recv(false)
	if corr != 2 {
		t.Fatalf("first response has correlation id %d, want 2 (acks=0 is not answered)", corr)
	}
	if e.reps.appendCount() != 1 {
		t.Fatalf("appends %d", e.reps.appendCount())
	}
	rc.send(produceReq(7, 0, "nope", 0, makeBatch(1, []byte("x"))), 3)
	rc.expectClosed()
}

// TestResponsesInOrderWithParkedProduce: an acks=-1 produce parked in the purgatory does
// not stop the reader (the next produce is appended meanwhile), yet responses go out in
// request order.
func TestResponsesInOrderWithParkedProduce(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 2)
	gate := make(chan struct{})
	e.reps.mu.Lock()
	e.reps.gate = gate
	e.reps.mu.Unlock()
	rc := dialRaw(t, e.addr)
	rc.send(produceReq(7, -1, "t", 0, makeBatch(1, []byte("slow"))), 1)
	rc.send(produceReq(7, 1, "t", 1, makeBatch(1, []byte("fast"))), 2)
	av := kmsg.NewPtrApiVersionsRequest()
	rc.send(av, 3)
	checkFor(t, 5*time.Second, "second produce appended while the first is parked", func() bool { return e.reps.appendCount() == 2 })
	_ = rc.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := rc.nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("a response was written before the parked produce completed")
	}
	close(gate)
	for want := int32(1); want <= 3; want++ {
		corr, _ := rc.recv(false)
		if corr != want {
			t.Fatalf("response %d has correlation id %d", want, corr)
		}
	}
}

func TestFetchErrorsAndData(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 1)
	e.reps.addPartition("follower", 0, false)
	c := dial(t, e.addr)
	roundTrip[*kmsg.ProduceResponse](t, c, produceReq(9, 1, "t", 0, makeBatch(3, []byte("abc"))))
	fetch := func(version int16, topic string, offset int64, sessionEpoch int32) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = version, -1, 1<<20, sessionEpoch
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return roundTrip[*kmsg.FetchResponse](t, c, req)
	}
	for _, v := range []int16{4, 11, 12} {
		resp := fetch(v, "t", 0, -1)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 3 || p.LastStableOffset != 3 || len(p.RecordBatches) == 0 {
			t.Fatalf("v%d: %+v", v, p)
		}
		if v >= 7 && resp.SessionID != 0 {
			t.Fatalf("session id %d", resp.SessionID)
		}
	}
	for _, v := range []int16{4, 11, 12} {
		// Nothing past the HW: an empty record set must be encoded with size 0, not null (-1),
		// which librdkafka rejects as "invalid MessageSetSize -1".
		if p := fetch(v, "t", 3, -1).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.RecordBatches == nil {
			t.Fatalf("v%d empty fetch: code %d, records nil = %v", v, p.ErrorCode, p.RecordBatches == nil)
		}
	}
	if p := fetch(12, "t", 100, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("OFFSET_OUT_OF_RANGE: got %d", p.ErrorCode)
	}
	if p := fetch(12, "x", 0, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("UNKNOWN_TOPIC_OR_PARTITION: got %d", p.ErrorCode)
	}
	// Before v11 (no client metadata) consumers read from the leader only (KIP-392).
	if p := fetch(10, "follower", 0, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("NOT_LEADER_OR_FOLLOWER: got %d", p.ErrorCode)
	}
	if resp := fetch(12, "t", 0, 5); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("FETCH_SESSION_ID_NOT_FOUND: got %d", resp.ErrorCode)
	}
	if m := e.srv.cfg.Registry.Get(MetricBytesOut); m == nil || m.(interface{ Count() int64 }).Count() == 0 {
		t.Fatal("BytesOutPerSec not marked")
	}
}

// TestFetchMaxBytes: the response respects max_bytes across partitions at batch
// boundaries, always keeping the first batch of the first partition with data (KIP-74).
func TestFetchMaxBytes(t *testing.T) {
	b := makeBatch(1, make([]byte, 100))
	two := append(append([]byte(nil), b...), b...)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	results := []rm.FetchPartitionResult{
		{TopicPartition: tp("t", 0), Records: two},
		{TopicPartition: tp("t", 1), Records: two},
		{TopicPartition: tp("t", 2), Records: two},
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	n, _ := fillFetchResponse(resp, req, int32(len(b)/2), results)
	ps := resp.Topics[0].Partitions
	if len(ps[0].RecordBatches) != len(b) || len(ps[1].RecordBatches) != 0 || len(ps[2].RecordBatches) != 0 || n != len(b) {
		t.Fatalf("tiny max_bytes: %d %d %d", len(ps[0].RecordBatches), len(ps[1].RecordBatches), len(ps[2].RecordBatches))
	}
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	fillFetchResponse(resp, req, int32(3*len(b)), results)
	ps = resp.Topics[0].Partitions
	if len(ps[0].RecordBatches) != 2*len(b) || len(ps[1].RecordBatches) != len(b) || len(ps[2].RecordBatches) != 0 {
		t.Fatalf("3-batch max_bytes: %d %d %d", len(ps[0].RecordBatches), len(ps[1].RecordBatches), len(ps[2].RecordBatches))
	}
	// partition_max_bytes cuts at a batch boundary too.
	req.Topics[0].Partitions[0].PartitionMaxBytes = int32(len(b) + 10)
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	fillFetchResponse(resp, req, 1<<20, results)
	if got := len(resp.Topics[0].Partitions[0].RecordBatches); got != len(b) {
		t.Fatalf("partition_max_bytes: %d", got)
	}
}

func TestListOffsetsAndEpochs(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 1)
	c := dial(t, e.addr)
	roundTrip[*kmsg.ProduceResponse](t, c, produceReq(9, 1, "t", 0, makeBatch(5, []byte("v"))))
	for _, v := range []int16{1, 4, 6} { // v0 is not served (docs/compatibility.md)
		for _, ts := range []int64{-2, -1} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version, req.ReplicaID = v, -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp, rp.MaxNumOffsets = ts, 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := roundTrip[*kmsg.ListOffsetsResponse](t, c, req)
			p := resp.Topics[0].Partitions[0]
			want := int64(0)
			if ts == -1 {
				want = 5
			}
			got := p.Offset
			if p.ErrorCode != 0 || got != want {
				t.Fatalf("v%d ts %d: offset %d err %d, want %d", v, ts, got, p.ErrorCode, want)
			}
		}
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = 3, 2
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.LeaderEpoch = 3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := roundTrip[*kmsg.OffsetForLeaderEpochResponse](t, c, req)
	if p := resp.Topics[0].Partitions[0]; p.EndOffset != 42 || p.LeaderEpoch != 3 {
		t.Fatalf("OffsetForLeaderEpoch: %+v", p)
	}
}

func TestMetadata(t *testing.T) {
	e := startServer(t, func(c *Config) { c.AutoCreateTopics = false })
	e.createTopic("t", 2)
	c := dial(t, e.addr)
	for _, v := range []int16{0, 1, 4, 9, 11} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		if v >= 1 {
			req.Topics = nil // all
		}
		resp := roundTrip[*kmsg.MetadataResponse](t, c, req)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if v >= 1 && resp.ControllerID != 1 {
			t.Fatalf("controller %d", resp.ControllerID)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "test-cluster") {
			t.Fatal("cluster id")
		}
	}
	empty := kmsg.NewPtrMetadataRequest()
	empty.Version, empty.Topics = 4, []kmsg.MetadataRequestTopic{}
	if resp := roundTrip[*kmsg.MetadataResponse](t, c, empty); len(resp.Topics) != 0 {
		t.Fatalf("v4 empty list must mean no topics, got %d", len(resp.Topics))
	}
	ask := func(name string, allow bool) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 9, allow
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &name
		req.Topics = append(req.Topics, mt)
		return roundTrip[*kmsg.MetadataResponse](t, c, req).Topics[0].ErrorCode
	}
	if code := ask("missing", true); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("UNKNOWN_TOPIC_OR_PARTITION: %d", code)
	}
	if code := ask("bad name", true); code != kerr.InvalidTopicException.Code {
		t.Fatalf("INVALID_TOPIC_EXCEPTION: %d", code)
	}
	// A partition whose leader is not alive → LEADER_NOT_AVAILABLE, leader -1.
	um := updateMetadataReq(e.srv, map[string]int32{"orphan": 1}, 7)
	e.srv.Metadata().Update(um)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 11
	name := "orphan"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &name
	req.Topics = append(req.Topics, mt)
	p := roundTrip[*kmsg.MetadataResponse](t, c, req).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.LeaderNotAvailable.Code || p.Leader != -1 {
		t.Fatalf("leaderless partition: %+v", p)
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	e := startServer(t, nil)
	c := dial(t, e.addr)
	ask := func(name string, allow bool) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 9, allow
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &name
		req.Topics = append(req.Topics, mt)
		return roundTrip[*kmsg.MetadataResponse](t, c, req).Topics[0].ErrorCode
	}
	if code := ask("auto", false); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("allow=false: %d", code)
	}
	if code := ask("auto", true); code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("auto-create answer: %d", code)
	}
	checkFor(t, 5*time.Second, "auto-created topic in metadata", func() bool { return ask("auto", true) == 0 })
}

func TestCreateDeleteTopics(t *testing.T) {
	e := startServer(t, nil)
	c := dial(t, e.addr)
	create := func(version int16, name string, parts int32, rf int16, timeout int32) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = version, timeout
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		req.Topics = append(req.Topics, rt)
		return roundTrip[*kmsg.CreateTopicsResponse](t, c, req).Topics[0]
	}
	// v4 is the highest served (docs/compatibility.md): the partition count is read back from
	// the metadata cache.
	if rt := create(4, "new", 3, 1, 5000); rt.ErrorCode != 0 || len(e.srv.Metadata().Snapshot().Topics["new"]) != 3 {
		t.Fatalf("create: %+v", rt)
	}
	if _, ok := e.srv.Metadata().Partition("new", 2); !ok {
		t.Fatal("CreateTopics answered before the partitions had leaders")
	}
	if rt := create(4, "defaults", -1, -1, 5000); rt.ErrorCode != 0 || len(e.srv.Metadata().Snapshot().Topics["defaults"]) != 1 {
		t.Fatalf("v4+ defaults: %+v", rt)
	}
	for _, tc := range []struct {
		name  string
		parts int32
		rf    int16
		want  int16
	}{
		{"new", 1, 1, kerr.TopicAlreadyExists.Code},
		{"p0", 0, 1, kerr.InvalidPartitions.Code},
		{"rf3", 1, 3, kerr.InvalidReplicationFactor.Code},
		{"bad*name", 1, 1, kerr.InvalidTopicException.Code},
	} {
		if rt := create(2, tc.name, tc.parts, tc.rf, 1000); rt.ErrorCode != tc.want || rt.ErrorMessage == nil {
			t.Fatalf("%s: %d, want %d", tc.name, rt.ErrorCode, tc.want)
		}
	}

	del := func(name string, timeout int32) int16 {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis, req.TopicNames = 5, timeout, []string{name}
		return roundTrip[*kmsg.DeleteTopicsResponse](t, c, req).Topics[0].ErrorCode
	}
	if code := del("new", 5000); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if _, ok := e.srv.Metadata().Snapshot().Topics["new"]; ok {
		t.Fatal("DeleteTopics answered before the topic left the metadata cache")
	}
	if code := del("new", 1000); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete unknown: %d", code)
	}

	// No controller answering: both wait for the timeout and say REQUEST_TIMED_OUT.
	e.admin.mu.Lock()
	e.admin.silent = true
	e.admin.mu.Unlock()
	if rt := create(6, "stuck", 1, 1, 100); rt.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("create without leaders: %d", rt.ErrorCode)
	}
	if code := del("defaults", 100); code != kerr.RequestTimedOut.Code {
		t.Fatalf("delete without controller: %d", code)
	}
}

func TestControllerRequests(t *testing.T) {
	e := startServer(t, nil)
	c := dial(t, e.addr)
	for _, v := range []int16{0, 1, 2, 4} {
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = v, 1, 3, 77
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas, ps.IsNew = "t", 4, 2, 9, []int32{2, 1}, []int32{2, 1}, true
		if v < 2 {
			req.PartitionStates = append(req.PartitionStates, ps)
		} else {
			ts := kmsg.NewLeaderAndISRRequestTopicState()
			ts.Topic = "t"
			ts.PartitionStates = append(ts.PartitionStates, ps)
			req.TopicStates = append(req.TopicStates, ts)
		}
		ll := kmsg.NewLeaderAndISRRequestLiveLeader()
		ll.BrokerID, ll.Host, ll.Port = 2, "127.0.0.2", 9092
		req.LiveLeaders = append(req.LiveLeaders, ll)
		resp := roundTrip[*kmsg.LeaderAndISRResponse](t, c, req)
		if resp.ErrorCode != 0 || len(resp.Partitions) != 1 || resp.Partitions[0].Topic != "t" || resp.Partitions[0].Partition != 4 {
			t.Fatalf("LeaderAndIsr v%d: %+v", v, resp)
		}
		e.reps.mu.Lock()
		got := e.reps.lastLAI
		e.reps.mu.Unlock()
		p := got.Partitions[0]
		wantEpoch := int64(-1)
		if v >= 2 {
			wantEpoch = 77
		}
		if got.BrokerEpoch != wantEpoch || p.Topic != "t" || p.Leader != 2 || p.LeaderEpoch != 9 || got.LiveLeaders[2] != "127.0.0.2:9092" || (v >= 1) != p.IsNew {
			t.Fatalf("LeaderAndIsr v%d converted to %+v", v, got)
		}
	}
	for _, v := range []int16{0, 1, 2} {
		req := kmsg.NewPtrStopReplicaRequest()
		req.Version, req.ControllerID, req.ControllerEpoch, req.DeletePartitions = v, 1, 3, true
		rt := kmsg.NewStopReplicaRequestTopic()
		rt.Topic = "t"
		if v == 0 {
			rt.Partition = 5
		} else {
			rt.Partitions = []int32{5, 6}
		}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.StopReplicaResponse](t, c, req)
		want := 2
		if v == 0 {
			want = 1
		}
		if resp.ErrorCode != 0 || len(resp.Partitions) != want || resp.Partitions[0].Partition != 5 {
			t.Fatalf("StopReplica v%d: %+v", v, resp)
		}
	}
	// UpdateMetadata: accepted at every version, a stale controller epoch changes nothing.
	for _, v := range []int16{0, 1, 3, 5, 6} {
		req := updateMetadataReq(e.srv, map[string]int32{"um": 1}, 1)
		req.Version = v
		if v < 5 {
			for _, ts := range req.TopicStates {
				for _, ps := range ts.PartitionStates {
					ps.Topic = ts.Topic
					req.PartitionStates = append(req.PartitionStates, ps)
				}
			}
			req.TopicStates = nil
		}
		if v == 0 {
			req.LiveBrokers[0].Host, req.LiveBrokers[0].Port = req.LiveBrokers[0].Endpoints[0].Host, req.LiveBrokers[0].Endpoints[0].Port
		}
		if resp := roundTrip[*kmsg.UpdateMetadataResponse](t, c, req); resp.ErrorCode != 0 {
			t.Fatalf("UpdateMetadata v%d: %d", v, resp.ErrorCode)
		}
		b := e.srv.Metadata().AliveBrokers()
		if len(b) != 1 {
			t.Fatalf("v%d brokers %+v", v, b)
		}
		if _, ok := b[0].Endpoint("PLAINTEXT"); !ok {
			t.Fatalf("v%d: no PLAINTEXT endpoint: %+v", v, b[0])
		}
		if _, ok := e.srv.Metadata().Partition("um", 0); !ok {
			t.Fatalf("v%d: partition not cached", v)
		}
	}
	stale := updateMetadataReq(e.srv, map[string]int32{"stale": 1}, 1)
	stale.ControllerEpoch = 0
	if resp := roundTrip[*kmsg.UpdateMetadataResponse](t, c, stale); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("stale UpdateMetadata: %d", resp.ErrorCode)
	}
	if _, ok := e.srv.Metadata().Partition("stale", 0); ok {
		t.Fatal("stale UpdateMetadata changed the cache")
	}
}

func TestMetadataCacheUpdateAndDelete(t *testing.T) {
	s := &Server{}
	_ = s
	m := NewMetadataCache()
	if m.ControllerID() != -1 {
		t.Fatal("empty cache controller")
	}
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version, req.ControllerID = 6, 3
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic = "a"
	for p := int32(0); p < 2; p++ {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.Leader, ps.ISR, ps.Replicas = p, 1, []int32{1}, []int32{1}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts}
	before := m.Snapshot()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		waited <- m.WaitFor(ctx, func(s *MetadataSnapshot) bool { _, ok := s.Topics["a"]; return ok })
	}()
	m.Update(req)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if len(before.Topics) != 0 {
		t.Fatal("an update modified an old snapshot")
	}
	if m.ControllerID() != 3 || len(m.Snapshot().Topics["a"]) != 2 {
		t.Fatalf("after update: %+v", m.Snapshot())
	}
	// Incremental: partition 1 deleted (-2), partition 0 stays.
	del := kmsg.NewPtrUpdateMetadataRequest()
	del.Version, del.ControllerID = 6, 3
	ts2 := kmsg.NewUpdateMetadataRequestTopicState()
	ts2.Topic = "a"
	ps := kmsg.NewUpdateMetadataRequestTopicPartition()
	ps.Partition, ps.Leader = 1, LeaderDuringDelete
	ts2.PartitionStates = append(ts2.PartitionStates, ps)
	del.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts2}
	snap1 := m.Snapshot()
	if deleted := m.Update(del); len(deleted) != 1 || deleted[0] != (rm.TopicPartition{Topic: "a", Partition: 1}) {
		t.Fatalf("Update reported deleted partitions %v, want a-1", deleted)
	}
	if deleted := m.Update(req); len(deleted) != 0 {
		t.Fatalf("an update without leader -2 reported deleted partitions %v", deleted)
	}
	m.Update(del)
	if _, ok := m.Partition("a", 1); ok {
		t.Fatal("partition with leader -2 not removed")
	}
	if _, ok := m.Partition("a", 0); !ok {
		t.Fatal("untouched partition removed")
	}
	if len(snap1.Topics["a"]) != 2 {
		t.Fatal("copy-on-write violated")
	}
	ps.Partition = 0
	del.TopicStates[0].PartitionStates[0] = ps
	m.Update(del)
	if _, ok := m.Snapshot().Topics["a"]; ok {
		t.Fatal("topic with no partitions left not removed")
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := m.WaitFor(short, func(*MetadataSnapshot) bool { return false }); err == nil {
		t.Fatal("WaitFor must end with the context")
	}
}

// Produce frames are read into pooled buffers (produceBuffers): a smaller request read over a
// larger one's buffer, and a larger one in another size class, each append their own batches,
// whole, with nothing left over from the request before.
func TestProduceFramesReadIntoReusedStorage(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 1)
	c := dial(t, e.addr)
	batches := [][]byte{
		makeBatch(20, bytes.Repeat([]byte("a"), 400)),
		makeBatch(2, []byte("b")),
		makeBatch(50, bytes.Repeat([]byte("c"), 2000)), // over 64 KiB: the next size class
		makeBatch(3, []byte("dd")),
	}
	for i, b := range batches {
		rp := roundTrip[*kmsg.ProduceResponse](t, c, produceReq(7, -1, "t", 0, b)).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, rp.ErrorCode)
		}
		// A metadata request between produces takes a fresh buffer, not a pooled one.
		roundTrip[*kmsg.MetadataResponse](t, c, kmsg.NewPtrMetadataRequest())
	}
	p := e.reps.parts[rm.TopicPartition{Topic: "t", Partition: 0}]
	if len(p.batches) != len(batches) {
		t.Fatalf("%d batches appended, want %d", len(p.batches), len(batches))
	}
	for i, b := range batches {
		// The fake stamps the base offset into the first 8 bytes; the rest must be as sent.
		if !bytes.Equal(p.batches[i][8:], b[8:]) {
			t.Errorf("batch %d differs from the one produced", i)
		}
	}
}

// TestBadInputClosesOnlyThatConnection: frame > socket.request.max.bytes, garbage, an
// unknown key, an unadvertised version, an array length beyond the bytes sent
// (KAFKA-14063) and trailing bytes each close their connection; another connection keeps
// working and nothing panics.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	e := startServer(t, func(c *Config) { c.SocketRequestMaxBytes = 4096 })
	healthy := dial(t, e.addr)
	hdr := func(key, version int16, corr int32) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	}
	goodMeta := kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 1)
	cases := map[string][]byte{
		"frame over max":    binary.BigEndian.AppendUint32(nil, 4097),
		"frame 2^31-1":      binary.BigEndian.AppendUint32(nil, 0x7fffffff),
		"negative frame":    binary.BigEndian.AppendUint32(nil, 0xffffffff),
		"garbage":           frameOf(bytes.Repeat([]byte{0xde, 0xad}, 50)),
		"unknown key":       frameOf(hdr(999, 0, 1)),
		"unserved key":      frameOf(hdr(int16(kmsg.FindCoordinator), 0, 1)),
		"version too high":  frameOf(hdr(int16(kmsg.Metadata), 12, 1)),
		"produce v2":        frameOf(hdr(int16(kmsg.Produce), 2, 1)),
		"array > remaining": frameOf(append(hdr(int16(kmsg.Metadata), 1, 1), 0x7f, 0xff, 0xff, 0xff)),
		"trailing bytes":    append(binary.BigEndian.AppendUint32(nil, uint32(len(goodMeta))), append(goodMeta[4:], 1, 2, 3)...)[:0],
		"short header":      frameOf([]byte{0, 3, 0}),
		"empty frame":       frameOf(nil),
		"7-byte frame":      frameOf([]byte{0, 3, 0, 1, 0, 0, 0}),
	}
	// trailing bytes: a valid Metadata v0 body with 3 extra bytes.
	tb := append(append([]byte(nil), goodMeta[4:]...), 1, 2, 3)
	cases["trailing bytes"] = frameOf(tb)
	// The same after a produce, whose length is measured without copying its batches.
	for _, v := range []int16{3, 9} {
		good := kmsg.NewRequestFormatter().AppendRequest(nil, produceReq(v, 1, "t", 0, makeBatch(2, []byte("x"))), 1)
		cases[fmt.Sprintf("produce v%d trailing bytes", v)] = frameOf(append(append([]byte(nil), good[4:]...), 0))
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			rc := dialRaw(t, e.addr)
			rc.write(b)
			rc.expectClosed()
			av := kmsg.NewPtrApiVersionsRequest()
			if resp := roundTrip[*kmsg.ApiVersionsResponse](t, healthy, av); resp.ErrorCode != 0 {
				t.Fatal("healthy connection broken")
			}
		})
	}
}

// TestProduceEncodedLenMatchesEncoding: the copy-free length of a produce request equals its
// real encoding for every served version, with null, empty and large record sets.
func TestProduceEncodedLenMatchesEncoding(t *testing.T) {
	big := makeBatch(200, bytes.Repeat([]byte("v"), 1000)) // > 127 and > 16383 bytes: longer uvarints
	for v := int16(3); v <= 9; v++ {
		req := produceReq(v, -1, "topic", 0, big)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions,
			kmsg.ProduceRequestTopicPartition{Partition: 1, Records: nil},
			kmsg.ProduceRequestTopicPartition{Partition: 2, Records: []byte{}},
			kmsg.ProduceRequestTopicPartition{Partition: 3, Records: makeBatch(1, nil)})
		req.TransactionID = kmsg.StringPtr("txn")
		if got, want := produceEncodedLen(req), len(req.AppendTo(nil)); got != want {
			t.Errorf("v%d: produceEncodedLen %d, encoding %d", v, got, want)
		}
	}
}

// TestKgoProduceConsume: a stock franz-go client with its defaults (idempotent producer,
// which continues without a producer id since InitProducerID is not advertised) produces
// and consumes through the server.
func TestKgoProduceConsume(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("kgo", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kgo": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	polled := make(chan []*kgo.Record, 1)
	go func() {
		var got []*kgo.Record
		for len(got) < 3 && ctx.Err() == nil {
			f := cl.PollFetches(ctx)
			got = append(got, f.Records()...)
		}
		polled <- got
	}()
	for i := 0; i < 3; i++ {
		r := &kgo.Record{Topic: "kgo", Value: []byte{byte('a' + i)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := <-polled
	if len(got) != 3 {
		t.Fatalf("consumed %d records", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != string(rune('a'+i)) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}

// The pool hands out power-of-two buffers from 64 KiB to 16 MiB that hold the size asked for,
// takes back only its own sizes, and pools nothing larger.
func TestBufferPoolClasses(t *testing.T) {
	var p bufferPool
	for _, c := range []struct{ n, want int }{
		{0, 64 << 10}, {1, 64 << 10}, {64 << 10, 64 << 10}, {64<<10 + 1, 128 << 10},
		{1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {16 << 20, 16 << 20},
	} {
		b := p.get(c.n)
		if b == nil || cap(*b) != c.want || len(*b) != 0 {
			t.Fatalf("get(%d): %v, want an empty buffer of capacity %d", c.n, b, c.want)
		}
	}
	if b := p.get(16<<20 + 1); b != nil {
		t.Errorf("get(16 MiB + 1) = buffer of %d, want nil (not pooled)", cap(*b))
	}
	b := p.get(100 << 10)
	*b = append(*b, "used"...)
	p.put(b)
	odd := make([]byte, 0, 100<<10) // not a class size: dropped, never handed out
	p.put(&odd)
	for i := 0; i < 10; i++ {
		if got := p.get(100 << 10); got != nil && (cap(*got) != 128<<10 || len(*got) != 0) {
			t.Fatalf("get after put: capacity %d, length %d", cap(*got), len(*got))
		}
	}
}
