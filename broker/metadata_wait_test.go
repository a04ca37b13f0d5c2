package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A restarting broker must not answer clients from an empty metadata cache: with
// ClientWaitForMetadata set, a Metadata request that arrives before the controller's first
// UpdateMetadata waits for it and then sees the topic; ApiVersions is answered at once.
func TestClientRequestsWaitForFirstUpdateMetadata(t *testing.T) {
	e := startServer(t, func(c *Config) { c.ClientWaitForMetadata = 10 * time.Second })
	c := dial(t, e.addr)
	if resp := roundTrip[*kmsg.ApiVersionsResponse](t, c, kmsg.NewPtrApiVersionsRequest()); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %d", resp.ErrorCode)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("early")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	got := make(chan *kmsg.MetadataResponse, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		resp, err := c.Request(ctx, req)
		if err != nil {
			t.Error(err)
			got <- nil
			return
		}
		got <- resp.(*kmsg.MetadataResponse)
	}()
	select {
	case r := <-got:
		t.Fatalf("Metadata answered before any UpdateMetadata: %+v", r)
	case <-time.After(300 * time.Millisecond): // the request is parked; it must not be answered yet
	}
	e.createTopic("early", 1) // the controller's first UpdateMetadata
	select {
	case r := <-got:
		if r == nil || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata after the first UpdateMetadata: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked Metadata request not answered after UpdateMetadata")
	}
}

// Without a first UpdateMetadata the wait is bounded: the client gets the empty cache's answer.
func TestClientWaitForMetadataIsBounded(t *testing.T) {
	e := startServer(t, func(c *Config) { c.ClientWaitForMetadata = 200 * time.Millisecond })
	c := dial(t, e.addr)
	start := time.Now()
	resp := roundTrip[*kmsg.MetadataResponse](t, c, kmsg.NewPtrMetadataRequest())
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Fatalf("answered after %v, want about 200ms", d)
	}
	if len(resp.Brokers) != 0 {
		t.Fatalf("empty cache listed brokers: %+v", resp.Brokers)
	}
}
