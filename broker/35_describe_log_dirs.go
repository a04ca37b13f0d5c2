package broker

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// DescribeLogDirs: v0-2 (v2 flexible). Kafka 2.4 serves v0-1; v2 only adds the flexible
// encoding.
//
// Behavior:
//   - Every log dir of this broker is answered, by absolute path (Kafka's
//     ReplicaManager.describeLogDirs), with the requested partitions it holds; topics null =
//     every log of the broker. A requested partition this broker has no log for is absent.
//   - Per partition: size = bytes of all its segments; offset_lag = max(HW − LEO, 0) for a
//     hosted partition (0 for a leader and for an in-sync or lagging follower alike, as Kafka's
//     getLogEndOffsetLag for a current log), -1 for a log not hosted (yet); is_future = false.
//   - Dirs with no requested logs are listed with no topics and error 0.
//   - A dir that went offline after an I/O error is listed with KAFKA_STORAGE_ERROR and no
//     topics (KIP-112; docs/kafka-facts.md §12).
//
// Deviations: no future logs (isrbroker never moves replicas between log dirs). No
// authorization (no ACLs).

func init() { regKey(kmsg.DescribeLogDirs, 0, 2, handleDescribeLogDirs) }

// LogDirDescriber is the replica manager's side of DescribeLogDirs; *replicamanager.Requests
// implements it.
type LogDirDescriber interface {
	DescribeLogDirs(want func(rm.TopicPartition) bool) []rm.LogDirInfo
}

func handleDescribeLogDirs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	d := s.deps.LogDirs
	// Without DESCRIBE on the cluster Kafka 2.4 answers no log dirs, no error (docs/acls.md).
	if d == nil || s.authz.deniedCluster(r, acl.OpDescribe) {
		r.respond(resp)
		return
	}
	var want func(rm.TopicPartition) bool
	if req.Topics != nil {
		set := map[rm.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				set[rm.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
		want = func(tp rm.TopicPartition) bool { return set[tp] }
	}
	infos := d.DescribeLogDirs(want)
	sort.Slice(infos, func(i, j int) bool { return infos[i].Dir < infos[j].Dir })
	for _, info := range infos {
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir, dir.ErrorCode = info.Dir, info.ErrorCode
		byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for tp, ri := range info.Replicas {
			p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			p.Partition, p.Size, p.OffsetLag, p.IsFuture = tp.Partition, ri.Size, ri.OffsetLag, ri.IsFuture
			byTopic[tp.Topic] = append(byTopic[tp.Topic], p)
		}
		topics := make([]string, 0, len(byTopic))
		for t := range byTopic {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = t
			rt.Partitions = byTopic[t]
			sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
			dir.Topics = append(dir.Topics, rt)
		}
		resp.Dirs = append(resp.Dirs, dir)
	}
	r.respond(resp)
}
