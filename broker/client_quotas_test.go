package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/clientquota"
)

// staticQuotas is a QuotaConfigSource that delivers fixed entities once.
type staticQuotas []struct {
	user, client string
	cfg          map[string]string
}

func (q staticQuotas) OnQuotaConfig(f func(user, client string, cfg map[string]string)) {
	for _, e := range q {
		f(e.user, e.client, e.cfg)
	}
}

// TestProduceOverQuotaIsThrottled (docs/quotas.md): a client over its producer_byte_rate gets
// throttle_time_ms > 0 of Kafka's formula, and the connection's next request is not read
// until that time has passed (KIP-219's mute); a client within its quota gets 0.
func TestProduceOverQuotaIsThrottled(t *testing.T) {
	const bound = 2000
	e := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) {
		d.Quotas = staticQuotas{{"", "test", map[string]string{clientquota.ProducerByteRate: "2000"}}}
	})
	e.createTopic("t", 1)
	c := dial(t, e.addr)

	// A first small produce is within the quota.
	resp := roundTrip[*kmsg.ProduceResponse](t, c, produceReq(8, 1, "t", 0, makeBatch(1, []byte("v"))))
	if resp.ThrottleMillis != 0 {
		t.Fatalf("within quota: throttle %d", resp.ThrottleMillis)
	}
	// About 11 × bound bytes in the first window: rate ≈ 1.1 × bound over Rate's assumed
	// 10 s, throttle ≈ (1.1 - 1) × 10 s ≈ 1 s.
	big := makeBatch(1, bytes.Repeat([]byte("x"), 11*bound))
	resp = roundTrip[*kmsg.ProduceResponse](t, c, produceReq(8, 1, "t", 0, big))
	got := time.Now()
	if resp.ThrottleMillis < 900 || resp.ThrottleMillis > 1300 {
		t.Fatalf("throttle_time_ms %d, want about 1000", resp.ThrottleMillis)
	}
	// The next request is read only after the mute: its answer comes no earlier.
	md := kmsg.NewPtrMetadataRequest()
	roundTrip[*kmsg.MetadataResponse](t, c, md)
	if waited := time.Since(got); waited < time.Duration(resp.ThrottleMillis-50)*time.Millisecond {
		t.Fatalf("next request answered after %v, before the %d ms mute ended", waited, resp.ThrottleMillis)
	}
	// The throttle-time metric of the entity (client-id quota: tags client-id only).
	name := clientquota.MetricName(clientquota.Produce, clientquota.Tags{ClientID: "test"}, "throttle-time")
	if e.srv.cfg.Registry.Get(name) == nil {
		t.Fatalf("no %s", name)
	}
}

// TestFetchOverQuotaAnswersNoRecords: a consumer over consumer_byte_rate gets an empty answer
// with throttle_time_ms, and its bytes are taken back (Kafka's getThrottledResponse).
func TestFetchOverQuotaAnswersNoRecords(t *testing.T) {
	e := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) {
		d.Quotas = staticQuotas{{clientquota.DefaultEntity, "", map[string]string{clientquota.ConsumerByteRate: "100", clientquota.RequestPercentage: "0.000001"}}}
	})
	e.createTopic("t", 1)
	c := dial(t, e.addr)
	roundTrip[*kmsg.ProduceResponse](t, c, produceReq(8, 1, "t", 0, makeBatch(1, bytes.Repeat([]byte("x"), 5000))))
	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.ReplicaID, fr.MaxBytes, fr.MaxWaitMillis = 11, -1, 1<<20, 0
	fr.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	resp := roundTrip[*kmsg.FetchResponse](t, c, fr)
	if resp.ThrottleMillis <= 0 || len(resp.Topics) != 0 {
		t.Fatalf("throttle %d, %d topics; want a throttled empty answer", resp.ThrottleMillis, len(resp.Topics))
	}
	// A follower's fetch is exempt (Kafka: CLUSTER_ACTION), on a connection of its own (the
	// consumer's is muted).
	fr.ReplicaID = 2
	resp = roundTrip[*kmsg.FetchResponse](t, dial(t, e.addr), fr)
	if resp.ThrottleMillis != 0 || len(resp.Topics) != 1 {
		t.Fatalf("follower: throttle %d, %d topics", resp.ThrottleMillis, len(resp.Topics))
	}
}

// TestRequestPercentageThrottles: a client over request_percentage gets throttle_time_ms on
// any response with the field, at most one window (ClientRequestQuotaManager's cap).
func TestRequestPercentageThrottles(t *testing.T) {
	e := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) {
		d.Quotas = staticQuotas{{"ANONYMOUS", "", map[string]string{clientquota.RequestPercentage: "0.000001"}}}
	})
	c := dial(t, e.addr)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 8
	resp := roundTrip[*kmsg.MetadataResponse](t, c, md)
	if resp.ThrottleMillis <= 0 || resp.ThrottleMillis > 1000 {
		t.Fatalf("throttle_time_ms %d, want in (0, 1000]", resp.ThrottleMillis)
	}
	name := clientquota.MetricName(clientquota.Request, clientquota.Tags{User: "ANONYMOUS"}, "request-time")
	if e.srv.cfg.Registry.Get(name) == nil {
		t.Fatalf("no %s", name)
	}
}
