package health

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// fakeBroker answers ApiVersions and Metadata like a broker whose metadata cache lists
// brokers; raw, when set, is written instead of the Metadata response (malformed input).
type fakeBroker struct {
	brokers    []int32
	avError    int16
	raw        []byte
	controller int32
}

func (f fakeBroker) start(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return ln.Addr().String()
}

func (f fakeBroker) serve(nc net.Conn) {
	defer nc.Close()
	for {
		frame, err := kproto.ReadFrame(nc, 1<<20)
		if err != nil {
			return
		}
		h, _, err := kproto.ParseHeader(frame, kproto.IsFlexible)
		if err != nil {
			return
		}
		var resp kmsg.Response
		switch h.Key {
		case 18:
			r := kmsg.NewPtrApiVersionsResponse()
			r.ErrorCode = f.avError
			r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 3}, {ApiKey: 3, MaxVersion: 8}}
			resp = r
		case 3:
			if f.raw != nil {
				_, _ = nc.Write(f.raw)
				return
			}
			r := kmsg.NewPtrMetadataResponse()
			r.ControllerID = f.controller
			for _, id := range f.brokers {
				r.Brokers = append(r.Brokers, kmsg.MetadataResponseBroker{NodeID: id, Host: "broker", Port: 9092})
			}
			resp = r
		default:
			return
		}
		resp.SetVersion(h.Version)
		if _, err := nc.Write(kproto.AppendResponse(nil, h.CorrelationID, resp)); err != nil {
			return
		}
	}
}

func TestCheckListedBrokerIsHealthy(t *testing.T) {
	addr := fakeBroker{brokers: []int32{1, 2, 3}, controller: 2}.start(t)
	res, err := Check(context.Background(), addr, 2, 5*time.Second)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if res.Brokers != 3 || res.ControllerID != 2 {
		t.Fatalf("result %+v, want 3 brokers and controller 2", res)
	}
	if _, err := Check(context.Background(), addr, -1, 5*time.Second); err != nil {
		t.Fatalf("Check without broker id: %v", err)
	}
}

func TestCheckUnlistedBrokerIsUnhealthy(t *testing.T) {
	addr := fakeBroker{brokers: []int32{1, 3}, controller: 1}.start(t)
	_, err := Check(context.Background(), addr, 2, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "broker 2 is not among the 2 live brokers") {
		t.Fatalf("Check error = %v, want broker 2 not listed", err)
	}
	// A broker that has not received UpdateMetadata yet lists nobody.
	addr = fakeBroker{controller: -1}.start(t)
	if _, err := Check(context.Background(), addr, -1, 5*time.Second); err == nil {
		t.Fatal("Check of a broker listing no brokers passed")
	}
}

func TestCheckApiVersionsError(t *testing.T) {
	addr := fakeBroker{brokers: []int32{1}, avError: kerr.UnsupportedVersion.Code}.start(t)
	if _, err := Check(context.Background(), addr, 1, 5*time.Second); err == nil {
		t.Fatal("Check passed although ApiVersions failed")
	}
}

func TestCheckMalformedResponse(t *testing.T) {
	// A frame with the right size prefix but a truncated body must fail, not panic.
	addr := fakeBroker{raw: []byte{0, 0, 0, 6, 0, 0, 0, 2, 0xff, 0xff}}.start(t)
	if _, err := Check(context.Background(), addr, 1, 5*time.Second); err == nil {
		t.Fatal("Check passed on a malformed Metadata response")
	}
}

func TestCheckNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Check(context.Background(), addr, 1, 2*time.Second); err == nil {
		t.Fatal("Check passed with nothing listening")
	}
}

func TestCheckSilentPeerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			defer nc.Close()
			_, _ = nc.Read(make([]byte, 1024))
			<-time.After(5 * time.Second) // never answers; the check must give up first
		}
	}()
	start := time.Now()
	if _, err := Check(context.Background(), ln.Addr().String(), 1, 300*time.Millisecond); err == nil {
		t.Fatal("Check passed against a silent peer")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Check took %v, want about the 300ms timeout", d)
	}
}

func TestCommandExitStatus(t *testing.T) {
	addr := fakeBroker{brokers: []int32{1}, controller: 1}.start(t)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		app := &cli.App{Name: "isrbroker", Writer: &out, ErrWriter: &out, ExitErrHandler: func(*cli.Context, error) {}, Commands: []*cli.Command{Command(&out)}}
		err := app.Run(append([]string{"isrbroker", "healthcheck"}, args...))
		return out.String(), err
	}
	out, err := run("--bootstrap-server", addr, "--broker-id", "1")
	if err != nil || !strings.Contains(out, "healthy: ") {
		t.Fatalf("healthy broker: err=%v out=%q", err, out)
	}
	if _, err := run("--bootstrap-server", addr, "--broker-id", "7"); err == nil || !strings.HasPrefix(err.Error(), "unhealthy: ") {
		t.Fatalf("unlisted broker: err=%v, want unhealthy", err)
	}
	if _, err := run("--bootstrap-server", addr, "extra"); err == nil {
		t.Fatal("an extra argument was accepted")
	}
}
