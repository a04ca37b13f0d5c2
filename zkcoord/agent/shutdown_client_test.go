package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type locator struct{ controller int32 }

func (l locator) ControllerID() (int32, error) { return l.controller, nil }
func (l locator) BrokerEpoch() int64           { return 42 }
func (l locator) LiveBrokers() ([]zkdata.BrokerInfo, error) {
	return []zkdata.BrokerInfo{{ID: 1, Endpoints: []zkdata.Endpoint{{Listener: "PLAINTEXT", Host: "c", Port: 9}}}}, nil
}

// scripted answers ControlledShutdown with its responses in order and records the requests.
type scripted struct {
	answers []*kmsg.ControlledShutdownResponse
	got     []*kmsg.ControlledShutdownRequest
	addrs   []string
}

func (s *scripted) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	s.got = append(s.got, req.(*kmsg.ControlledShutdownRequest))
	r := s.answers[0]
	s.answers = s.answers[1:]
	return r, nil
}
func (s *scripted) Close() error { return nil }

func answer(code int16, remaining ...string) *kmsg.ControlledShutdownResponse {
	r := kmsg.NewPtrControlledShutdownResponse()
	r.ErrorCode = code
	for _, t := range remaining {
		p := kmsg.NewControlledShutdownResponsePartitionsRemaining()
		p.Topic = t
		r.PartitionsRemaining = append(r.PartitionsRemaining, p)
	}
	return r
}

// TestK7_ShutdownClientRetriesUntilNothingRemains: the client finds the controller's endpoint
// through the locator, sends ControlledShutdown v3 with its id and broker epoch, and retries
// after an error or remaining partitions until an empty answer; it gives up after MaxRetries.
func TestK7_ShutdownClientRetriesUntilNothingRemains(t *testing.T) {
	s := &scripted{answers: []*kmsg.ControlledShutdownResponse{answer(kerr.NotController.Code), answer(0, "t"), answer(0)}}
	settings := ShutdownSettings{BrokerID: 5, Listener: "PLAINTEXT", MaxRetries: 3, RetryBackoff: time.Millisecond, Timeout: time.Second,
		Dial: func(_ context.Context, addr, _ string, _ time.Duration) (Requester, error) {
			s.addrs = append(s.addrs, addr)
			return s, nil
		}}
	if !ControlledShutdown(context.Background(), locator{1}, settings, testLog()) {
		t.Fatal("not acknowledged")
	}
	if len(s.got) != 3 || s.got[0].BrokerID != 5 || s.got[0].BrokerEpoch != 42 || s.got[0].Version != 3 || s.addrs[0] != "c:9" {
		t.Fatalf("requests %+v to %v", s.got, s.addrs)
	}
	s.answers = []*kmsg.ControlledShutdownResponse{answer(0, "t"), answer(0, "t"), answer(0)}
	s.got = nil
	settings.MaxRetries = 2
	if ControlledShutdown(context.Background(), locator{1}, settings, testLog()) || len(s.got) != 2 {
		t.Fatalf("acknowledged with partitions remaining after %d attempts", len(s.got))
	}
	settings.Dial = func(context.Context, string, string, time.Duration) (Requester, error) {
		return nil, errors.New("refused")
	}
	if ControlledShutdown(context.Background(), locator{-1}, settings, testLog()) {
		t.Fatal("acknowledged without a controller")
	}
}

// TestK7_ShutdownClientSkipsAndStops: max.retries=0 skips the controlled shutdown without
// dialling, and a cancelled context ends the backoff between attempts.
func TestK7_ShutdownClientSkipsAndStops(t *testing.T) {
	dials := 0
	settings := ShutdownSettings{BrokerID: 5, Listener: "PLAINTEXT", MaxRetries: 0, RetryBackoff: time.Hour, Timeout: time.Second,
		Dial: func(context.Context, string, string, time.Duration) (Requester, error) {
			dials++
			return nil, errors.New("refused")
		}}
	if ControlledShutdown(context.Background(), locator{1}, settings, testLog()) || dials != 0 {
		t.Fatalf("max.retries=0 attempted a controlled shutdown (%d dials)", dials)
	}
	settings.MaxRetries = 3
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan bool, 1)
	go func() { done <- ControlledShutdown(ctx, locator{1}, settings, testLog()) }()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("cancelled shutdown reported success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("backoff ignored the context")
	}
}
