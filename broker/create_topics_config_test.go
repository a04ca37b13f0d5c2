package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics checks topic configs against the configdef table: an unknown key, a bad value
// or an unsupported value is INVALID_CONFIG naming the key, and no topic is created; valid
// configs reach the coordinator.
func TestCreateTopicsValidatesConfigs(t *testing.T) {
	e := startServer(t, nil)
	c := dial(t, e.addr)
	create := func(name string, kv ...string) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 5, 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		for i := 0; i+1 < len(kv); i += 2 {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rt.Configs = append(rt.Configs, cfg)
		}
		req.Topics = append(req.Topics, rt)
		return roundTrip[*kmsg.CreateTopicsResponse](t, c, req).Topics[0]
	}
	for _, tc := range []struct{ name, key, value string }{
		{"typo", "retention.msec", "1000"},
		{"broker-key", "log.retention.ms", "1000"},
		{"bad-int", "segment.bytes", "big"},
		{"too-small", "min.insync.replicas", "0"},
		{"bad-policy", "cleanup.policy", "shred"},
		{"unsupported", "compression.type", "gzip"},
	} {
		rt := create(tc.name, "retention.ms", "60000", tc.key, tc.value)
		if rt.ErrorCode != kerr.InvalidConfig.Code || rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, `"`+tc.key+`"`) {
			msg := "<nil>"
			if rt.ErrorMessage != nil {
				msg = *rt.ErrorMessage
			}
			t.Errorf("%s=%s: code %d message %s, want INVALID_CONFIG naming the key", tc.key, tc.value, rt.ErrorCode, msg)
		}
		if _, ok := e.srv.Metadata().Snapshot().Topics[tc.name]; ok {
			t.Errorf("%s: topic created despite an invalid config", tc.name)
		}
	}
	if rt := create("good", "retention.ms", "60000", "cleanup.policy", "compact", "min.insync.replicas", "1"); rt.ErrorCode != 0 {
		t.Fatalf("valid configs rejected: %d %v", rt.ErrorCode, rt.ErrorMessage)
	}
}
