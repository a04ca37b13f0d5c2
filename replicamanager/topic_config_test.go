package replicamanager

import (
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/logstore"
)

// Every log key a topic may override reaches the log's config, typed by its configdef topic key;
// values the table rejects keep the broker default.
func TestTopicOverridesLogKeys(t *testing.T) {
	e := newEnv(t, 1, 1)
	tc := e.rm.topicOverrides("t", map[string]string{
		"segment.bytes": "1048576", "segment.ms": "60000", "retention.ms": "-1", "retention.bytes": "5000",
		"max.message.bytes": "2048", "index.interval.bytes": "100", "flush.messages": "0", "flush.ms": "250",
		"file.delete.delay.ms": "5", "min.insync.replicas": "2", "unclean.leader.election.enable": "true",
		"preallocate": "true", // a known topic key isrbroker does not use
	})
	want := e.rm.cfg.LogDefaults
	want.SegmentBytes, want.SegmentMs, want.RetentionMs, want.RetentionBytes = 1048576, time.Minute, -1, 5000
	want.MaxMessageBytes, want.IndexIntervalBytes, want.FlushIntervalMessages, want.FlushInterval = 2048, 100, 1, 250*time.Millisecond
	want.FileDeleteDelay = 5 * time.Millisecond
	if tc.log != want || tc.minInsyncReplicas != 2 || !tc.uncleanLeaderElection {
		t.Fatalf("got %+v min.isr %d unclean %v\nwant %+v", tc.log, tc.minInsyncReplicas, tc.uncleanLeaderElection, want)
	}

	def := e.rm.cfg.LogDefaults
	tc = e.rm.topicOverrides("t", map[string]string{
		"segment.bytes": "13", "segment.ms": "0", "retention.ms": "-2", "max.message.bytes": "3000000000",
		"min.insync.replicas": "0", "unclean.leader.election.enable": "maybe", "flush.ms": "-1",
	})
	if tc.log != def || tc.minInsyncReplicas != e.rm.cfg.MinInsyncReplicas || tc.uncleanLeaderElection != e.rm.cfg.UncleanLeaderElection {
		t.Fatalf("invalid overrides applied: %+v", tc)
	}
	if def.MaxMessageBytes != 1000012 && def == logstore.DefaultConfig() {
		t.Fatalf("log defaults are not Kafka 2.4's message.max.bytes: %d", def.MaxMessageBytes)
	}
}
