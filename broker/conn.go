package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// Errors that close a connection. None of them is ever answered on the wire.
var (
	errUnknownKey      = errors.New("broker: unknown api key")
	errUnsupportedVer  = errors.New("broker: api version outside the advertised range")
	errTrailingGarbage = errors.New("broker: trailing bytes after the request body")
)

// conn is one client connection: a reader goroutine (serve) that decodes and dispatches
// requests, and a response stream (conn_write.go) that sends their responses in request order,
// written by whichever goroutine finds the next response ready (the reader after a handler, the
// goroutine that completed a parked request) or by the connection's writer goroutine.
type conn struct {
	s        *Server
	nc       net.Conn
	listener string // listener name the connection came in on (Metadata answers with its endpoints)
	log      logrus.FieldLogger
	// zeroCopy: fetch responses are written from the segment files with sendfile (the
	// connection is a socket); otherwise the records are read into memory.
	zeroCopy bool

	inflight  chan struct{} // one token per request decoded and not yet answered; cap = maxInFlight
	done      chan struct{} // closed by close()
	closeOnce sync.Once

	out responseStream // the responses in request order (conn_write.go)

	// activity counts the frames read and the responses written; the idle reaper
	// (conn_quotas.go) closes a connection whose count stays still for
	// connections.max.idle.ms. idleSeen and idleSince are the reaper's own.
	activity  atomic.Uint64
	idleSeen  uint64
	idleSince time.Time

	// lastClientID is the previous request's client id, reused for the next when equal
	// (kproto.ParseHeaderReusing); the reader's only.
	lastClientID *string

	// principal is who the connection authenticated as (authz.go): User:ANONYMOUS on a
	// PLAINTEXT listener; clientHost its peer's IP as Kafka's ACLs write it.
	principal  atomic.Pointer[string]
	clientHost string

	// sec is the listener's security; sasl the authentication state of a SASL listener's
	// connection (sasl_conn.go), nil on PLAINTEXT and SSL listeners.
	sec  *ListenerSecurity
	sasl *saslConn

	// mutedUntil is the end of a client quota throttle (unix ns; client_quotas.go): the
	// reader reads no request before it (KIP-219).
	mutedUntil atomic.Int64
}

// slot is the future response of one request.
type slot struct {
	c      *conn
	corr   int32
	once   sync.Once
	timing requestTiming // recorded once the response is written (request_metrics.go)

	// Guarded by c.out.mu.
	r         reply
	done      bool // r is set
	inHandler bool // the reader is still running this request's handler
}

type reply struct {
	resp  kmsg.Response // nil: send nothing (acks=0 produce)
	close bool          // close the connection once the replies before this one are written
	// fetch, when set, is a fetch response whose records are segment-file regions, written
	// with sendfile (zero-copy reads); resp is then nil.
	fetch *kproto.SplicedFetch
	// raw, when isRaw, is written as a bare size-prefixed frame without a response header: a
	// SASL challenge of a SaslHandshake v0 exchange (an empty one is a zero-length frame).
	raw   []byte
	isRaw bool
	// sent, when set, is closed once the response is written (a failed authentication's
	// answer, which the delayed close waits for).
	sent chan struct{}
}

func newConn(s *Server, nc net.Conn, listener string) *conn {
	c := &conn{
		s:        s,
		nc:       nc,
		listener: listener,
		log:      s.log.WithFields(logrus.Fields{"remote": nc.RemoteAddr().String(), "listener": listener}),
		inflight: make(chan struct{}, maxInFlight),
		done:     make(chan struct{}),
		zeroCopy: isSocket(nc),
	}
	c.out.init(nc)
	anon := AnonymousPrincipal
	c.principal.Store(&anon)
	c.clientHost = peerHost(nc.RemoteAddr())
	return c
}

// setSecurity applies the listener's security before the connection is served: a SASL
// listener's connection starts unauthenticated.
func (c *conn) setSecurity(sec *ListenerSecurity) {
	c.sec = sec
	if sec.usesSASL() {
		c.sasl = &saslConn{c: c, sec: sec}
	}
}

// isSocket reports whether nc exposes its file descriptor (a TCP connection), which
// kproto.WriteFileRegion needs for sendfile.
func isSocket(nc net.Conn) bool {
	_, ok := nc.(syscall.Conn)
	return ok
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

// serve runs the connection until it closes: this goroutine reads (and writes the responses its
// handlers completed at once), a second one writes what would wait (conn_write.go).
// socketReaders are the connections' 64 KiB read buffers, reused from one connection to the
// next: a client that opens a connection per request (health checks, probes, kcat -L) would
// otherwise allocate 64 KiB each time (row 14 of docs/reliability.md counts the RSS).
var socketReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func (c *conn) serve() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop()
	}()
	defer wg.Wait()
	defer c.close()
	defer recoverLog(c.log, "connection reader")
	if !c.secure() {
		return
	}

	// The socket is read with read(2) issued directly (kproto.SocketReader): the request
	// path makes no system call the scheduler sees, which spares a wake-up of its monitor
	// thread per busy spell (docs/performance.md, "System calls the scheduler does not see").
	br := socketReaders.Get().(*bufio.Reader)
	br.Reset(kproto.NewSocketReader(c.nc))
	defer func() {
		br.Reset(nil) // drop the socket before the reader goes back to the pool
		socketReaders.Put(br)
	}()
	for c.awaitThrottle() {
		// Produce frames are read into pooled buffers (produceBuffers): kmsg's decoded byte
		// fields alias a frame, and a Produce's batches are appended before handleFrame
		// returns (its handler runs on this goroutine; an acks=-1 produce parks only its
		// offsets), so the buffer is free again after it. Other requests' handlers keep some
		// decoded bytes (a group member's metadata): their frames get fresh buffers. On this
		// machine a fresh 1 MiB buffer per request also means touching memory the host may have
		// taken back (docs/performance.md, "Why kfake runs slower here"). A frame too short for
		// a header is read, then refused by handleFrame (Kafka's rule).
		frame, pooled, err := readRequestFrame(br, c.maxFrame(), &produceBuffers)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				requestWarnings.Info(c.log.WithError(err), c.listener, "closing connection: bad frame")
			}
			return
		}
		c.activity.Add(1)
		err = c.handleFrame(frame)
		if pooled != nil {
			produceBuffers.put(pooled)
		}
		if err != nil {
			msg := "closing connection: bad request"
			if errors.Is(err, errAuthentication) || errors.Is(err, errSessionExpired) {
				msg = "closing connection: authentication failed"
			}
			requestWarnings.Info(c.log.WithError(err), c.listener, msg)
			return
		}
	}
}

// peekProduceFrame reports the size of the next frame if it is a Produce request, without
// consuming anything. It looks at the key only when the size prefix is one the reader accepts
// (2 to max bytes), so a frame the reader refuses at its size is refused at once, not after
// waiting here for bytes that never come.
func peekProduceFrame(br *bufio.Reader, max int32) (int, bool) {
	head, err := br.Peek(4)
	if err != nil {
		return 0, false
	}
	n := int32(binary.BigEndian.Uint32(head))
	if n < 2 || n > max {
		return 0, false
	}
	head, err = br.Peek(6)
	if err != nil || int16(binary.BigEndian.Uint16(head[4:])) != int16(kmsg.Produce) {
		return 0, false
	}
	return int(n), true
}

// bufferPool hands out byte buffers by power-of-two size class, from minPooledFrame to
// maxPooledFrame bytes; larger frames are not pooled. Buffers that stay unused are freed with
// the garbage collector's cycles (sync.Pool), so idle connections pin no memory.
type bufferPool struct {
	classes [numFrameClasses]sync.Pool
}

const (
	minPooledFrameShift = 16 // 64 KiB
	maxPooledFrameShift = 24 // 16 MiB
	numFrameClasses     = maxPooledFrameShift - minPooledFrameShift + 1
)

// produceBuffers is the broker's pool of Produce frame buffers.
var produceBuffers bufferPool

// frameClass is the index of the smallest class whose buffers hold n bytes (-1: too large).
func frameClass(n int) int {
	c := 0
	for n > 1<<(minPooledFrameShift+c) {
		c++
		if c == numFrameClasses {
			return -1
		}
	}
	return c
}

// get returns a buffer of capacity at least n, or nil when n is above the largest class.
func (p *bufferPool) get(n int) *[]byte {
	c := frameClass(n)
	if c < 0 {
		return nil
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 1<<(minPooledFrameShift+c))
	return &b
}

// put returns a buffer from get to its class.
func (p *bufferPool) put(b *[]byte) {
	if c := frameClass(cap(*b)); c >= 0 && cap(*b) == 1<<(minPooledFrameShift+c) {
		*b = (*b)[:0]
		p.classes[c].Put(b)
	}
}

// request is one decoded request on its way through a handler.
type request struct {
	c    *conn
	hdr  kproto.RequestHeader
	slot *slot

	logOnce sync.Once
	logger  logrus.FieldLogger

	size      int  // the request frame's bytes (the produce quota's value)
	quotaDone bool // the client quotas recorded this request (client_quotas.go)
}

// log is the request's logger (component, client, apiKey, version), built on first use: most
// requests log nothing, and building it for each cost a few allocations per request on the
// produce and fetch paths.
func (r *request) log() logrus.FieldLogger {
	r.logOnce.Do(func() {
		r.logger = r.c.log.WithFields(logrus.Fields{"component": "request", "client": r.clientID(), "apiKey": kmsg.NameForKey(r.hdr.Key), "version": r.hdr.Version})
	})
	return r.logger
}

// respond completes the request with resp (nil: no response on the wire).
func (r *request) respond(resp kmsg.Response) {
	r.applyRequestQuota(resp)
	r.slot.complete(reply{resp: resp})
}

// respondAndClose sends nothing and closes the connection once earlier responses are out
// (acks=0 produce errors, as Kafka does, so the client notices).
func (r *request) respondAndClose() { r.slot.complete(reply{close: true}) }

// clientID returns the header's client id ("" when null).
// safe runs a completion callback (called by the replica manager, maybe on its own
// goroutine) so that a bug in building the response closes only this connection.
func (r *request) safe(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			recoverLogValue(r.log(), "completion", v)
			r.c.close()
		}
	}()
	fn()
}

func (r *request) clientID() string {
	if r.hdr.ClientID == nil {
		return ""
	}
	return *r.hdr.ClientID
}

// handleFrame decodes one request frame and dispatches it. A non-nil error closes the
// connection: unknown key, version outside the advertised range (ApiVersions excepted),
// a header or body that does not decode, or trailing bytes.
func (c *conn) handleFrame(frame []byte) error {
	start := time.Now()
	// A SASL listener's connection authenticates first (sasl_conn.go).
	if c.sasl != nil {
		if consumed, err := c.sasl.gate(frame, start); consumed || err != nil {
			return err
		}
	}
	if len(frame) < 8 {
		return kproto.ErrShortHeader
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))

	if key == int16(kmsg.ApiVersions) && version > apiVersionsMax {
		// KIP-511: a version above ours gets a v0 body with UNSUPPORTED_VERSION and our
		// key list; the client retries at a version we advertise. The body is not read.
		return c.enqueue(corr, c.s.reqMetrics.timing(start, key, nil), func(sl *slot) {
			sl.complete(reply{resp: unsupportedApiVersionsResponse()})
		})
	}
	h, hdr, req, err := c.decodeFrame(frame, key, version)
	if err != nil {
		return err
	}
	c.lastClientID = hdr.ClientID
	if err := c.waitForMetadata(key); err != nil {
		return err
	}
	return c.enqueue(corr, c.s.reqMetrics.timing(start, key, req), func(sl *slot) {
		h.fn(c.s, &request{c: c, hdr: hdr, slot: sl, size: len(frame)}, req)
	})
}

// decodeFrame decodes a request frame of key and version: unknown key, version outside the
// advertised range, a header or body that does not decode, and trailing bytes are errors.
func (c *conn) decodeFrame(frame []byte, key, version int16) (*handler, kproto.RequestHeader, kmsg.Request, error) {
	h := lookupHandler(key)
	if h == nil {
		return nil, kproto.RequestHeader{}, nil, fmt.Errorf("%w: %d", errUnknownKey, key)
	}
	if version < h.min || version > h.max {
		return nil, kproto.RequestHeader{}, nil, fmt.Errorf("%w: key %d version %d (served %d-%d)", errUnsupportedVer, key, version, h.min, h.max)
	}
	hdr, body, err := kproto.ParseHeaderReusing(frame, kproto.IsFlexible, c.lastClientID)
	if err != nil {
		return nil, hdr, nil, err
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if err := req.ReadFrom(body); err != nil {
		return nil, hdr, nil, fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	// kmsg does not report unread bytes; re-encoding gives the length a well-formed body
	// of these fields has, and fewer bytes than received means garbage after the body.
	if n := encodedLen(req); n < len(body) {
		return nil, hdr, nil, fmt.Errorf("%w: %s v%d: %d of %d bytes", errTrailingGarbage, kmsg.NameForKey(key), version, n, len(body))
	}
	return h, hdr, req, nil
}

// waitForMetadata holds a client request (anything but ApiVersions and the controller's and
// brokers' control requests) until the metadata cache has its first UpdateMetadata, for at most
// Config.ClientWaitForMetadata. It runs on the reader goroutine, so the connection's order holds.
func (c *conn) waitForMetadata(key int16) error {
	wait := c.s.cfg.ClientWaitForMetadata
	if wait <= 0 {
		return nil
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.LeaderAndISR, kmsg.StopReplica, kmsg.UpdateMetadata, kmsg.ControlledShutdown:
		return nil
	}
	ready := c.s.cache.Initialized()
	select {
	case <-ready:
		return nil
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
		requestWarnings.Warn(c.log.WithField("apiKey", kmsg.NameForKey(key)), kmsg.NameForKey(key),
			"no UpdateMetadata from the controller yet; answering from an empty metadata cache")
	case <-c.done:
		return net.ErrClosed
	}
	return nil
}

// enqueue reserves the next in-order response slot (waiting while maxInFlight requests
// are outstanding) and runs start with it on the reader goroutine. A response the handler
// completed at once is written here, before the next request is read (handlerReturned).
func (c *conn) enqueue(corr int32, timing requestTiming, start func(*slot)) error {
	select {
	case c.inflight <- struct{}{}:
	case <-c.done:
		return net.ErrClosed
	}
	sl := &slot{c: c, corr: corr, timing: timing}
	c.out.push(sl)
	sl.timing.handlerStarted()
	start(sl)
	sl.timing.handlerReturned()
	c.handlerReturned(sl)
	return nil
}

var encodePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// encodedLen is the length of req's body as kmsg encodes it. A produce request is measured
// without copying its record batches (the hot path: they can be megabytes).
func encodedLen(req kmsg.Request) int {
	if pr, ok := req.(*kmsg.ProduceRequest); ok {
		return produceEncodedLen(pr)
	}
	return appendLen(req)
}

// produceEncodedLen encodes a copy of the produce request whose record fields are null and
// adds what each record set adds to a null one: its bytes, plus for flexible versions the
// longer compact-length prefix (uvarint(len+1) instead of the single 0 byte of null).
func produceEncodedLen(req *kmsg.ProduceRequest) int {
	shell := *req
	shell.Topics = make([]kmsg.ProduceRequestTopic, len(req.Topics))
	extra := 0
	flexible := req.IsFlexible()
	for i, t := range req.Topics {
		shell.Topics[i] = t
		shell.Topics[i].Partitions = make([]kmsg.ProduceRequestTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			shell.Topics[i].Partitions[j] = p
			shell.Topics[i].Partitions[j].Records = nil
			if p.Records == nil {
				continue
			}
			extra += len(p.Records)
			if flexible {
				extra += uvarintLen(uint64(len(p.Records))+1) - 1
			}
		}
	}
	return appendLen(&shell) + extra
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendLen is the length of req's body as kmsg encodes it, through a pooled buffer.
func appendLen(req kmsg.Request) int {
	bp := encodePool.Get().(*[]byte)
	b := req.AppendTo((*bp)[:0])
	n := len(b)
	if cap(b) <= 1<<20 {
		*bp = b[:0]
		encodePool.Put(bp)
	}
	return n
}

// recoverLog is the last line of defence of the per-connection goroutines: a panic is
// logged with its stack and only the goroutine (and so the connection) ends.
func recoverLog(log logrus.FieldLogger, where string) {
	if v := recover(); v != nil {
		recoverLogValue(log, where, v)
	}
}

func recoverLogValue(log logrus.FieldLogger, where string, v any) {
	log.WithFields(logrus.Fields{"panic": fmt.Sprint(v), "stack": string(debug.Stack())}).Error("recovered panic in " + where)
}
