package replicamanager

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// Produce of a keyless record to a topic with cleanup.policy=compact is INVALID_RECORD (87)
// and appends nothing (Kafka 2.4 LogValidator.validateKey); to a delete topic it is accepted.
func TestProduceKeylessRecordToCompactedTopic(t *testing.T) {
	for _, tc := range []struct {
		policy string
		code   int16
	}{{"compact", kerr.InvalidRecord.Code}, {"compact,delete", kerr.InvalidRecord.Code}, {"delete", 0}} {
		e := newEnv(t, 1, 1)
		e.coord.configs["t"] = map[string]string{"cleanup.policy": tc.policy}
		e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
		r := waitResult(t, e.produce(t, 1, 3, time.Second), time.Second)
		if r.ErrorCode != tc.code {
			t.Fatalf("cleanup.policy=%s: keyless produce answered %d, want %d", tc.policy, r.ErrorCode, tc.code)
		}
		leo := e.rm.getPartition(tp0()).log.LogEndOffset()
		if (tc.code != 0) != (leo == 0) {
			t.Fatalf("cleanup.policy=%s: LEO %d after a produce answered %d", tc.policy, leo, r.ErrorCode)
		}
	}
}

// The cleaner's topic keys override the broker defaults; invalid values keep the default.
func TestTopicOverridesCleanerKeys(t *testing.T) {
	e := newEnv(t, 1, 1)
	tc := e.rm.topicOverrides("t", map[string]string{
		"cleanup.policy":            "delete, compact",
		"min.cleanable.dirty.ratio": "0.01",
		"min.compaction.lag.ms":     "5",
		"max.compaction.lag.ms":     "600",
		"delete.retention.ms":       "100",
	})
	got := tc.log
	if got.CleanupPolicy != logstore.PolicyCompactDelete || got.MinCleanableRatio != 0.01 ||
		got.MinCompactionLagMs != 5 || got.MaxCompactionLagMs != 600 || got.DeleteRetentionMs != 100 {
		t.Fatalf("overrides not applied: %+v", got)
	}
	def := logstore.DefaultConfig()
	tc = e.rm.topicOverrides("t", map[string]string{
		"cleanup.policy": "shred", "min.cleanable.dirty.ratio": "2", "min.compaction.lag.ms": "-1",
		"max.compaction.lag.ms": "0", "delete.retention.ms": "soon",
	})
	got = tc.log
	if got.CleanupPolicy != def.CleanupPolicy || got.MinCleanableRatio != def.MinCleanableRatio ||
		got.MinCompactionLagMs != def.MinCompactionLagMs || got.MaxCompactionLagMs != def.MaxCompactionLagMs ||
		got.DeleteRetentionMs != def.DeleteRetentionMs {
		t.Fatalf("invalid overrides applied: %+v", got)
	}
}
