package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 28 item 7: an all-topics Metadata request lists __consumer_offsets with
// is_internal=true, as Kafka 2.4 does (regex consumers skip internal topics by that flag);
// producing to it stays refused.
func TestMetadataListsInternalTopics(t *testing.T) {
	e := startServer(t, func(c *Config) { c.AutoCreateTopics = false })
	e.createTopic("t", 1)
	e.createTopic("__consumer_offsets", 3)
	c := dial(t, e.addr)
	for _, v := range []int16{0, 1, 4, 9} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		req.Topics = nil // all (v0: the empty list)
		resp := roundTrip[*kmsg.MetadataResponse](t, c, req)
		internal := map[string]bool{}
		for _, rt := range resp.Topics {
			internal[*rt.Topic] = rt.IsInternal
		}
		if in, ok := internal["__consumer_offsets"]; !ok || (v >= 1 && !in) {
			t.Fatalf("v%d all topics: %v, want __consumer_offsets with is_internal=true", v, internal)
		}
		if internal["t"] {
			t.Fatalf("v%d: topic t reported internal", v)
		}
		if len(internal) != 2 {
			t.Fatalf("v%d: topics %v", v, internal)
		}
	}
	resp := roundTrip[*kmsg.ProduceResponse](t, c, produceReq(7, 1, "__consumer_offsets", 0, makeBatch(1, []byte("x"))))
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to __consumer_offsets: %d, want INVALID_TOPIC_EXCEPTION", code)
	}
}
