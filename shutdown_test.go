package main

import (
	"context"
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
	"github.com/isrbroker/isrbroker/zkcoord"
)

// fakeLocator names broker 1 at addr as the controller.
type fakeLocator struct {
	addr       string
	controller int32
}

func (f fakeLocator) ControllerID() (int32, error) { return f.controller, nil }
func (f fakeLocator) BrokerEpoch() int64           { return 77 }
func (f fakeLocator) LiveBrokers() ([]zkcoord.BrokerInfo, error) {
	host, port, err := net.SplitHostPort(f.addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	return []zkcoord.BrokerInfo{{ID: 1, Endpoints: []zkcoord.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: int32(p)}}}}, nil
}

// fakeController answers each ControlledShutdown with the next scripted response.
type fakeController struct {
	mu     sync.Mutex
	script []*kmsg.ControlledShutdownResponse
	reqs   []*kmsg.ControlledShutdownRequest
}

func (f *fakeController) serve(t *testing.T, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				frame, err := kproto.ReadFrame(c, 1<<20)
				if err != nil {
					return
				}
				h, body, err := kproto.ParseHeader(frame, kproto.IsFlexible)
				if err != nil || h.Key != 7 {
					t.Errorf("fake controller: key %d: %v", h.Key, err)
					return
				}
				req := kmsg.NewPtrControlledShutdownRequest()
				req.Version = h.Version
				if err := req.ReadFrom(body); err != nil {
					t.Errorf("fake controller: %v", err)
					return
				}
				f.mu.Lock()
				f.reqs = append(f.reqs, req)
				resp := kmsg.NewPtrControlledShutdownResponse()
				if len(f.script) > 0 {
					resp, f.script = f.script[0], f.script[1:]
				}
				f.mu.Unlock()
				resp.Version = h.Version
				if _, err := c.Write(kproto.AppendResponse(nil, h.CorrelationID, resp)); err != nil {
					return
				}
			}
		}()
	}
}

func csResp(code int16, remaining ...string) *kmsg.ControlledShutdownResponse {
	r := kmsg.NewPtrControlledShutdownResponse()
	r.ErrorCode = code
	for _, t := range remaining {
		p := kmsg.NewControlledShutdownResponsePartitionsRemaining()
		p.Topic = t
		r.PartitionsRemaining = append(r.PartitionsRemaining, p)
	}
	return r
}

func startFakeController(t *testing.T, script ...*kmsg.ControlledShutdownResponse) (*fakeController, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakeController{script: script}
	go f.serve(t, ln)
	return f, ln.Addr().String()
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// TestControlledShutdownOverKproto (K7): the broker's controlled shutdown reaches the
// controller over broker/kproto: a ControlledShutdown v3 with its id and epoch, the
// controller's error and remaining partitions read back (retried until the clean answer),
// and an unreachable controller failing within the socket timeout. The retry logic itself
// (max.retries, no controller, a cancelled context) is tested in zkcoord/agent.
func TestControlledShutdownOverKproto(t *testing.T) {
	f, addr := startFakeController(t, csResp(kerr.NotController.Code), csResp(0, "t"), csResp(0))
	s := shutdownSettings{BrokerID: 5, Listener: "PLAINTEXT", MaxRetries: 3, RetryBackoff: 10 * time.Millisecond, Timeout: 5 * time.Second}
	if !controlledShutdown(context.Background(), fakeLocator{addr: addr, controller: 1}, s, quietLog()) {
		t.Fatal("controlled shutdown reported failure")
	}
	f.mu.Lock()
	if len(f.reqs) != 3 {
		t.Fatalf("%d attempts, want 3", len(f.reqs))
	}
	for _, r := range f.reqs {
		if r.BrokerID != 5 || r.BrokerEpoch != 77 || r.Version != 3 {
			t.Fatalf("request %+v", r)
		}
	}
	f.mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	s.MaxRetries = 2
	start := time.Now()
	if controlledShutdown(context.Background(), fakeLocator{addr: dead, controller: 1}, s, quietLog()) {
		t.Fatal("succeeded with an unreachable controller")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("unreachable controller took %v", time.Since(start))
	}
}
