package replicamanager

import "time"

// Requests is what the broker's request handlers (broker.Replicas and the optional capabilities
// it looks for), the group coordinator and the replication page call: each method hands the
// call to the request path that owns it (ReplicaManager lists them). ReplicaManager.Requests
// returns it.
type Requests struct {
	ctl        *controllerRequests
	reads      *leaderReads
	produce    *appender
	deletes    *deleteRecords
	dirs       *logDirs
	view       *localView
	topicStats *BrokerTopicStats
}

// AppendRecords appends produce data to the partitions this broker leads and answers through
// done: at once for acks 0/1, and for acks=-1 once every partition is done or timeout expires
// (produce.go).
func (r *Requests) AppendRecords(timeout time.Duration, acks int16, entries map[TopicPartition][]byte, done func(map[TopicPartition]ProduceResult)) {
	r.produce.AppendRecords(timeout, acks, entries, done)
}

// FetchMessages serves a fetch from a consumer or a follower, parking it in the purgatory when
// it must wait (leader_reads.go).
func (r *Requests) FetchMessages(fp FetchParams, done func([]FetchPartitionResult)) {
	r.reads.FetchMessages(fp, done)
}

// ListOffsets answers earliest, latest and by-timestamp lookups on partitions led here
// (leader_reads.go).
func (r *Requests) ListOffsets(replicaID int32, isolationLevel int8, parts []ListOffsetsPartition) []ListOffsetsResult {
	return r.reads.ListOffsets(replicaID, isolationLevel, parts)
}

// ListOffsetsAnyReplica answers ListOffsets for the debugging replica id from the local
// replica, leader or follower (debug_offsets.go).
func (r *Requests) ListOffsetsAnyReplica(parts []ListOffsetsPartition) []ListOffsetsResult {
	return r.reads.ListOffsetsAnyReplica(parts)
}

// LastOffsetForLeaderEpoch answers OffsetForLeaderEpoch (K1, KIP-279; leader_reads.go).
func (r *Requests) LastOffsetForLeaderEpoch(replicaID int32, parts []EpochEndOffsetRequest) []EpochEndOffsetResult {
	return r.reads.LastOffsetForLeaderEpoch(replicaID, parts)
}

// ReadLocal reads the local log of tp whatever this broker's role (leadership.go).
func (r *Requests) ReadLocal(tp TopicPartition, offset int64, maxBytes int32) (LocalRead, error) {
	return r.reads.ReadLocal(tp, offset, maxBytes)
}

// BecomeLeaderOrFollower applies a LeaderAndIsr request from the controller (S9, S14;
// controller_requests.go).
func (r *Requests) BecomeLeaderOrFollower(req LeaderAndIsrRequest) LeaderAndIsrResult {
	return r.ctl.BecomeLeaderOrFollower(req)
}

// StopReplicas applies a StopReplica request (S22 case 1; controller_requests.go).
func (r *Requests) StopReplicas(req StopReplicaRequest) StopReplicaResult {
	return r.ctl.StopReplicas(req)
}

// CheckControllerEpoch validates an UpdateMetadata's epochs, caching a newer controller epoch
// (controller_requests.go).
func (r *Requests) CheckControllerEpoch(controllerID, controllerEpoch int32, brokerEpoch int64) int16 {
	return r.ctl.CheckControllerEpoch(controllerID, controllerEpoch, brokerEpoch)
}

// DeleteRecords deletes the records below each partition's requested offset on the partitions
// this broker leads (KIP-107; delete_records.go).
func (r *Requests) DeleteRecords(timeout time.Duration, parts []DeleteRecordsPartition, done func([]DeleteRecordsResult)) {
	r.deletes.DeleteRecords(timeout, parts, done)
}

// DescribeLogDirs describes every log dir with the logs of the partitions want accepts
// (want == nil: every log; log_dirs.go).
func (r *Requests) DescribeLogDirs(want func(TopicPartition) bool) []LogDirInfo {
	return r.dirs.DescribeLogDirs(want)
}

// BrokerTopicStats returns the replica manager's BrokerTopicMetrics (the broker marks the
// fetch side with it; topic_stats.go).
func (r *Requests) BrokerTopicStats() *BrokerTopicStats { return r.topicStats }

// Snapshot returns this broker's local view for the replication page (snapshot.go).
func (r *Requests) Snapshot(afterSeq uint64) Snapshot { return r.view.Snapshot(afterSeq) }
