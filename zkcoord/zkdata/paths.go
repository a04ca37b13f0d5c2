// Package zkdata is the one place that knows isrbroker's znode paths and their JSON. The
// layout and the JSON match Kafka 2.4 in ZooKeeper mode exactly (Kafka's ZkData.scala;
// restated in docs/design.md, "Controller"), so Kafka's own tools can read a cluster's state.
// Paths are chroot-relative: the ZooKeeper client (zkcoord/zkclient) adds the chroot. No
// other package builds a path string; it imports no ZooKeeper client.
package zkdata

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	PathConsumers                = "/consumers"
	PathBrokerIDs                = "/brokers/ids"
	PathBrokerTopics             = "/brokers/topics"
	PathBrokerSeqID              = "/brokers/seqid"
	PathConfigChanges            = "/config/changes"
	PathConfigTopics             = "/config/topics"
	PathConfigClients            = "/config/clients"
	PathConfigUsers              = "/config/users"
	PathConfigBrokers            = "/config/brokers"
	PathDeleteTopics             = "/admin/delete_topics"
	PathIsrChange                = "/isr_change_notification"
	PathProducerIDBlock          = "/latest_producer_id_block"
	PathLogDirEvent              = "/log_dir_event_notification"
	PathCluster                  = "/cluster"
	PathClusterID                = "/cluster/id"
	PathController               = "/controller"
	PathControllerEpoch          = "/controller_epoch"
	PathPreferredReplicaElection = "/admin/preferred_replica_election"
	PathReassignPartitions       = "/admin/reassign_partitions"

	// IsrChangePrefix and ConfigChangePrefix name the sequential notification children.
	IsrChangePrefix    = "isr_change_"
	ConfigChangePrefix = "config_change_"

	// IsrChangeSequential and ConfigChangeSequential are the paths to create with the
	// sequential flag for a new notification.
	IsrChangeSequential    = PathIsrChange + "/" + IsrChangePrefix
	ConfigChangeSequential = PathConfigChanges + "/" + ConfigChangePrefix

	LeaderDuringDelete     = -2 // LeaderAndIsr.LeaderDuringDelete
	NoLeader               = -1 // LeaderAndIsr.NoLeader
	InitialControllerEpoch = 0
	InitialLeaderEpoch     = 0

	// DefaultBrokerEntity is the cluster-wide broker config entity (/config/brokers/<default>).
	DefaultBrokerEntity = "<default>"
)

// PersistentPaths are created at startup when missing (Kafka's ZkData.PersistentZkPaths).
var PersistentPaths = []string{
	PathConsumers, PathBrokerIDs, PathBrokerTopics, PathBrokerSeqID, PathConfigChanges,
	PathConfigTopics, PathConfigClients, PathConfigUsers, PathConfigBrokers, PathDeleteTopics,
	PathIsrChange, PathProducerIDBlock, PathLogDirEvent, PathCluster,
}

func BrokerIDPath(id int32) string        { return PathBrokerIDs + "/" + strconv.Itoa(int(id)) }
func TopicPath(t string) string           { return PathBrokerTopics + "/" + t }
func TopicPartitionsPath(t string) string { return TopicPath(t) + "/partitions" }
func TopicPartitionPath(t string, p int32) string {
	return TopicPartitionsPath(t) + "/" + strconv.Itoa(int(p))
}
func PartitionStatePath(t string, p int32) string { return TopicPartitionPath(t, p) + "/state" }
func TopicConfigPath(t string) string             { return PathConfigTopics + "/" + t }
func DeleteTopicPath(t string) string             { return PathDeleteTopics + "/" + t }
func BrokerConfigPath(id int32) string            { return BrokerEntityConfigPath(strconv.Itoa(int(id))) }

// BrokerEntityConfigPath is /config/brokers/<name> (a broker id or DefaultBrokerEntity).
func BrokerEntityConfigPath(name string) string { return PathConfigBrokers + "/" + name }

// Child is parent/name, for children listed by a getChildren.
func Child(parent, name string) string { return parent + "/" + name }

// BrokerEntity and TopicEntity are the entity paths of config change notifications.
func BrokerEntity(name string) string { return "brokers/" + name }
func TopicEntity(t string) string     { return "topics/" + t }

func ConfigChangePath(seq int64) string {
	return fmt.Sprintf("%s/%s%010d", PathConfigChanges, ConfigChangePrefix, seq)
}

// ConfigChangeSeqs returns the sequence numbers of the config_change_<seq> children, sorted.
func ConfigChangeSeqs(children []string) []int64 {
	return sequenceNumbers(children, ConfigChangePrefix)
}

// sequenceNumbers returns the sequence numbers of the children named prefix<seq> (ZooKeeper's
// sequential nodes), sorted; other children are skipped.
func sequenceNumbers(children []string, prefix string) []int64 {
	out := make([]int64, 0, len(children))
	for _, ch := range children {
		rest, ok := strings.CutPrefix(ch, prefix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 0 {
			continue
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// IsIsrChange reports whether a child of PathIsrChange is an ISR change notification.
func IsIsrChange(child string) bool { return strings.HasPrefix(child, IsrChangePrefix) }

const maxTopicNameLength = 249

// ValidTopicName is Kafka's Topic.validate: 1..249 chars of [a-zA-Z0-9._-], not "." or "..".
// Only valid names are turned into paths.
func ValidTopicName(t string) bool {
	if t == "" || len(t) > maxTopicNameLength || t == "." || t == ".." {
		return false
	}
	for i := 0; i < len(t); i++ {
		b := t[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

func nowMsString() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }
