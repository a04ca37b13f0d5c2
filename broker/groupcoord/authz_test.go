package groupcoord

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// The group APIs check what KafkaApis checks (docs/acls.md): READ on the group for membership
// and commits, DESCRIBE for FindCoordinator, OffsetFetch and DescribeGroups, DELETE for
// DeleteGroups and OffsetDelete, READ/DESCRIBE on each topic; ListGroups shows only the groups
// the caller may describe. The grants here: group "mine" (READ, DESCRIBE) and topic "t" (READ).
func TestGroupAPIsAuthorization(t *testing.T) {
	e := newEnv(t)
	grants := map[[3]string]bool{
		{"Read", "Group", "mine"}: true, {"Describe", "Group", "mine"}: true, {"Read", "Topic", "t"}: true, {"Describe", "Topic", "t"}: true,
	}
	r := &Request{ClientID: "c", ClientHost: "/127.0.0.1", Listener: "PLAINTEXT",
		Authorized: func(op acl.Operation, typ acl.ResourceType, name string) bool {
			return grants[[3]string{op.String(), typ.String(), name}]
		}}
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		var got kmsg.Response
		e.c.Handle(r, req, func(resp kmsg.Response) { got = resp })
		if got == nil {
			t.Fatalf("%s: no response", kmsg.NameForKey(req.Key()))
		}
		return got
	}
	// Commits into "other" and "mine" (the latter to topic t and to topic u).
	commit := func(group string, topics ...string) *kmsg.OffsetCommitResponse {
		req := &kmsg.OffsetCommitRequest{Version: 7, Group: group, Generation: -1}
		for _, tn := range topics {
			req.Topics = append(req.Topics, kmsg.OffsetCommitRequestTopic{Topic: tn, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}})
		}
		return call(req).(*kmsg.OffsetCommitResponse)
	}
	if resp := commit("other", "t"); resp.Topics[0].Partitions[0].ErrorCode != errGroupAuthFailed {
		t.Fatalf("commit to a group without READ: %d", resp.Topics[0].Partitions[0].ErrorCode)
	}
	resp := commit("mine", "t", "u")
	if resp.Topics[0].Partitions[0].ErrorCode != errNone || resp.Topics[1].Partitions[0].ErrorCode != errTopicAuthFailed {
		t.Fatalf("commit to mine: t %d, u %d (want 0 and TOPIC_AUTHORIZATION_FAILED)", resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[1].Partitions[0].ErrorCode)
	}
	if _, offs := e.c.FetchOffsets("mine", false, []tp{{"u", 0}}); offs[tp{"u", 0}].offset != -1 {
		t.Fatal("a commit refused for its topic was stored")
	}

	fetch := call(&kmsg.OffsetFetchRequest{Version: 5, Group: "mine", Topics: []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0}}}}).(*kmsg.OffsetFetchResponse)
	if fetch.ErrorCode != errNone || len(fetch.Topics) != 2 || fetch.Topics[0].Partitions[0].Offset != 7 || fetch.Topics[1].Partitions[0].ErrorCode != errTopicAuthFailed {
		t.Fatalf("OffsetFetch mine: %+v", fetch)
	}
	if f := call(&kmsg.OffsetFetchRequest{Version: 5, Group: "other"}).(*kmsg.OffsetFetchResponse); f.ErrorCode != errGroupAuthFailed {
		t.Fatalf("OffsetFetch of a group without DESCRIBE: %d", f.ErrorCode)
	}
	if fc := call(&kmsg.FindCoordinatorRequest{Version: 2, CoordinatorKey: "other"}).(*kmsg.FindCoordinatorResponse); fc.ErrorCode != errGroupAuthFailed {
		t.Fatalf("FindCoordinator without DESCRIBE: %d", fc.ErrorCode)
	}
	hb := call(&kmsg.HeartbeatRequest{Version: 3, Group: "other", MemberID: "m"}).(*kmsg.HeartbeatResponse)
	if hb.ErrorCode != errGroupAuthFailed {
		t.Fatalf("Heartbeat without READ: %d", hb.ErrorCode)
	}
	jg := call(&kmsg.JoinGroupRequest{Version: 5, Group: "other", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 10000, ProtocolType: "consumer",
		Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}}).(*kmsg.JoinGroupResponse)
	if jg.ErrorCode != errGroupAuthFailed || len(e.members("other")) != 0 {
		t.Fatalf("JoinGroup without READ: %d", jg.ErrorCode)
	}
	dg := call(&kmsg.DescribeGroupsRequest{Version: 3, Groups: []string{"mine", "other"}, IncludeAuthorizedOperations: true}).(*kmsg.DescribeGroupsResponse)
	if dg.Groups[0].ErrorCode != errNone || dg.Groups[0].AuthorizedOperations != int32(1<<acl.OpRead|1<<acl.OpDescribe) || dg.Groups[1].ErrorCode != errGroupAuthFailed {
		t.Fatalf("DescribeGroups: %+v", dg.Groups)
	}
	del := call(&kmsg.DeleteGroupsRequest{Version: 1, Groups: []string{"mine"}}).(*kmsg.DeleteGroupsResponse)
	if del.Groups[0].ErrorCode != errGroupAuthFailed {
		t.Fatalf("DeleteGroups without DELETE: %d", del.Groups[0].ErrorCode)
	}
	if od := call(&kmsg.OffsetDeleteRequest{Group: "mine"}).(*kmsg.OffsetDeleteResponse); od.ErrorCode != errGroupAuthFailed {
		t.Fatalf("OffsetDelete without DELETE: %d", od.ErrorCode)
	}
	lg := call(&kmsg.ListGroupsRequest{Version: 2}).(*kmsg.ListGroupsResponse)
	for _, g := range lg.Groups {
		if g.Group != "mine" {
			t.Fatalf("ListGroups without DESCRIBE on the cluster lists %q", g.Group)
		}
	}
	if len(lg.Groups) != 1 {
		t.Fatalf("ListGroups: %+v, want mine only", lg.Groups)
	}
}
