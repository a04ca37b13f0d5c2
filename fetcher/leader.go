package fetcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// Request versions a fetcher sends (both sides are isrbroker, no negotiation).
const (
	fetchVersion                = 11
	offsetForLeaderEpochVersion = 3
	listOffsetsVersion          = 5
)

// Leader is the source broker as a fetcher sees it: the three requests of the replica fetch
// protocol. Implementations must be safe for use by one goroutine at a time and must honour
// ctx (Close may be called concurrently to abort a pending request). A response, and the
// record batches in it, may be valid only until the next request: the fetcher thread appends a
// Fetch response's batches before it sends anything else and keeps none of their bytes.
type Leader interface {
	Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)
	OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error)
	ListOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error)
	Close() error
}

// RemoteLeader is a Leader over one broker/kproto connection, dialled lazily and redialled after
// any error (kproto.Conn closes itself on errors).
type RemoteLeader struct {
	addr, localAddr, clientID string
	timeout                   time.Duration
	sec                       kproto.Security

	mu     sync.Mutex
	conn   *kproto.Conn
	closed bool
}

// NewRemoteLeader returns a Leader talking to addr ("host:port"). localAddr binds the outgoing
// side ("" = any); timeout bounds the dial and each request (replica.socket.timeout.ms; a
// fetch additionally gets its max wait).
func NewRemoteLeader(addr, localAddr, clientID string, timeout time.Duration) *RemoteLeader {
	return NewSecureRemoteLeader(addr, localAddr, clientID, timeout, kproto.Security{})
}

// NewSecureRemoteLeader is NewRemoteLeader whose connections are secured by sec (TLS, SASL).
func NewSecureRemoteLeader(addr, localAddr, clientID string, timeout time.Duration, sec kproto.Security) *RemoteLeader {
	return &RemoteLeader{addr: addr, localAddr: localAddr, clientID: clientID, timeout: timeout, sec: sec}
}

func (l *RemoteLeader) request(ctx context.Context, req kmsg.Request, extra time.Duration) (kmsg.Response, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("fetcher: leader connection to %s closed", l.addr)
	}
	conn := l.conn
	l.mu.Unlock()
	timeout := l.timeout + extra
	if conn == nil {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		c, err := kproto.DialSecurity(dctx, l.addr, l.localAddr, l.clientID, l.timeout, l.sec)
		cancel()
		if err != nil {
			return nil, err
		}
		// One response buffer for the connection's life: no allocation per fetch (Leader's
		// contract lets the next request overwrite a response).
		c.SetReuseBuffer(true)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = c.Close()
			return nil, fmt.Errorf("fetcher: leader connection to %s closed", l.addr)
		}
		l.conn = c
		l.mu.Unlock()
		conn = c
	}
	// RequestWithin: no timer per request (its doc).
	resp, err := conn.RequestWithin(ctx, req, timeout)
	if err != nil {
		// kproto.Conn is closed on any error: drop it so the next request redials.
		l.mu.Lock()
		if l.conn == conn {
			l.conn = nil
		}
		l.mu.Unlock()
		_ = conn.Close()
		return nil, err
	}
	return resp, nil
}

// Fetch sends a FetchRequest; the request timeout is the socket timeout plus its max wait.
func (l *RemoteLeader) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := l.request(ctx, req, time.Duration(req.MaxWaitMillis)*time.Millisecond)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return nil, fmt.Errorf("fetcher: unexpected response %T to Fetch", resp)
	}
	return r, nil
}

// OffsetForLeaderEpoch sends an OffsetForLeaderEpochRequest.
func (l *RemoteLeader) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp, err := l.request(ctx, req, 0)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if !ok {
		return nil, fmt.Errorf("fetcher: unexpected response %T to OffsetForLeaderEpoch", resp)
	}
	return r, nil
}

// ListOffsets sends a ListOffsetsRequest.
func (l *RemoteLeader) ListOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	resp, err := l.request(ctx, req, 0)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.ListOffsetsResponse)
	if !ok {
		return nil, fmt.Errorf("fetcher: unexpected response %T to ListOffsets", resp)
	}
	return r, nil
}

// Close closes the connection; pending and later requests fail.
func (l *RemoteLeader) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close()
	l.conn = nil
	return err
}
