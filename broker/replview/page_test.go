package replview

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// The page main serves from the metrics listener's start: 503 until Start, then the View; the
// controller's hook records this broker's elections and resignations in the journal the
// local view shows (S9).
func TestPageStartAndControllerEvents(t *testing.T) {
	events := replevents.New(1, 0)
	p := NewPage(1, events)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/replication/local.json", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("before Start: %d, want 503", rec.Code)
	}
	p.OnControllerChange(true, 4)
	p.OnControllerChange(false, 4)
	got := events.Events(0)
	if len(got) != 2 || got[0].Kind != replevents.ControllerElected || got[1].Kind != replevents.ControllerResigned ||
		got[0].ControllerEpoch != 4 || got[0].Controller != 1 || got[0].Partition != replevents.Partitionless {
		t.Fatalf("journal %+v, want ControllerElected then ControllerResigned at epoch 4", got)
	}

	p.Start(fakeLocal{leaderSnapshot()}, nil, nil)
	if m := getJSON(t, p, "/replication/local.json"); m["brokerId"] != float64(1) {
		t.Errorf("after Start: local.json %v", m)
	}
}

type recordingPublisher struct{ got string }

func (f *recordingPublisher) PublishReplicationPage(addr string) error { f.got = addr; return nil }

// Publish hands the address to zkcoord's writer.
func TestPagePublish(t *testing.T) {
	var pub recordingPublisher
	NewPage(1, nil).Publish(&pub, "b1:9101", quiet())
	if pub.got != "b1:9101" {
		t.Fatalf("published %q", pub.got)
	}
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
