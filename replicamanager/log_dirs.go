package replicamanager

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// LogDirInfo is one log dir of this broker as DescribeLogDirs reports it (Kafka's
// ReplicaManager.describeLogDirs): the dir's absolute path, its error code (KAFKA_STORAGE_ERROR,
// with no replicas, for a dir that went offline after an I/O error: logdir_failure.go) and its
// replicas.
type LogDirInfo struct {
	Dir       string
	ErrorCode int16
	Replicas  map[TopicPartition]ReplicaInfo
}

// ReplicaInfo is one partition's log in a log dir: Size is the bytes of all its segments;
// OffsetLag is max(HW − LEO, 0) for a hosted partition (Kafka's getLogEndOffsetLag for a
// current log: 0 for a leader and for a follower, whose HW never passes its LEO) and -1 when
// the log is not part of a hosted partition (not created yet or being deleted). isrbroker has
// no future logs (no moves between log dirs), so IsFuture is always false.
type ReplicaInfo struct {
	Size      int64
	OffsetLag int64
	IsFuture  bool
}

// DescribeLogDirs describes every log dir with the logs of the partitions want accepts
// (want == nil: every log).
func (d *logDirs) DescribeLogDirs(want func(TopicPartition) bool) []LogDirInfo {
	byDir := d.logs.LogsByDir()
	offline := map[string]bool{}
	for _, d := range d.logs.OfflineLogDirs() {
		offline[d] = true
	}
	out := make([]LogDirInfo, 0, len(byDir))
	for dir, logs := range byDir {
		info := LogDirInfo{Dir: dir, Replicas: map[TopicPartition]ReplicaInfo{}}
		if offline[dir] {
			info.ErrorCode = kerr.KafkaStorageError.Code
			out = append(out, info)
			continue
		}
		for tp, l := range logs {
			if want != nil && !want(tp) {
				continue
			}
			info.Replicas[tp] = ReplicaInfo{Size: l.Size(), OffsetLag: d.logEndOffsetLag(tp, l)}
		}
		out = append(out, info)
	}
	return out
}

// logEndOffsetLag is Kafka's getLogEndOffsetLag for a current (not future) log.
func (d *logDirs) logEndOffsetLag(tp TopicPartition, l *logstore.Log) int64 {
	p := d.pool.getPartition(tp)
	if p == nil || p.log != l {
		return -1
	}
	return max(p.hw.get()-l.LogEndOffset(), 0)
}
