package broker

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/broker/kproto/kprototest"
)

// loopbackConn returns a broker conn on the server side of a real loopback TCP connection
// (so the non-blocking inline writes run) with its writer goroutine, and the client side.
func loopbackConn(t *testing.T) (*conn, net.Conn) {
	t.Helper()
	cc, sc := kprototest.TCPPair(t)
	// A small send buffer, so a response below maxInlineWrite still fills it.
	if err := sc.SetWriteBuffer(8 << 10); err != nil {
		t.Fatal(err)
	}
	c := newConn(fuzzServer(t), sc, "PLAINTEXT")
	if c.out.raw == nil {
		t.Fatal("a TCP connection must get the non-blocking write path")
	}
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); c.writeLoop() }()
	t.Cleanup(func() { c.close(); <-writerDone })
	return c, cc
}

// fetchResponseOf is a fetch response carrying n bytes of pattern as one record set.
func fetchResponseOf(n int) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 4
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = bytes.Repeat([]byte("isr!"), n/4)
	tr := kmsg.NewFetchResponseTopic()
	tr.Topic = "t"
	tr.Partitions = append(tr.Partitions, p)
	resp.Topics = append(resp.Topics, tr)
	return resp
}

// Responses leave in request order whoever completes them: a parked request completed later
// by another goroutine holds back the responses behind it, a response larger than the socket
// buffer (the client is not reading yet) is started inline and finished by the writer goroutine from where the
// non-blocking write stopped, and nothing is lost or reordered.
func TestResponsesInOrderAcrossInlineAndHandedOffWrites(t *testing.T) {
	c, cc := loopbackConn(t)
	const big = maxInlineWrite - 1<<10 // written inline, and far above the socket's send buffer
	var parked *slot
	enqueue := func(corr int32, fn func(*slot)) {
		t.Helper()
		if err := c.enqueue(corr, requestTiming{}, fn); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(1, func(sl *slot) { parked = sl })                                                // completed below
	enqueue(2, func(sl *slot) { sl.complete(reply{resp: fetchResponseOf(big)}) })             // waits for 1
	enqueue(3, func(sl *slot) { sl.complete(reply{resp: unsupportedApiVersionsResponse()}) }) // waits for 2

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // as the purgatory does when a follower's fetch moves the HW
		defer wg.Done()
		parked.complete(reply{resp: unsupportedApiVersionsResponse()})
	}()
	wg.Wait() // its write cannot wait for the client: the rest of the big one goes to the writer goroutine

	enqueue(4, func(sl *slot) { sl.complete(reply{resp: unsupportedApiVersionsResponse()}) })

	_ = cc.SetReadDeadline(time.Now().Add(30 * time.Second))
	wantSizes := map[int32]int{2: big}
	for want := int32(1); want <= 4; want++ {
		frame, err := kproto.ReadFrame(cc, 64<<20)
		if err != nil {
			t.Fatalf("response %d: %v", want, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != want {
			t.Fatalf("response with correlation id %d where %d was due", got, want)
		}
		if n, ok := wantSizes[want]; ok {
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = 4
			if err := resp.ReadFrom(frame[4:]); err != nil {
				t.Fatalf("response %d does not decode: %v", want, err)
			}
			rb := resp.Topics[0].Partitions[0].RecordBatches
			if len(rb) != n || !bytes.Equal(rb, bytes.Repeat([]byte("isr!"), n/4)) {
				t.Fatalf("response %d: %d record bytes, want %d intact", want, len(rb), n)
			}
		}
	}
	// Every token came back: maxInFlight more requests fit without waiting.
	deadline := time.Now().Add(10 * time.Second)
	for len(c.inflight) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d in-flight tokens still held after every response was read", len(c.inflight))
		}
		time.Sleep(time.Millisecond)
	}
}

// A response completed by another goroutine while the reader still runs its handler is
// written by the reader once the handler returns, not lost between the two.
func TestResponseCompletedDuringHandlerIsWritten(t *testing.T) {
	c, cc := loopbackConn(t)
	if err := c.enqueue(9, requestTiming{}, func(sl *slot) {
		done := make(chan struct{})
		go func() { defer close(done); sl.complete(reply{resp: unsupportedApiVersionsResponse()}) }()
		<-done
	}); err != nil {
		t.Fatal(err)
	}
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := kproto.ReadFrame(cc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != 9 {
		t.Fatalf("correlation id %d, want 9", got)
	}
}
