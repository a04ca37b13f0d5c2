package broker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/zkcoord"
)

// partitionAdmin is the fake admin as the active controller, serving CreatePartitions; it
// refuses to loop towards a huge count, which the server must have refused first.
type partitionAdmin struct {
	*fakeAdmin
	added int32 // partitions added so far
}

func (a *partitionAdmin) IsController() bool { return true }

func (a *partitionAdmin) TopicAssignment(topic string) (map[int32][]int32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.topics[topic]
	if !ok {
		return nil, zkcoord.ErrUnknownTopic
	}
	out := make(map[int32][]int32, n)
	for p := int32(0); p < n; p++ {
		out[p] = []int32{1}
	}
	return out, nil
}

func (a *partitionAdmin) AddPartitions(_ context.Context, topic string, n int32, _ map[int32][]int32, validateOnly bool) (map[int32][]int32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.topics[topic]
	if n > 1<<16 {
		return nil, kerr.UnknownServerError
	}
	out := map[int32][]int32{}
	for p := cur; p < n; p++ {
		out[p] = []int32{1}
	}
	if !validateOnly {
		a.topics[topic] = n
		a.added += n - cur
	}
	return out, nil
}

func (a *partitionAdmin) TopicsMarkedForDeletion() ([]string, error) { return nil, nil }
func (a *partitionAdmin) ReassignmentInProgress() ([]zkcoord.PartitionReassignment, bool, error) {
	return nil, false, nil
}

// Issue 28 item 6: a CreateTopics or CreatePartitions asking for more partitions than
// isrbroker's limits (zkcoord.MaxTopicPartitions per topic, maxRequestPartitions per
// request) is answered INVALID_PARTITIONS naming the limit, at once, validate_only or not,
// without the admin being asked to assign them.
func TestCreatePartitionCountLimits(t *testing.T) {
	var pa *partitionAdmin
	e := startServerWith(t, nil, func(a *fakeAdmin, d *Deps) {
		pa = &partitionAdmin{fakeAdmin: a}
		d.Admin, d.Partitions = pa, pa
	})
	c := dial(t, e.addr)
	limit := strconv.Itoa(zkcoord.MaxTopicPartitions)
	createReq := func(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly, req.Topics = 4, 5000, validateOnly, topics
		return roundTrip[*kmsg.CreateTopicsResponse](t, c, req)
	}
	topic := func(name string, n int32) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
		return rt
	}
	refused := func(what string, code int16, msg *string) {
		t.Helper()
		if code != kerr.InvalidPartitions.Code || msg == nil || !strings.Contains(*msg, limit) {
			m := "<nil>"
			if msg != nil {
				m = *msg
			}
			t.Fatalf("%s: code %d %q, want INVALID_PARTITIONS naming the limit %s", what, code, m, limit)
		}
	}
	for _, validateOnly := range []bool{true, false} {
		start := time.Now()
		rt := createReq(validateOnly, topic("huge", 1<<31-1)).Topics[0]
		refused("num_partitions 2^31-1", rt.ErrorCode, rt.ErrorMessage)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("refusing 2^31-1 partitions took %v", d)
		}
		rt = createReq(validateOnly, topic("over", zkcoord.MaxTopicPartitions+1)).Topics[0]
		refused("num_partitions limit+1", rt.ErrorCode, rt.ErrorMessage)

		// An explicit assignment of limit+1 partitions.
		big := kmsg.NewCreateTopicsRequestTopic()
		big.Topic, big.NumPartitions, big.ReplicationFactor = "assigned", -1, -1
		for p := int32(0); p <= zkcoord.MaxTopicPartitions; p++ {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = p, []int32{1}
			big.ReplicaAssignment = append(big.ReplicaAssignment, a)
		}
		rt = createReq(validateOnly, big).Topics[0]
		refused("replica assignment of limit+1", rt.ErrorCode, rt.ErrorMessage)

		// The request's budget: the topics after it is spent are refused.
		half := int32(zkcoord.MaxTopicPartitions/2 + 1)
		resp := createReq(true, topic("a"+strconv.FormatBool(validateOnly), half), topic("b"+strconv.FormatBool(validateOnly), half))
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("first topic within the request's budget: %d", resp.Topics[0].ErrorCode)
		}
		refused("second topic over the request's budget", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage)
	}
	if rt := createReq(false, topic("small", 2)).Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("a small topic: %d", rt.ErrorCode)
	}

	grow := func(validateOnly bool, count int32) kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "small", count
		req.Topics = append(req.Topics, rt)
		return roundTrip[*kmsg.CreatePartitionsResponse](t, c, req).Topics[0]
	}
	for _, validateOnly := range []bool{true, false} {
		rt := grow(validateOnly, 1<<31-1)
		refused("CreatePartitions to 2^31-1", rt.ErrorCode, rt.ErrorMessage)
		rt = grow(validateOnly, zkcoord.MaxTopicPartitions+1)
		refused("CreatePartitions to limit+1", rt.ErrorCode, rt.ErrorMessage)
	}
	if rt := grow(true, 4); rt.ErrorCode != 0 {
		t.Fatalf("CreatePartitions to 4: %d", rt.ErrorCode)
	}
	if pa.added != 0 {
		t.Fatalf("%d partitions added", pa.added)
	}
}
