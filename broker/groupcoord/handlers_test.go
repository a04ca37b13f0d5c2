package groupcoord

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every served key and version: a minimal request is answered (JoinGroup after the initial
// delay) with a response of the same version that kmsg encodes and decodes again.
func TestHandlersAllVersions(t *testing.T) {
	e := newEnv(t)
	for _, k := range Keys() {
		for v := k.Min; v <= k.Max; v++ {
			req := kmsg.RequestForKey(int16(k.Key))
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.JoinGroupRequest:
				r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "g", 10000, 10000, "consumer"
				r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
			case *kmsg.SyncGroupRequest:
				r.Group, r.MemberID = "g", "m"
			case *kmsg.HeartbeatRequest:
				r.Group, r.MemberID = "g", "m"
			case *kmsg.LeaveGroupRequest:
				r.Group, r.MemberID = "g", "m"
				r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			case *kmsg.OffsetCommitRequest:
				r.Group, r.Generation = "s", -1
				md := "x"
				r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, Metadata: &md, LeaderEpoch: -1, Timestamp: -1}}}}
				r.RetentionTimeMillis = -1
			case *kmsg.OffsetFetchRequest:
				r.Group = "s"
				r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			case *kmsg.FindCoordinatorRequest:
				r.CoordinatorKey = "g"
			case *kmsg.DescribeGroupsRequest:
				r.Groups = []string{"g", "s"}
			case *kmsg.DeleteGroupsRequest:
				r.Groups = []string{"nope"}
			case *kmsg.OffsetDeleteRequest:
				r.Group = "s"
				r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "u", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			}
			var got kmsg.Response
			e.c.Handle(&Request{ClientID: "c", ClientHost: "/127.0.0.1", Listener: "PLAINTEXT"}, req, func(r kmsg.Response) { got = r })
			if got == nil {
				e.clock.Advance(testRebalance)
			}
			if got == nil {
				t.Fatalf("%s v%d: no response", kmsg.NameForKey(int16(k.Key)), v)
			}
			if got.GetVersion() != v || got.Key() != int16(k.Key) {
				t.Fatalf("%s v%d: response key %d version %d", kmsg.NameForKey(int16(k.Key)), v, got.Key(), got.GetVersion())
			}
			b := got.AppendTo(nil)
			back := req.ResponseKind()
			if err := back.ReadFrom(b); err != nil {
				t.Fatalf("%s v%d: response does not decode: %v", kmsg.NameForKey(int16(k.Key)), v, err)
			}
		}
	}
	// The v0 commit of a simple consumer landed and reads back through every OffsetFetch version.
	_, offs := e.c.FetchOffsets("s", false, []tp{{"t", 0}})
	if offs[tp{"t", 0}].offset != 5 {
		t.Fatalf("offset %+v", offs)
	}
}

// LeaveGroup v3+ removes a batch of members, each answered on its own.
func TestLeaveGroupBatch(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupInitialRebalanceDelay = 0 })
	a := e.join("g", "", nil, 3, "a")
	b := e.join("g", "", str("ib"), 5, "b")
	e.clock.Advance(0)
	ra, rb := e.mustJoined(a), e.mustJoined(b)
	top, codes := e.c.LeaveGroup("g", []leavingMember{{memberID: ra.memberID}, {instanceID: str("ib")}, {memberID: "ghost"}})
	if top != errNone || codes[0] != errNone || codes[1] != errNone || codes[2] != errUnknownMemberID {
		t.Fatalf("leave batch: %d %v (members %s %s)", top, codes, ra.memberID, rb.memberID)
	}
	if m := e.members("g"); len(m) != 0 {
		t.Fatalf("members left: %v", m)
	}
}
