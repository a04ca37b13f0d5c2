package broker

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// fuzzServer is a Server (not listening) over fakes that never wait.
func fuzzServer(t testing.TB) *Server {
	log := logrus.New()
	log.SetOutput(io.Discard)
	reps := newFakeReplicas()
	reps.immediate = true
	reps.addPartition("t", 0, true)
	admin := &fakeAdmin{topics: map[string]int32{}, fail: zkcoord.ErrInvalidReplicationFactor}
	s := New(Config{BrokerID: 1, SocketRequestMaxBytes: 1 << 20, AutoCreateTopics: true, Log: log}, Deps{Replicas: reps, Admin: admin, ProducerIDs: admin})
	admin.srv, admin.reps = s, reps
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// seedBodies adds a default body of every served key and version, and a produce with a
// valid batch.
func seedBodies(f *testing.F, add func(key, version int16, body []byte)) {
	for _, h := range handlers {
		for v := h.min; v <= h.max; v++ {
			req := kmsg.RequestForKey(h.key)
			req.SetVersion(v)
			add(h.key, v, req.AppendTo(nil))
		}
	}
	p := produceReq(9, 1, "t", 0, makeBatch(2, []byte("seed")))
	add(0, 9, p.AppendTo(nil))
	p = produceReq(3, -1, "t", 0, makeBatch(1, []byte("seed")))
	add(0, 3, p.AppendTo(nil))
}

func requestFrame(key, version int16, corr int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	if kproto.IsFlexible(key, version) {
		b = append(b, 0) // no header tags
	}
	return append(b, body...)
}

// FuzzRequestDecode drives (key, version, body) through the real decode and dispatch path
// against the fakes and encodes every response: nothing may panic, and an accepted
// request must be answered in order.
func FuzzRequestDecode(f *testing.F) {
	seedBodies(f, func(key, version int16, body []byte) { f.Add(key, version, body) })
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		sc, cc := net.Pipe()
		defer cc.Close()
		c := newConn(s, sc, "PLAINTEXT")
		writerDone := make(chan struct{})
		go func() { defer close(writerDone); c.writeLoop() }()
		defer func() { c.close(); <-writerDone }()

		if err := c.handleFrame(requestFrame(key, version, 1, body)); err != nil {
			return // the connection would be closed: fine
		}
		// A sentinel answered after the request proves its response was encoded and written.
		if err := c.enqueue(-7, requestTiming{}, func(sl *slot) { sl.complete(reply{resp: unsupportedApiVersionsResponse()}) }); err != nil {
			if closedOnPurpose(c) {
				return
			}
			t.Fatal(err)
		}
		for {
			fr, err := kproto.ReadFrame(cc, 1<<30)
			if err != nil {
				if closedOnPurpose(c) {
					return
				}
				t.Fatalf("reading responses: %v", err)
			}
			if int32(binary.BigEndian.Uint32(fr)) == -7 {
				return
			}
		}
	})
}

// closedOnPurpose reports whether the connection was closed on purpose (an
// acks=0 produce that failed closes it, as Kafka does).
func closedOnPurpose(c *conn) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// FuzzConnection feeds raw bytes to a connection handler: whatever arrives, the
// connection ends cleanly and nothing panics.
func FuzzConnection(f *testing.F) {
	seedBodies(f, func(key, version int16, body []byte) {
		fr := requestFrame(key, version, 3, body)
		f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(fr))), fr...))
	})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 12, 0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff})
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, cc := net.Pipe()
		c := newConn(s, sc, "PLAINTEXT")
		served := make(chan struct{})
		go func() { defer close(served); c.serve() }()
		drained := make(chan struct{})
		go func() { defer close(drained); _, _ = io.Copy(io.Discard, cc) }()
		_, _ = cc.Write(data)
		_ = cc.Close()
		<-served
		<-drained
	})
}
