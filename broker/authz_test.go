package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// With the ACL authorizer and allow.everyone.if.no.acl.found=false, a principal without ACLs
// (the anonymous PLAINTEXT connection) gets each API's authorization error, as KafkaApis answers
// (docs/acls.md), and the request changes nothing; after ACLs grant it, the same requests
// succeed. Controller requests need CLUSTER_ACTION on the cluster.
func TestAuthorizationPerAPI(t *testing.T) {
	store := &memACLs{a: acl.New(acl.Config{})}
	e := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) { d.ACLs = store })
	e.createTopic("t", 1)
	c := dial(t, e.addr)

	produce := func() int16 {
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = 0, makeBatch(1, []byte("v"))
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic, pt.Partitions = "t", []kmsg.ProduceRequestTopicPartition{p}
		req := &kmsg.ProduceRequest{Version: 7, Acks: 1, TimeoutMillis: 5000, Topics: []kmsg.ProduceRequestTopic{pt}}
		return roundTrip[*kmsg.ProduceResponse](t, c, req).Topics[0].Partitions[0].ErrorCode
	}
	fetch := func() int16 {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.Partitions = "t", []kmsg.FetchRequestTopicPartition{fp}
		req := &kmsg.FetchRequest{Version: 11, ReplicaID: -1, MaxBytes: 1 << 20, SessionEpoch: -1, Topics: []kmsg.FetchRequestTopic{ft}}
		return roundTrip[*kmsg.FetchResponse](t, c, req).Topics[0].Partitions[0].ErrorCode
	}
	metadataAll := func() []string {
		resp := roundTrip[*kmsg.MetadataResponse](t, c, &kmsg.MetadataRequest{Version: 9})
		var names []string
		for _, tt := range resp.Topics {
			names = append(names, *tt.Topic)
		}
		return names
	}
	metadataNamed := func() int16 {
		name := "t"
		req := &kmsg.MetadataRequest{Version: 9, Topics: []kmsg.MetadataRequestTopic{{Topic: &name}}}
		return roundTrip[*kmsg.MetadataResponse](t, c, req).Topics[0].ErrorCode
	}
	listOffsets := func() int16 {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic, lt.Partitions = "t", []kmsg.ListOffsetsRequestTopicPartition{lp}
		return roundTrip[*kmsg.ListOffsetsResponse](t, c, &kmsg.ListOffsetsRequest{Version: 5, ReplicaID: -1, Topics: []kmsg.ListOffsetsRequestTopic{lt}}).Topics[0].Partitions[0].ErrorCode
	}

	appendsBefore := e.reps.appends
	if code := produce(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce without WRITE: %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	if e.reps.appends != appendsBefore {
		t.Fatal("a refused produce reached the log")
	}
	if code := fetch(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch without READ: %d", code)
	}
	if names := metadataAll(); len(names) != 0 {
		t.Fatalf("all-topics Metadata without DESCRIBE lists %v, want nothing", names)
	}
	if code := metadataNamed(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("named Metadata without DESCRIBE: %d", code)
	}
	if code := listOffsets(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("ListOffsets without DESCRIBE: %d", code)
	}
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "new", 1, 1
	if code := roundTrip[*kmsg.CreateTopicsResponse](t, c, &kmsg.CreateTopicsRequest{Version: 5, TimeoutMillis: 1000, Topics: []kmsg.CreateTopicsRequestTopic{ct}}).Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("CreateTopics without CREATE: %d", code)
	}
	if code := roundTrip[*kmsg.DeleteTopicsResponse](t, c, &kmsg.DeleteTopicsRequest{Version: 4, TimeoutMillis: 1000, TopicNames: []string{"t"}}).Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("DeleteTopics without DELETE: %d", code)
	}
	if code := roundTrip[*kmsg.InitProducerIDResponse](t, c, &kmsg.InitProducerIDRequest{Version: 2, TransactionTimeoutMillis: 1000}).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("InitProducerId without IDEMPOTENT_WRITE: %d", code)
	}
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	dt := kmsg.NewDescribeConfigsRequestResource()
	dt.ResourceType, dt.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	dc := roundTrip[*kmsg.DescribeConfigsResponse](t, c, &kmsg.DescribeConfigsRequest{Version: 2, Resources: []kmsg.DescribeConfigsRequestResource{dr, dt}})
	if dc.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code || dc.Resources[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("DescribeConfigs without DESCRIBE_CONFIGS: broker %d, topic %d", dc.Resources[0].ErrorCode, dc.Resources[1].ErrorCode)
	}

	// A controller request from a principal without CLUSTER_ACTION changes nothing.
	lai := kmsg.NewLeaderAndISRRequestTopicPartition()
	lai.Topic, lai.Partition, lai.Leader, lai.LeaderEpoch = "t", 0, 2, 99
	lresp := roundTrip[*kmsg.LeaderAndISRResponse](t, c, &kmsg.LeaderAndISRRequest{Version: 1, ControllerID: 2, ControllerEpoch: 1 << 30, PartitionStates: []kmsg.LeaderAndISRRequestTopicPartition{lai}})
	if lresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(e.reps.lastLAI.Partitions) != 0 {
		t.Fatalf("LeaderAndIsr without CLUSTER_ACTION: %d, reached the replica manager: %v", lresp.ErrorCode, e.reps.lastLAI.Partitions)
	}
	sr := kmsg.NewStopReplicaRequestTopic()
	sr.Topic, sr.Partitions = "t", []int32{0}
	sresp := roundTrip[*kmsg.StopReplicaResponse](t, c, &kmsg.StopReplicaRequest{Version: 1, ControllerID: 2, ControllerEpoch: 1, DeletePartitions: true, Topics: []kmsg.StopReplicaRequestTopic{sr}})
	if sresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(e.reps.lastStop.Partitions) != 0 {
		t.Fatalf("StopReplica(delete) without CLUSTER_ACTION: %d, reached the replica manager: %v", sresp.ErrorCode, e.reps.lastStop.Partitions)
	}
	if code := roundTrip[*kmsg.UpdateMetadataResponse](t, c, updateMetadataReq(e.srv, map[string]int32{"t": 1, "x": 1}, 1)).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("UpdateMetadata without CLUSTER_ACTION: %d", code)
	}

	// Grants: WRITE and READ on topic t (READ implies DESCRIBE).
	topic := acl.Resource{Type: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral}
	store.a.SetACLs(topic, []acl.Entry{
		{Principal: AnonymousPrincipal, Host: "*", Operation: acl.OpWrite, Permission: acl.Allow},
		{Principal: AnonymousPrincipal, Host: "*", Operation: acl.OpRead, Permission: acl.Allow},
	})
	if code := produce(); code != 0 {
		t.Fatalf("produce with WRITE: %d", code)
	}
	if code := fetch(); code != 0 {
		t.Fatalf("fetch with READ: %d", code)
	}
	if names := metadataAll(); len(names) != 1 || names[0] != "t" {
		t.Fatalf("all-topics Metadata with READ (implying DESCRIBE): %v", names)
	}
	if code := listOffsets(); code != 0 {
		t.Fatalf("ListOffsets with READ (implying DESCRIBE): %d", code)
	}
	// A Deny on WRITE from any principal takes effect over the Allow.
	store.a.SetACLs(topic, append(store.a.ACLs(topic), acl.Entry{Principal: acl.WildcardPrincipal, Host: "*", Operation: acl.OpWrite, Permission: acl.Deny}))
	if code := produce(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce with a DENY on WRITE: %d", code)
	}
	store.a.SetACLs(acl.Resource{Type: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral},
		[]acl.Entry{{Principal: AnonymousPrincipal, Host: "*", Operation: acl.OpClusterAction, Permission: acl.Allow}})
	if code := roundTrip[*kmsg.UpdateMetadataResponse](t, c, updateMetadataReq(e.srv, map[string]int32{"t": 1}, 1)).ErrorCode; code != 0 {
		t.Fatalf("UpdateMetadata with CLUSTER_ACTION: %d", code)
	}
}
