package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/fetchsession"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
)

// fetchExchange is one Fetch request a client sent and the answer it read.
type fetchExchange struct {
	req  *kmsg.FetchRequest
	resp *kmsg.FetchResponse
}

// fetchRecorder decodes the Fetch requests and responses crossing a client's connections
// (through kgo.Dialer): what the client sent and read on the wire, as it was.
type fetchRecorder struct {
	t   *testing.T
	mu  sync.Mutex
	got []fetchExchange
}

func (fr *fetchRecorder) exchanges() []fetchExchange {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return append([]fetchExchange(nil), fr.got...)
}

func (fr *fetchRecorder) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &recordedConn{Conn: c, fr: fr, pending: map[int32]*kmsg.FetchRequest{}}, nil
}

// recordedConn splits the bytes written and read into frames and decodes the Fetch ones.
type recordedConn struct {
	net.Conn
	fr      *fetchRecorder
	mu      sync.Mutex
	out, in []byte
	pending map[int32]*kmsg.FetchRequest // by correlation id
}

// frames cuts the complete size-prefixed frames off *buf.
func frames(buf *[]byte, each func(frame []byte)) {
	for len(*buf) >= 4 {
		n := int(binary.BigEndian.Uint32(*buf))
		if len(*buf) < 4+n {
			return
		}
		each((*buf)[4 : 4+n])
		*buf = (*buf)[4+n:]
	}
}

func (c *recordedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out = append(c.out, p...)
	frames(&c.out, func(frame []byte) {
		h, body, err := kproto.ParseHeader(frame, kproto.IsFlexible)
		if err != nil || h.Key != int16(kmsg.Fetch) {
			return
		}
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(h.Version)
		if err := req.ReadFrom(body); err != nil {
			c.fr.t.Errorf("decoding a Fetch request v%d: %v", h.Version, err)
			return
		}
		c.pending[h.CorrelationID] = req
	})
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in = append(c.in, p[:n]...)
	frames(&c.in, func(frame []byte) {
		corr := int32(binary.BigEndian.Uint32(frame))
		req := c.pending[corr]
		if req == nil {
			return
		}
		delete(c.pending, corr)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		if err := resp.ReadFrom(frame[4:]); err != nil { // Fetch v4-11: no tagged response header
			c.fr.t.Errorf("decoding a Fetch response v%d: %v", req.Version, err)
			return
		}
		c.fr.mu.Lock()
		c.fr.got = append(c.fr.got, fetchExchange{req: req, resp: resp})
		c.fr.mu.Unlock()
	})
	return n, err
}

func responsePartitions(resp *kmsg.FetchResponse) (n int, withRecords map[int32]bool, parts []int32) {
	withRecords = map[int32]bool{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n++
			parts = append(parts, p.Partition)
			if len(p.RecordBatches) > 0 {
				withRecords[p.Partition] = true
			}
		}
	}
	return n, withRecords, parts
}

// TestKgoConsumerIncrementalFetchSessions: a stock franz-go consumer of 300 partitions (kgo uses
// fetch sessions unless DisableFetchSessions) gets a session (a non-zero session_id on its full
// fetch, every partition answered once as it joins), then fetches incrementally: the answers
// carry only the partitions records were produced to, the other 297 being unchanged, and it
// reads every record.
func TestKgoConsumerIncrementalFetchSessions(t *testing.T) {
	reg := metrics.NewRegistry()
	e := startServer(t, func(c *Config) { c.Registry = reg })
	const parts = 300
	e.createTopic("many", parts)
	rec := &fetchRecorder{t: t}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.Dialer(rec.dial), kgo.ConsumeTopics("many"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	poll := func(d time.Duration) kgo.Fetches {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return cl.PollFetches(pctx)
	}

	// First the full fetch creating the session (kgo may start with the partitions whose offsets
	// it has, and add the others incrementally): wait until every partition was answered in it.
	var sessionID int32
	deadline := time.Now().Add(20 * time.Second)
	for {
		poll(50 * time.Millisecond)
		answered := map[int32]bool{}
		for _, x := range rec.exchanges() {
			if x.req.SessionEpoch == fetchsession.InitialEpoch && x.resp.SessionID != 0 {
				sessionID = x.resp.SessionID
				answered = map[int32]bool{}
			}
			if sessionID != 0 && x.resp.SessionID == sessionID {
				_, _, ps := responsePartitions(x.resp)
				for _, p := range ps {
					answered[p] = true
				}
			}
		}
		if sessionID != 0 && len(answered) == parts {
			break
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, x := range rec.exchanges() {
				n, _, _ := responsePartitions(x.resp)
				sent := 0
				for _, rt := range x.req.Topics {
					sent += len(rt.Partitions)
				}
				seen = append(seen, fmt.Sprintf("(session %d epoch %d sent %d: session %d error %d, %d partitions)", x.req.SessionID, x.req.SessionEpoch, sent, x.resp.SessionID, x.resp.ErrorCode, n))
			}
			t.Fatalf("no session answering all %d partitions: %v", parts, seen)
		}
	}
	if n, _, _ := responsePartitions(rec.exchanges()[0].resp); rec.exchanges()[0].req.SessionEpoch != fetchsession.InitialEpoch || n == 0 {
		t.Fatalf("first fetch: epoch %d, %d partitions answered; want a full fetch creating the session", rec.exchanges()[0].req.SessionEpoch, n)
	}
	start := len(rec.exchanges()) // the session's answers from here on carry changed partitions only
	produced := map[int32]bool{7: true, 150: true, 299: true}
	for p := range produced {
		r := &kgo.Record{Topic: "many", Partition: p, Value: []byte{byte(p)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int32]bool{}
	for len(seen) < len(produced) && ctx.Err() == nil {
		poll(200 * time.Millisecond).EachRecord(func(r *kgo.Record) { seen[r.Partition] = true })
	}
	if len(seen) != len(produced) {
		t.Fatalf("consumed records of partitions %v, want %v", seen, produced)
	}

	incremental, withData := 0, 0
	for _, x := range rec.exchanges()[start:] {
		if x.req.SessionEpoch <= 0 {
			continue
		}
		if x.req.SessionID != sessionID || x.resp.SessionID != sessionID || x.resp.ErrorCode != 0 {
			t.Fatalf("incremental fetch of session %d epoch %d answered session %d error %d (the session is %d)",
				x.req.SessionID, x.req.SessionEpoch, x.resp.SessionID, x.resp.ErrorCode, sessionID)
		}
		incremental++
		_, recs, ps := responsePartitions(x.resp)
		for _, p := range ps {
			if !produced[p] {
				t.Fatalf("incremental answer (epoch %d) carries unchanged partition %d: %v", x.req.SessionEpoch, p, ps)
			}
		}
		if len(recs) > 0 {
			withData++
		}
		if n := len(x.req.Topics); x.req.SessionEpoch > 1 && n > 0 && len(x.req.Topics[0].Partitions) >= parts {
			t.Fatalf("incremental request (epoch %d) re-sends %d partitions", x.req.SessionEpoch, len(x.req.Topics[0].Partitions))
		}
	}
	if incremental == 0 || withData == 0 {
		t.Fatalf("%d incremental fetches, %d with records", incremental, withData)
	}
	if g := reg.Get(fetchsession.MetricNumIncrementalFetchSessions).(metrics.Gauge).Value(); g != 1 {
		t.Errorf("%s = %d, want 1", fetchsession.MetricNumIncrementalFetchSessions, g)
	}
	if g := reg.Get(fetchsession.MetricNumIncrementalFetchPartitionsCached).(metrics.Gauge).Value(); g != parts {
		t.Errorf("%s = %d, want %d", fetchsession.MetricNumIncrementalFetchPartitionsCached, g, parts)
	}
}

// An incremental answer leaves partitions out: the spliced file regions must index the
// partitions as they sit in the answer, not in the session.
func TestFillFetchTopicsIndexesSplicedAfterOmissions(t *testing.T) {
	files := record.FileRecords{Len: 10}
	answers := []fetchAnswer{
		{topic: "a", rp: kmsg.FetchResponseTopicPartition{Partition: 0}, files: files},
		{topic: "a", rp: kmsg.FetchResponseTopicPartition{Partition: 1}, files: files},
		{topic: "b", rp: kmsg.FetchResponseTopicPartition{Partition: 0}},
		{topic: "b", rp: kmsg.FetchResponseTopicPartition{Partition: 1}, files: files},
		{topic: "c", rp: kmsg.FetchResponseTopicPartition{Partition: 0}, files: files},
	}
	resp := kmsg.NewPtrFetchResponse()
	spliced := fillFetchTopics(resp, answers, []bool{false, true, false, true, false})
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "a" || resp.Topics[1].Topic != "b" ||
		len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 1 ||
		len(resp.Topics[1].Partitions) != 1 || resp.Topics[1].Partitions[0].Partition != 1 {
		t.Fatalf("topics %+v", resp.Topics)
	}
	want := []kproto.SplicedPartition{{Topic: 0, Partition: 0, Records: files}, {Topic: 1, Partition: 0, Records: files}}
	if !reflect.DeepEqual(spliced, want) {
		t.Fatalf("spliced %+v, want %+v", spliced, want)
	}
	if spliced = fillFetchTopics(resp, answers, nil); len(resp.Topics) != 3 || len(spliced) != 4 || spliced[3].Topic != 2 || spliced[3].Partition != 0 {
		t.Fatalf("all answers: topics %d, spliced %+v", len(resp.Topics), spliced)
	}
}

// The handler's session errors and ids on the wire: a full fetch at epoch 0 gets a session,
// the wrong epoch is INVALID_FETCH_SESSION_EPOCH, the next one is answered incrementally (the
// unchanged partition left out), and Fetch v6 (no session fields) is answered sessionless.
func TestFetchSessionsOnTheWire(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 2)
	c := dial(t, e.addr)
	fetch := func(version int16, sessionID, epoch int32, parts ...int32) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = version, -1, 1<<20, sessionID, epoch
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			for _, p := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = p, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return roundTrip[*kmsg.FetchResponse](t, c, req)
	}
	full := fetch(11, 0, 0, 0, 1)
	if full.SessionID == 0 || len(full.Topics) != 1 || len(full.Topics[0].Partitions) != 2 {
		t.Fatalf("full fetch: session %d, topics %+v", full.SessionID, full.Topics)
	}
	if r := fetch(11, full.SessionID, 5); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(r.Topics) != 0 {
		t.Fatalf("wrong epoch: error %d, %d topics", r.ErrorCode, len(r.Topics))
	}
	roundTrip[*kmsg.ProduceResponse](t, c, produceReq(9, 1, "t", 1, makeBatch(2, []byte("xy"))))
	r := fetch(11, full.SessionID, 1)
	if r.ErrorCode != 0 || r.SessionID != full.SessionID || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
		r.Topics[0].Partitions[0].Partition != 1 || len(r.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("incremental: error %d session %d topics %+v", r.ErrorCode, r.SessionID, r.Topics)
	}
	if r := fetch(6, full.SessionID, 2, 0); r.ErrorCode != 0 || len(r.Topics) != 1 {
		t.Fatalf("v6: error %d, topics %+v", r.ErrorCode, r.Topics)
	}
}
