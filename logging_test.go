package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	stdlog "log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// The JSON format has the stable keys of docs/logging.md; the text format is logrus'
// key=value; --log-format wins over isrbroker.log.format.
func TestNewLoggerFormats(t *testing.T) {
	var buf bytes.Buffer
	l, err := newLogger(&buf, logrus.InfoLevel, logFormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	l.WithFields(logrus.Fields{"brokerId": int32(2), "component": "fetcher", "logEndOffset": int64(120)}).Info("truncated log")
	l.WithField("component", "server").Debug("below the level")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	want := map[string]any{"level": "info", "msg": "truncated log", "component": "fetcher", "brokerId": 2.0, "logEndOffset": 120.0}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, line[k], v, buf.String())
		}
	}
	if ts, _ := line["time"].(string); !strings.HasSuffix(ts, "Z") && !strings.Contains(ts, "+") || len(ts) < len("2006-01-02T15:04:05.000") {
		t.Errorf("time %q is not RFC 3339 with milliseconds", line["time"])
	}

	buf.Reset()
	l, err = newLogger(&buf, logrus.InfoLevel, logFormatText)
	if err != nil {
		t.Fatal(err)
	}
	l.WithField("component", "controller").Info("elected controller")
	if s := buf.String(); !strings.Contains(s, "component=controller") || !strings.Contains(s, `msg="elected controller"`) {
		t.Errorf("text line %q", s)
	}

	if _, err := newLogger(&buf, logrus.InfoLevel, "xml"); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("bad format: %v", err)
	}
	if got := logFormat("text", "json"); got != "text" {
		t.Errorf("flag text over config json: %q", got)
	}
	if got := logFormat("", "json"); got != "json" {
		t.Errorf("no flag, config json: %q", got)
	}
}

// isrbroker.log.format=json makes the broker's own lines JSON from the first one (the config
// warnings), each with component and brokerId; --log-format text wins over the setting.
func TestLogFormatSettingAndFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file") // an unusable log dir: start-up stops before ZooKeeper
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writeProps(t, dir, "broker.id=4\nzookeeper.connect=127.0.0.1:1\nlog.dirs="+file+
		"\nnum.network.threads=3\nisrbroker.log.format=json\n")
	logLines := func(stderr string) []string {
		var out []string
		for _, l := range strings.Split(stderr, "\n") {
			if l != "" && !strings.HasPrefix(l, "isrbroker: ") {
				out = append(out, l)
			}
		}
		return out
	}

	code, _, stderr := runCLI(t, context.Background(), "broker", "--config", p)
	lines := logLines(stderr)
	if code != 1 || len(lines) == 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("isrbroker.log.format=json: line is not JSON (%v): %s", err, l)
		}
		if m["component"] != "server" || m["brokerId"] != 4.0 || m["level"] == nil || m["msg"] == nil {
			t.Fatalf("line lacks component=server, brokerId=4, level or msg: %s", l)
		}
	}

	code, _, stderr = runCLI(t, context.Background(), "broker", "--config", p, "--log-format", "text")
	lines = logLines(stderr)
	if code != 1 || len(lines) == 0 {
		t.Fatalf("--log-format text: exit %d, stderr:\n%s", code, stderr)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "{") || !strings.Contains(l, "component=server") || !strings.Contains(l, "brokerId=4") {
			t.Fatalf("--log-format text over isrbroker.log.format=json: line %q", l)
		}
	}
}

// Lines written through Go's standard log package (net/http) reach the broker's log.
func TestRedirectStdLog(t *testing.T) {
	var buf syncBuffer
	l, err := newLogger(&buf, logrus.InfoLevel, logFormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	restore := redirectStdLog(l.WithField("brokerId", 3))
	stdlog.Print("http: Accept error: too many open files; retrying in 5ms")
	var line map[string]any
	ok, msg := pollFor(5*time.Second, func() (bool, string) {
		out := strings.TrimSpace(buf.String())
		if out == "" {
			return false, "nothing logged yet"
		}
		if err := json.Unmarshal([]byte(out), &line); err != nil {
			return false, fmt.Sprintf("not one JSON line (%v): %s", err, out)
		}
		return true, ""
	})
	restore()
	if !ok {
		t.Fatal(msg)
	}
	if line["component"] != "server" || line["level"] != "warning" || line["brokerId"] != 3.0 ||
		!strings.Contains(fmt.Sprint(line["msg"]), "Accept error") {
		t.Fatalf("standard log line became %v", line)
	}
}

// pollFor re-checks cond until it holds or timeout passes.
func pollFor(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok || time.Now().After(deadline) {
			return ok, msg
		}
		time.Sleep(10 * time.Millisecond)
	}
}
