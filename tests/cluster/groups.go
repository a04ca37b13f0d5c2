package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

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

// Groups is the cluster's consumer-group client: FindCoordinator, DescribeGroups and OffsetFetch
// through the cluster's kadm client, and the waits on their answers (Cluster.Groups).
type Groups struct{ c *Cluster }

// Coordinator asks FindCoordinator (kadm) which broker coordinates group.
func (g *Groups) Coordinator(ctx context.Context, group string) (int32, error) {
	resps := g.c.Admin().FindGroupCoordinators(ctx, group)
	r, ok := resps[group]
	if !ok {
		return -1, fmt.Errorf("FindCoordinator: no answer for group %q", group)
	}
	if r.Err != nil {
		return -1, fmt.Errorf("FindCoordinator(%s): %w", group, r.Err)
	}
	return r.NodeID, nil
}

// Describe describes one group (DescribeGroups through kadm).
func (g *Groups) Describe(ctx context.Context, group string) (kadm.DescribedGroup, error) {
	ds, err := g.c.Admin().DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, err
	}
	d, ok := ds[group]
	if !ok {
		return kadm.DescribedGroup{}, fmt.Errorf("DescribeGroups: no answer for group %q", group)
	}
	return d, d.Err
}

// WaitStable waits until group is Stable with exactly members members that, together,
// are assigned every one of topic's partitions, each once; it returns the description.
func (g *Groups) WaitStable(group, topic string, partitions int32, members int, timeout time.Duration) kadm.DescribedGroup {
	g.c.t.Helper()
	var d kadm.DescribedGroup
	WaitFor(g.c.t, timeout, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if d, err = g.Describe(ctx, group); err != nil {
			return false, fmt.Sprintf("describe group %s: %v", group, err)
		}
		if d.State != "Stable" || len(d.Members) != members {
			return false, fmt.Sprintf("group %s is %s with %d members, want Stable with %d", group, d.State, len(d.Members), members)
		}
		seen := map[int32]int{}
		for _, ps := range MemberPartitions(d, topic) {
			for _, p := range ps {
				seen[p]++
			}
		}
		for p := int32(0); p < partitions; p++ {
			if seen[p] != 1 {
				return false, fmt.Sprintf("group %s: partition %d assigned %d times: %v", group, p, seen[p], MemberPartitions(d, topic))
			}
		}
		return true, ""
	})
	return d
}

// JoinLeaveMidStream runs issue 10 item 2's joins and leaves while a producer writes: m1
// alone, m2 joins, m3 joins, m1 leaves, m2 leaves. After each change it waits (up to timeout)
// for the group to be Stable with that many members over topic's partitions, and for 500 more
// records processed (j's count). start starts the member called name and returns what stops
// it; JoinLeaveMidStream returns m3's stop, m3 being the member left in the group.
func (g *Groups) JoinLeaveMidStream(j *GroupJournal, group, topic string, partitions int32, timeout time.Duration, start func(name string) (stop func())) (stopLast func()) {
	g.c.t.Helper()
	progress := func(what string) {
		g.c.t.Helper()
		const n = 500
		from := j.ProcessedCount()
		WaitFor(g.c.t, timeout, func() (bool, string) {
			got := j.ProcessedCount() - from
			return got >= n, fmt.Sprintf("%s: %d records processed since, want %d", what, got, n)
		})
	}
	stop1 := start("m1")
	progress("m1 alone")
	stop2 := start("m2")
	g.WaitStable(group, topic, partitions, 2, timeout)
	progress("after m2 joined")
	stop3 := start("m3")
	g.WaitStable(group, topic, partitions, 3, timeout)
	progress("after m3 joined")
	stop1()
	g.WaitStable(group, topic, partitions, 2, timeout)
	progress("after m1 left")
	stop2()
	g.WaitStable(group, topic, partitions, 1, timeout)
	progress("after m2 left")
	return stop3
}

// CommittedOffsets fetches group's committed offsets for topic (OffsetFetch through kadm);
// partitions without a commit are absent.
func (g *Groups) CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	resps, err := g.c.Admin().FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	if err := resps.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	resps.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}

// WaitCommitted waits until group's committed offset of every partition of topic equals ends.
func (g *Groups) WaitCommitted(group, topic string, ends map[int32]int64, timeout time.Duration) {
	g.c.t.Helper()
	WaitFor(g.c.t, timeout, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := g.CommittedOffsets(ctx, group, topic)
		if err != nil {
			return false, fmt.Sprintf("OffsetFetch(%s): %v", group, err)
		}
		for p, end := range ends {
			if got[p] != end {
				return false, fmt.Sprintf("group %s committed %v, want the end offsets %v", group, got, ends)
			}
		}
		return true, ""
	})
}
