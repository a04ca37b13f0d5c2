package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// TestACLsWithSCRAMUsers: Kafka's ACL authorizer with real users (docs/acls.md) on SASL_SSL,
// super.users=User:admin (the brokers' own SCRAM login, so replication and the controller pass)
// and allow.everyone.if.no.acl.found=false. The SCRAM user alice without ACLs sees no topic in
// Metadata and gets TOPIC_AUTHORIZATION_FAILED on produce and fetch, GROUP_AUTHORIZATION_FAILED
// on her group; after `isrbroker acls --producer` and `--consumer --group` she produces and
// consumes in group g; a PREFIXED ACL opens every topic it prefixes and nothing else; a Deny wins
// over the Allow; her StopReplica and LeaderAndIsr get CLUSTER_AUTHORIZATION_FAILED and change
// nothing.
func TestACLsWithSCRAMUsers(t *testing.T) {
	c, l := startSASLSSL(t, map[string]string{"alice": "alice-pw"}, map[string]string{
		"authorizer.class.name":          "kafka.security.authorizer.AclAuthorizer",
		"super.users":                    "User:admin",
		"allow.everyone.if.no.acl.found": "false",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := saslSSLClient(t, l, scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism(), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"t", "pre-1", "other"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatalf("admin creates %s: %v", topic, err)
		}
		c.ZK.WaitTopicOnline(topic, 30*time.Second)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		err := admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("from admin")}).FirstErr()
		return err == nil, fmt.Sprintf("the super user's acks=all produce: %v", err)
	})

	// alice's clients: a fresh one per attempt, so no metadata or error is cached between ACL changes.
	aliceOpts := []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(10 * time.Second), kgo.RequestRetries(1)}
	aliceClient := func(opts ...kgo.Opt) *kgo.Client {
		return saslSSLClient(t, l, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism(), append(aliceOpts, opts...)...)
	}
	aliceProduce := func(topic string) error {
		cl := aliceClient()
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("from alice")}).FirstErr()
	}
	alice := aliceClient()
	visibleTopics := func(cl *kgo.Client) []string {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		var names []string
		for _, tp := range resp.Topics {
			names = append(names, *tp.Topic)
		}
		sort.Strings(names)
		return names
	}
	// t-0 as broker id answers the super user: leader and leader epoch (Metadata v7).
	partitionT0 := func(id int32) kmsg.MetadataResponseTopicPartition {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 7
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("t")
		req.Topics = []kmsg.MetadataRequestTopic{rt}
		resp, err := req.RequestWith(ctx, admin.Broker(int(id)))
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("metadata of t from broker %d: %v %+v", id, err, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	leaderID := partitionT0(1).Leader

	// No ACLs: nothing visible, produce, fetch and the group refused.
	if names := visibleTopics(admin); fmt.Sprint(names) != "[other pre-1 t]" {
		t.Fatalf("the super user sees %v", names)
	}
	if names := visibleTopics(alice); len(names) != 0 {
		t.Fatalf("alice without ACLs sees %v in Metadata", names)
	}
	if err := aliceProduce("t"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	fetchCode := func() int16 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = 11, -1, 10, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
		ft.Topic, ft.Partitions = "t", []kmsg.FetchRequestTopicPartition{fp}
		req.Topics = []kmsg.FetchRequestTopic{ft}
		resp, err := req.RequestWith(ctx, alice.Broker(int(leaderID)))
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch: %v %+v", err, resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := fetchCode(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's fetch without ACLs: %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	findGroup := func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = 2, "g"
		resp, err := req.RequestWith(ctx, alice)
		if err != nil {
			t.Fatalf("FindCoordinator: %v", err)
		}
		return resp.ErrorCode
	}
	if code := findGroup(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice's FindCoordinator(g) without ACLs: %d, want GROUP_AUTHORIZATION_FAILED", code)
	}

	// Controller requests from alice: refused, nothing changes on the leader.
	before := partitionT0(leaderID)
	sr := kmsg.NewStopReplicaRequestTopic()
	sr.Topic, sr.Partitions = "t", []int32{0}
	stop := &kmsg.StopReplicaRequest{Version: 1, ControllerID: leaderID, ControllerEpoch: 1 << 20, BrokerEpoch: -1, DeletePartitions: true, Topics: []kmsg.StopReplicaRequestTopic{sr}}
	if resp, err := stop.RequestWith(ctx, alice.Broker(int(leaderID))); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's StopReplica: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, resp)
	}
	lai := kmsg.NewLeaderAndISRRequestTopicPartition()
	// Applied, it would make the leader a follower of another replica (a later epoch, a newer
	// controller epoch): the acks=all produce below would then fail.
	other := leaderID%3 + 1
	lai.Topic, lai.Partition, lai.ControllerEpoch, lai.Leader, lai.LeaderEpoch, lai.ISR, lai.Replicas = "t", 0, 1<<20, other, 1<<20, []int32{other}, []int32{1, 2, 3}
	laiReq := &kmsg.LeaderAndISRRequest{Version: 1, ControllerID: leaderID, ControllerEpoch: 1 << 20, PartitionStates: []kmsg.LeaderAndISRRequestTopicPartition{lai}}
	if resp, err := laiReq.RequestWith(ctx, alice.Broker(int(leaderID))); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's LeaderAndIsr: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, resp)
	}
	if _, err := os.Stat(c.Broker(leaderID).PartitionDir("t", 0)); err != nil {
		t.Fatalf("t-0 on broker %d after alice's StopReplica(delete): %v", leaderID, err)
	}
	if after := partitionT0(leaderID); after.Leader != before.Leader || after.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("t-0 before %+v, after alice's controller requests %+v", before, after)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("still served")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce after alice's controller requests: %v", err)
	}
	if st, err := c.ZK.PartitionState("t", 0); err != nil || len(st.ISR) != 3 {
		t.Fatalf("t-0 state after alice's controller requests: %+v %v", st, err)
	}

	aclTool := func(args ...string) {
		t.Helper()
		res := cluster.RunBinary(t, "", 30*time.Second, append([]string{"acls", "--authorizer-properties", "zookeeper.connect=" + c.ZK.Addr, "--add"}, args...)...)
		if res.ExitCode != 0 {
			t.Fatalf("isrbroker acls --add %v: exit %d\n%s%s", args, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	aclTool("--allow-principal", "User:alice", "--producer", "--topic", "t")
	aclTool("--allow-principal", "User:alice", "--consumer", "--topic", "t", "--group", "g")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		err := aliceProduce("t")
		return err == nil, fmt.Sprintf("alice's produce with --producer: %v", err)
	})
	if names := visibleTopics(alice); fmt.Sprint(names) != "[t]" {
		t.Fatalf("alice with ACLs on t sees %v", names)
	}
	if code := fetchCode(); code != 0 {
		t.Fatalf("alice's fetch with --consumer: %d", code)
	}
	consumer := aliceClient(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("alice's group consumer: %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != "[from admin still served from alice]" {
		t.Fatalf("alice consumed %q in group g", got)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commits in group g: %v", err)
	}
	offsets, err := adm.FetchOffsets(ctx, "g")
	if err != nil || offsets.Error() != nil {
		t.Fatalf("group g's offsets: %v %v", err, offsets.Error())
	}
	if o, ok := offsets.Lookup("t", 0); !ok || o.At != 3 {
		t.Fatalf("group g committed %+v for t-0, want 3", o)
	}
	consumer.Close()

	// A PREFIXED ACL: every topic starting with pre- and nothing else.
	if err := aliceProduce("pre-1"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's produce to pre-1 before the prefixed ACL: %v", err)
	}
	aclTool("--allow-principal", "User:alice", "--operation", "Write", "--operation", "Describe", "--topic", "pre-", "--resource-pattern-type", "prefixed")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		err := aliceProduce("pre-1")
		return err == nil, fmt.Sprintf("alice's produce to pre-1 with a prefixed ACL pre-: %v", err)
	})
	if err := aliceProduce("other"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's produce to other with a prefixed ACL pre-: %v", err)
	}

	// A Deny wins over the Allow of --producer; READ still implies DESCRIBE.
	aclTool("--deny-principal", "User:alice", "--operation", "Write", "--topic", "t")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		err := aliceProduce("t")
		return errors.Is(err, kerr.TopicAuthorizationFailed), fmt.Sprintf("alice's produce to t with a Deny on Write: %v", err)
	})
	if code := fetchCode(); code != 0 {
		t.Fatalf("alice's fetch with a Deny on Write only: %d", code)
	}
}
