package broker

import (
	"bufio"
	"encoding/binary"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stallingReader hands out data, then blocks (closing blocked) until release is closed.
type stallingReader struct {
	data    []byte
	blocked chan struct{}
	release chan struct{}
	once    sync.Once
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	r.once.Do(func() { close(r.blocked) })
	<-r.release
	return 0, io.EOF
}

// Issue 28 item 6: a frame header claiming 16 MiB (a Produce) or 100 MiB (any other key)
// followed by no body must not make the connection's reader allocate what it claims: the
// buffer grows as the bytes arrive.
func TestFrameHeaderClaimingMuchAllocatesLittle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   kmsg.Key
		claim int32
	}{
		{"produce 16 MiB", kmsg.Produce, 16 << 20},
		{"metadata 100 MiB", kmsg.Metadata, 100 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := make([]byte, 10)
			binary.BigEndian.PutUint32(head, uint32(tc.claim))
			binary.BigEndian.PutUint16(head[4:], uint16(tc.key))
			binary.BigEndian.PutUint16(head[6:], 7)
			r := &stallingReader{data: head, blocked: make(chan struct{}), release: make(chan struct{})}
			br := bufio.NewReaderSize(r, 64<<10)
			var pool bufferPool // empty: any buffer it hands out is allocated now
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			done := make(chan error, 1)
			go func() {
				_, _, err := readRequestFrame(br, DefaultSocketRequestMaxBytes, &pool)
				done <- err
			}()
			select {
			case <-r.blocked:
			case <-time.After(10 * time.Second):
				t.Fatal("the reader never waited for the body")
			}
			runtime.ReadMemStats(&after)
			close(r.release)
			if err := <-done; err == nil {
				t.Fatal("a frame without its body was read")
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
				t.Fatalf("waiting for the body of a frame claiming %d bytes, %d bytes were allocated; want at most 256 KiB", tc.claim, d)
			}
		})
	}
}
