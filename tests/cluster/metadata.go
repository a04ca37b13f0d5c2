package cluster

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MetadataPartition is one partition as a broker's metadata cache reports it.
type MetadataPartition struct {
	Leader int32
	ISR    []int32
}

// MetadataPartitions asks the broker at addr (and only it) for topic's metadata: what that
// broker's cache, fed by the controller's UpdateMetadata, believes. A partition with an error
// has leader -1; the error returned is the topic-level one.
func MetadataPartitions(ctx context.Context, addr, topic string) (map[int32]MetadataPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := brokerRequest[*kmsg.MetadataResponse](ctx, req, kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	out := map[int32]MetadataPartition{}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, err
		}
		for _, p := range t.Partitions {
			mp := MetadataPartition{Leader: p.Leader, ISR: p.ISR}
			if kerr.ErrorForCode(p.ErrorCode) != nil {
				mp.Leader = -1 // e.g. LEADER_NOT_AVAILABLE
			}
			out[p.Partition] = mp
		}
	}
	return out, nil
}

// brokerRequest sends req to one broker only, the single seed broker in opts, on a client made
// for this request (opts also carry settings kgo writes into the request, such as acks), and
// returns its response.
func brokerRequest[R kmsg.Response](ctx context.Context, req kmsg.Request, opts ...kgo.Opt) (R, error) {
	var zero R
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return zero, err
	}
	defer cl.Close()
	seeds := cl.SeedBrokers()
	if len(seeds) != 1 {
		return zero, fmt.Errorf("brokerRequest: want one seed broker, have %d", len(seeds))
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return zero, err
	}
	r, ok := resp.(R)
	if !ok {
		return zero, fmt.Errorf("brokerRequest: answer of type %T", resp)
	}
	return r, nil
}
