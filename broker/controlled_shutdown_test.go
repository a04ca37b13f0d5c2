package broker

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/zkcoord"
)

// csAdmin is a fakeAdmin that also plays the controller's side of ControlledShutdown.
type csAdmin struct {
	*fakeAdmin
	mu    sync.Mutex
	calls [][2]int64 // brokerID, brokerEpoch
}

func (a *csAdmin) ControlledShutdown(ctx context.Context, brokerID int32, brokerEpoch int64) ([]zkcoord.TopicPartition, error) {
	a.mu.Lock()
	a.calls = append(a.calls, [2]int64{int64(brokerID), brokerEpoch})
	a.mu.Unlock()
	switch brokerID {
	case 2:
		return []zkcoord.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "u", Partition: 3}}, nil
	case 3:
		return nil, zkcoord.ErrStaleBrokerEpoch
	case 4:
		return nil, zkcoord.ErrNotController
	case 5:
		return nil, zkcoord.ErrBrokerNotAvailable
	case 6:
		<-ctx.Done() // a controller that never answers
		return nil, ctx.Err()
	case 7:
		return nil, errors.New("boom")
	}
	return nil, nil
}

func startCSServer(t *testing.T) (*csAdmin, *Server, string) {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	reps := newFakeReplicas()
	admin := &csAdmin{fakeAdmin: &fakeAdmin{topics: map[string]int32{}, brokers: 1, reps: reps}}
	srv := New(Config{BrokerID: 1, ClusterID: "c", Listeners: []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1"}}, Log: log},
		Deps{Replicas: reps, Admin: admin, ControlledShutdown: admin, ProducerIDs: admin})
	admin.srv = srv
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Close() })
	return admin, srv, srv.Addrs()[0].String()
}

func controlledShutdownReq(version int16, id int32, epoch int64) *kmsg.ControlledShutdownRequest {
	req := kmsg.NewPtrControlledShutdownRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = version, id, epoch
	return req
}

// TestControlledShutdownHandler (K7): every version reaches the controller side (v0 has no
// client_id in its header; broker_epoch only from v2, -1 before) and its remaining
// partitions and errors are answered.
func TestControlledShutdownHandler(t *testing.T) {
	admin, srv, addr := startCSServer(t)
	c := dial(t, addr)
	raw := dialRaw(t, addr)
	for v := int16(0); v <= 3; v++ {
		var resp *kmsg.ControlledShutdownResponse
		if v == 0 {
			// kmsg's RequestFormatter writes no body for v0, so the frame is built by hand:
			// key, version, correlation id, no client_id, then broker_id.
			hdr := []byte{0, 7, 0, 0, 0, 0, 0, 9}
			raw.write(frameOf(controlledShutdownReq(0, 2, 42).AppendTo(hdr)))
			corr, body := raw.recv(false)
			resp = kmsg.NewPtrControlledShutdownResponse()
			resp.Version = 0
			if err := resp.ReadFrom(body); corr != 9 || err != nil {
				t.Fatalf("v0: corr %d, %v", corr, err)
			}
		} else {
			resp = roundTrip[*kmsg.ControlledShutdownResponse](t, c, controlledShutdownReq(v, 2, 42))
		}
		if resp.ErrorCode != 0 || len(resp.PartitionsRemaining) != 2 ||
			resp.PartitionsRemaining[0].Topic != "t" || resp.PartitionsRemaining[1].Partition != 3 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		admin.mu.Lock()
		last := admin.calls[len(admin.calls)-1]
		admin.mu.Unlock()
		wantEpoch := int64(-1)
		if v >= 2 {
			wantEpoch = 42
		}
		if last != [2]int64{2, wantEpoch} {
			t.Fatalf("v%d: controller saw %v, want broker 2 epoch %d", v, last, wantEpoch)
		}
	}
	for id, want := range map[int32]int16{
		3: kerr.StaleBrokerEpoch.Code,
		4: kerr.NotController.Code,
		5: kerr.BrokerNotAvailable.Code,
		7: kerr.UnknownServerError.Code,
	} {
		resp := roundTrip[*kmsg.ControlledShutdownResponse](t, c, controlledShutdownReq(3, id, 1))
		if resp.ErrorCode != want || len(resp.PartitionsRemaining) != 0 {
			t.Fatalf("broker %d: error %d, want %d", id, resp.ErrorCode, want)
		}
	}
	// A pending wait for the controller is bounded by the server's life: Close ends it.
	slow := dial(t, addr)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = slow.Request(ctx, controlledShutdownReq(3, 6, 1))
	}()
	checkFor(t, 5*time.Second, "the controller is waited on", func() bool {
		admin.mu.Lock()
		defer admin.mu.Unlock()
		return len(admin.calls) > 0 && admin.calls[len(admin.calls)-1][0] == 6
	})
	closed := make(chan struct{})
	go func() { _ = srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for the controller's answer")
	}
}

// TestControlledShutdownNotController: a broker whose admin is not a controller answers
// NOT_CONTROLLER.
func TestControlledShutdownNotController(t *testing.T) {
	e := startServer(t, nil)
	c := dial(t, e.addr)
	resp := roundTrip[*kmsg.ControlledShutdownResponse](t, c, controlledShutdownReq(1, 2, -1))
	if resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("error %d, want NOT_CONTROLLER", resp.ErrorCode)
	}
}
