package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
