// Package kproto owns the Kafka-protocol helpers shared by the broker's server side, the log and
// the inter-broker clients (the controller's request queues and the replica fetchers): the
// 4-byte size prefix (one frame reader), the hand-parsed request header, a minimal sequential
// client connection, the per-topic grouping of request partitions (ByTopic), fetch responses
// whose record sets are segment-file regions (SplicedFetch) and the socket I/O of the request
// path (FrameWrite, SocketReader, sendfile), whose system calls bypass the scheduler's hooks
// because they cannot block (rawio_linux.go).
// Every request and response body is encoded and decoded by kmsg; nothing here hand-writes a body.
// It is one of the named shared leaves of docs/design.md ("Layering"): it imports only the
// record format (logstore/record), so the fetcher, zkcoord's controller and the root package
// use it without importing the server.
package kproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinel errors for malformed input. A server closes the connection on any of them.
var (
	ErrFrameTooLarge = errors.New("kproto: frame larger than socket.request.max.bytes")
	ErrFrameInvalid  = errors.New("kproto: invalid frame size")
	ErrShortHeader   = errors.New("kproto: request header truncated")
)

// ReadFrame reads one size-prefixed frame from r, with Kafka's rule for the size
// (NetworkReceive.readFrom): below zero is ErrFrameInvalid, above max is ErrFrameTooLarge, and
// any size from 0 to max is read; a request frame too short for its header is the caller's to
// refuse (ParseHeader: ErrShortHeader). The buffer grows as bytes arrive, starting at 1 MiB and
// doubling, so a size that lies (KAFKA-14063) costs no more memory than the bytes really sent.
// Every call returns a fresh buffer: kmsg's decoded byte fields (record batches) alias it.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	return ReadFrameInto(r, max, nil)
}

// ReadFrameInto is ReadFrame reading into buf's storage when the frame fits its capacity, and
// into a new buffer (grown as ReadFrame's) when it does not. The frame it returns aliases buf
// or the new buffer; the caller owns both and decides when they may be overwritten.
func ReadFrameInto(r io.Reader, max int32, buf []byte) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 {
		return nil, fmt.Errorf("%w: %d", ErrFrameInvalid, n)
	}
	if n > max {
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, max)
	}
	if int(n) > cap(buf) {
		// A new buffer that grows as bytes arrive.
		buf = make([]byte, 0, min(int(n), frameInitialCap))
	} else {
		buf = buf[:0]
	}
	for len(buf) < int(n) {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(int(n), 2*cap(buf)))
			copy(nb, buf)
			buf = nb
		}
		k, err := io.ReadFull(r, buf[len(buf):min(int(n), cap(buf))])
		buf = buf[:len(buf)+k]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf[:n], nil
}

// frameInitialCap is ReadFrame's first allocation for a frame that claims more.
const frameInitialCap = 1 << 20

// RequestHeader is the request header (v0–v2), parsed by hand as kmsg has no type for it.
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
}

// ParseHeader parses the header at the start of a frame and returns it with the body that
// follows. For flexible requests the header's tagged fields are skipped, so the caller must
// know whether (key, version) is flexible: flexible reports that, and an unknown key/version
// is reported as not flexible (the caller answers UNSUPPORTED_VERSION or closes).
func ParseHeader(frame []byte, flexible func(key, version int16) bool) (RequestHeader, []byte, error) {
	return ParseHeaderReusing(frame, flexible, nil)
}

// ParseHeaderReusing is ParseHeader that returns prevClientID itself as the client id when
// the header's equals it, instead of a new copy: a connection's client sends the same id with
// every request, and a connection's reader that passes the previous header's id so spares two
// allocations per request. The string is never written through the pointer.
func ParseHeaderReusing(frame []byte, flexible func(key, version int16) bool, prevClientID *string) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, ErrShortHeader
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	if h.Key == 7 && h.Version == 0 { // ControlledShutdown v0 has no client_id
		return h, rest, nil
	}
	if len(rest) < 2 {
		return h, nil, ErrShortHeader
	}
	l := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if l >= 0 {
		if int(l) > len(rest) {
			return h, nil, ErrShortHeader
		}
		if prevClientID != nil && *prevClientID == string(rest[:l]) {
			h.ClientID = prevClientID
		} else {
			s := string(rest[:l])
			h.ClientID = &s
		}
		rest = rest[l:]
	} else if l != -1 {
		return h, nil, ErrShortHeader
	}
	if flexible != nil && flexible(h.Key, h.Version) {
		var err error
		rest, err = skipTags(rest)
		if err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section: uvarint count, then (uvarint tag, uvarint size, bytes).
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, ErrShortHeader
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, ErrShortHeader
		}
		b = b[k:]
		sz, k := binary.Uvarint(b)
		if k <= 0 || sz > uint64(len(b)-k) {
			return nil, ErrShortHeader
		}
		b = b[k+int(sz):]
	}
	return b, nil
}

// IsFlexible reports whether kmsg considers key at version flexible (KIP-482). Unknown keys
// report false.
func IsFlexible(key, version int16) bool {
	if key < 0 || int(key) >= len(flexibleFrom) {
		return false
	}
	first := flexibleFrom[key]
	return first >= 0 && version >= first
}

// flexibleFrom is, by API key, the first version kmsg decodes as flexible (KIP-482), -1 for a
// key kmsg does not know or with no flexible version. Built once from kmsg, so that IsFlexible
// (on every request's header) makes no request value per call. A key's versions are flexible
// from that one on: KIP-482 made every version after the first flexible one flexible too.
var flexibleFrom = func() []int16 {
	t := make([]int16, kmsg.MaxKey+1)
	for key := range t {
		t[key] = -1
		req := kmsg.RequestForKey(int16(key))
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				t[key] = v
				break
			}
		}
	}
	return t
}()

// AppendResponse appends a complete size-prefixed response frame to dst: the response header
// (correlation id, plus an empty tag section when the response is flexible, except ApiVersions
// whose response header is always v0), then the kmsg-encoded body.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
