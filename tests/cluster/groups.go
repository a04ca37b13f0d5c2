package cluster

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator asks the broker at addr (only that broker) for the coordinator of group.
func FindCoordinator(ctx context.Context, addr, group string) (*kmsg.FindCoordinatorResponse, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorType = 0
	return brokerRequest[*kmsg.FindCoordinatorResponse](ctx, req, kgo.SeedBrokers(addr))
}

// AliveBrokers is the number of brokers the broker at addr lists in its Metadata answer.
func AliveBrokers(ctx context.Context, addr string) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := brokerRequest[*kmsg.MetadataResponse](ctx, req, kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	return len(resp.Brokers), nil
}
