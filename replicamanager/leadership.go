package replicamanager

import (
	"fmt"
)

// LeadershipListener is told, after a LeaderAndIsr or StopReplica was applied, which partitions
// this broker now leads and which it follows or stopped hosting (Kafka's
// onLeadershipChange(updatedLeaders, updatedFollowers) in KafkaApis; the group coordinator
// loads and unloads __consumer_offsets partitions with it). It is called with the replica
// manager's state-change lock held: it must only schedule work, never call back in.
type LeadershipListener func(leaders, followers []TopicPartition)

// setLeadershipListener installs the listener (nil removes it).
func (c *controllerRequests) setLeadershipListener(f LeadershipListener) {
	if f == nil {
		c.leadership.Store(nil)
		return
	}
	c.leadership.Store(&f)
}

func (c *controllerRequests) notifyLeadership(leaders, followers []TopicPartition) {
	if len(leaders) == 0 && len(followers) == 0 {
		return
	}
	if f := c.leadership.Load(); f != nil {
		(*f)(leaders, followers)
	}
}

func partitionsOf(states []PartitionState) []TopicPartition {
	out := make([]TopicPartition, len(states))
	for i, st := range states {
		out[i] = st.TopicPartition
	}
	return out
}

// LocalRead is a read of a local log (ReadLocal).
type LocalRead struct {
	Records        []byte // whole batches, as stored
	LogStartOffset int64
	LogEndOffset   int64
}

// ReadLocal reads the local log of tp whatever this broker's role: whole batches from offset
// (raised to the log start offset) up to the LEO, at most maxBytes except that the first batch
// is always whole. The group coordinator loads __consumer_offsets partitions with it.
func (lr *leaderReads) ReadLocal(tp TopicPartition, offset int64, maxBytes int32) (LocalRead, error) {
	p := lr.pool.getPartition(tp)
	if p == nil {
		return LocalRead{LogStartOffset: -1, LogEndOffset: -1}, fmt.Errorf("replicamanager: %s-%d is not hosted", tp.Topic, tp.Partition)
	}
	start, leo := p.log.LogStartOffset(), p.log.LogEndOffset()
	offset = max(offset, start)
	if offset >= leo {
		return LocalRead{LogStartOffset: start, LogEndOffset: leo}, nil
	}
	recs, err := p.log.Read(offset, maxBytes, leo, true)
	if err != nil {
		return LocalRead{LogStartOffset: start, LogEndOffset: leo}, err
	}
	return LocalRead{Records: recs, LogStartOffset: start, LogEndOffset: leo}, nil
}
