package kproto

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	franzsasl "github.com/twmb/franz-go/pkg/sasl"
)

// Conn is a sequential Kafka-protocol client connection used between brokers: the controller's
// per-broker request queue and each replica fetcher own one. Requests are issued one at a time;
// the caller sets each request's version (both sides are isrbroker, so no negotiation is needed).
type Conn struct {
	mu        sync.Mutex
	nc        net.Conn
	sw        *socketWriter // writes requests to nc
	br        *bufio.Reader // over NewSocketReader(nc): a response's size and body in one read
	formatter *kmsg.RequestFormatter
	corr      int32
	buf       []byte
	maxFrame  int32

	// reuse: responses are read into rbuf, kept from one request to the next (SetReuseBuffer).
	reuse bool
	rbuf  []byte

	deadline time.Time // the socket's read and write deadline (setDeadlineLocked)

	// SASL (security.go): the mechanism, the dialled address, and when to re-authenticate
	// (zero: never, the server gave no session lifetime).
	sasl          franzsasl.Mechanism
	host          string
	reauthAt      time.Time
	reauthTimeout time.Duration
}

// connReadBuffer is the read buffer of a Conn: a small response arrives with its size in one
// read(2); a larger one's body is read straight into its frame once the buffer is drained.
const connReadBuffer = 16 << 10

// maxReusedResponse bounds the response buffer a Conn keeps between requests; a larger
// response gets a buffer of its own (ten times replica.fetch.response.max.bytes' default
// would be unusual; the default fits).
const maxReusedResponse = 16 << 20

// SetReuseBuffer makes every later Request read its response into one buffer kept by the
// connection, so a response (and the record batches kmsg's decoding aliases in it) is valid
// only until the next Request. A replica fetcher, which appends a response's batches before it
// sends the next fetch and keeps none of their bytes, uses it so that its fetches do not
// allocate (and, on a machine that hands freed memory back to its host, touch fresh memory)
// for every response (docs/performance.md, "Why kfake runs slower here").
func (c *Conn) SetReuseBuffer(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reuse = on
	if !on {
		c.rbuf = nil
	}
}

// Dial connects to addr ("host:port"). localAddr, when not empty, binds the outgoing side
// (fault tests give each broker its own loopback address).
func Dial(ctx context.Context, addr, localAddr, clientID string, timeout time.Duration) (*Conn, error) {
	nc, err := dialTCP(ctx, addr, localAddr, timeout)
	if err != nil {
		return nil, err
	}
	return newConn(nc, clientID), nil
}

func dialTCP(ctx context.Context, addr, localAddr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if localAddr != "" {
		la, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(localAddr, "0"))
		if err != nil {
			return nil, err
		}
		d.LocalAddr = la
	}
	return d.DialContext(ctx, "tcp", addr)
}

func newConn(nc net.Conn, clientID string) *Conn {
	return &Conn{nc: nc, sw: newSocketWriter(nc), br: bufio.NewReaderSize(NewSocketReader(nc), connReadBuffer), formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)), maxFrame: 1 << 30}
}

// Request writes req and waits for its response, honouring ctx's deadline (up to
// deadlineSlack after it) and cancellation. On any error the connection is closed and must be
// redialled.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	dl, _ := ctx.Deadline()
	return c.request(ctx, req, dl)
}

// RequestWithin is Request with a deadline timeout from now in place of ctx's (ctx still
// cancels it), so that a caller issuing many requests, a replica fetcher, makes no
// context.WithTimeout and so no runtime timer per request: adding a timer may wake a thread of
// the scheduler (docs/performance.md, "System calls the scheduler does not see").
func (c *Conn) RequestWithin(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	return c.request(ctx, req, time.Now().Add(timeout))
}

// deadlineSlack: the socket's deadline moves only when a request's deadline passes it or lies
// more than deadlineSlack before it, so a request may fail up to deadlineSlack after its own
// deadline. Moving it re-arms the socket's timers, and arming a timer while no thread waits
// in the poller wakes one (the runtime's wakeNetPoller): once per request for a fetcher
// without the slack, once a second with it.
const deadlineSlack = time.Second

// setDeadlineLocked gives the socket a deadline between dl and dl+deadlineSlack (none for a
// zero dl), keeping the one it has when that fits.
func (c *Conn) setDeadlineLocked(dl time.Time) {
	if dl.IsZero() {
		if !c.deadline.IsZero() {
			c.deadline = time.Time{}
			_ = c.nc.SetDeadline(c.deadline)
		}
		return
	}
	if c.deadline.IsZero() || c.deadline.Before(dl) || c.deadline.After(dl.Add(deadlineSlack)) {
		c.deadline = dl.Add(deadlineSlack)
		_ = c.nc.SetDeadline(c.deadline)
	}
}

func (c *Conn) request(ctx context.Context, req kmsg.Request, dl time.Time) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.maybeReauthLocked(ctx); err != nil {
		return nil, err
	}
	return c.requestLocked(ctx, req, dl)
}

func (c *Conn) requestLocked(ctx context.Context, req kmsg.Request, dl time.Time) (kmsg.Response, error) {
	if c.nc == nil {
		return nil, net.ErrClosed
	}
	c.setDeadlineLocked(dl)
	// The callback may run after Request returned and an error set c.nc to nil: it keeps its
	// own reference (a deadline on a closed connection is harmless).
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() && c.nc != nil {
			// The cancellation set a past deadline (it may have lost the race with a
			// response that came in time): the next request sets its own.
			c.deadline = time.Unix(1, 0)
		}
	}()
	c.corr++
	corr := c.corr
	c.buf = c.formatter.AppendRequest(c.buf[:0], req, corr)
	if err := c.sw.write(c.buf); err != nil {
		c.closeLocked()
		return nil, err
	}
	// kmsg's decoded byte fields (record batches) alias the frame: a fresh buffer per
	// response, unless the caller asked for one reused buffer (SetReuseBuffer).
	var frame []byte
	var err error
	if c.reuse {
		frame, err = ReadFrameInto(c.br, c.maxFrame, c.rbuf)
		if err == nil && cap(frame) > cap(c.rbuf) && cap(frame) <= maxReusedResponse {
			c.rbuf = frame[:0]
		}
	} else {
		frame, err = ReadFrame(c.br, c.maxFrame)
	}
	if err != nil {
		c.closeLocked()
		return nil, err
	}
	if len(frame) < 4 {
		c.closeLocked()
		return nil, ErrShortHeader
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.closeLocked()
		return nil, fmt.Errorf("kproto: correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != 18 {
		if body, err = skipTags(body); err != nil {
			c.closeLocked()
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		c.closeLocked()
		return nil, err
	}
	return resp, nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

func (c *Conn) closeLocked() error {
	if c.nc == nil {
		return nil
	}
	err := c.nc.Close()
	c.nc = nil
	return err
}
