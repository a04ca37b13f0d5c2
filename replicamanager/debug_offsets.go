package replicamanager

// DebuggingReplicaID is Kafka's Request.DebuggingConsumerId (-2): a ListOffsets with this
// replica id may be answered by any replica of the partition, follower included, and its
// latest offset is the replica's LEO (docs/kafka-facts.md, "ListOffsets from a follower").
// `reassign-partitions --verify` uses it to read an adding replica's LEO.
const DebuggingReplicaID int32 = -2

// ListOffsetsAnyReplica answers ListOffsets for the debugging replica id from the local
// replica, leader or follower (Kafka 2.4's fetchOffsetForTimestamp with
// fetchOnlyFromLeader=false): earliest is the log start offset, latest the LEO, a timestamp
// the first offset at or after it below the LEO. current_leader_epoch, when given, fences as
// for a leader (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
func (lr *leaderReads) ListOffsetsAnyReplica(parts []ListOffsetsPartition) []ListOffsetsResult {
	out := make([]ListOffsetsResult, len(parts))
	for i, part := range parts {
		r := &out[i]
		r.TopicPartition = part.TopicPartition
		r.Timestamp, r.Offset, r.LeaderEpoch = -1, -1, -1
		p := lr.pool.getPartition(part.TopicPartition)
		if p == nil {
			r.ErrorCode = lr.pool.notHostedCode(part.TopicPartition)
			continue
		}
		p.mu.RLock()
		code := p.checkLeaderEpochLocked(part.CurrentLeaderEpoch)
		v := p.viewLocked()
		p.mu.RUnlock()
		if code != 0 {
			r.ErrorCode = code
			continue
		}
		r.LeaderEpoch = v.leaderEpoch
		switch part.Timestamp {
		case -2:
			r.Offset = v.logStart
		case -1:
			r.Offset = v.leo
		default:
			if off, ts, ok := p.log.OffsetForTimestamp(part.Timestamp); ok && off < v.leo {
				r.Offset, r.Timestamp = off, ts
			}
		}
	}
	return out
}
