package zkcoord

import (
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch is Kafka's ControllerBrokerRequestBatch: the requests one controller event produces,
// queued per broker in the order LeaderAndIsr, UpdateMetadata, StopReplica. Partition states
// are taken from the controller's cache when the batch is sent.
type batch struct {
	ct *controller
	// leaderAndIsr[broker][tp] = isNew
	leaderAndIsr map[int32]map[TopicPartition]bool
	umBrokers    map[int32]bool
	umFull       map[int32]bool
	umParts      map[TopicPartition]bool
	stop         map[int32]map[bool][]TopicPartition
}

func (ct *controller) newBatch() *batch {
	return &batch{
		ct:           ct,
		leaderAndIsr: map[int32]map[TopicPartition]bool{},
		umBrokers:    map[int32]bool{},
		umFull:       map[int32]bool{},
		umParts:      map[TopicPartition]bool{},
		stop:         map[int32]map[bool][]TopicPartition{},
	}
}

// addLeaderAndIsr queues a LeaderAndIsr for tp to brokers and, like Kafka, an
// UpdateMetadata for tp to every live broker.
func (b *batch) addLeaderAndIsr(brokers []int32, tp TopicPartition, isNew bool) {
	for _, id := range brokers {
		if !b.ct.isLive(id) {
			continue
		}
		m := b.leaderAndIsr[id]
		if m == nil {
			m = map[TopicPartition]bool{}
			b.leaderAndIsr[id] = m
		}
		m[tp] = m[tp] || isNew
	}
	b.updateMetadata(b.ct.liveIDs(), []TopicPartition{tp})
}

// updateMetadata queues UpdateMetadata for tps (possibly none: the live broker list alone)
// to brokers.
func (b *batch) updateMetadata(brokers []int32, tps []TopicPartition) {
	for _, id := range brokers {
		b.umBrokers[id] = true
	}
	for _, tp := range tps {
		b.umParts[tp] = true
	}
}

// fullUpdateMetadata queues an UpdateMetadata with every partition to brokers.
func (b *batch) fullUpdateMetadata(brokers []int32) {
	for _, id := range brokers {
		b.umBrokers[id] = true
		b.umFull[id] = true
	}
}

func (b *batch) stopReplica(brokers []int32, tp TopicPartition, del bool) {
	for _, id := range brokers {
		m := b.stop[id]
		if m == nil {
			m = map[bool][]TopicPartition{}
			b.stop[id] = m
		}
		m[del] = append(m[del], tp)
	}
}

// send builds the requests and puts them on the brokers' queues.
func (b *batch) send() {
	ct := b.ct
	for _, id := range sortedKeys(b.leaderAndIsr) {
		if s := ct.senders[id]; s != nil {
			s.enqueue(b.leaderAndIsrRequest(id, b.leaderAndIsr[id]))
		}
	}
	if len(b.umBrokers) > 0 {
		var parts []TopicPartition
		for tp := range b.umParts {
			parts = append(parts, tp)
		}
		sortTPs(parts)
		var all []TopicPartition
		for _, id := range sortedKeys(b.umBrokers) {
			s := ct.senders[id]
			if s == nil {
				continue
			}
			ps := parts
			if b.umFull[id] {
				if all == nil {
					all = ct.sortedStates()
					for _, tp := range parts { // partitions being deleted are not in states
						if _, ok := ct.states[tp]; !ok {
							all = append(all, tp)
						}
					}
				}
				ps = all
			}
			s.enqueue(b.updateMetadataRequest(id, ps))
		}
	}
	for _, id := range sortedKeys(b.stop) {
		s := ct.senders[id]
		if s == nil {
			continue
		}
		for _, del := range []bool{false, true} {
			if tps := b.stop[id][del]; len(tps) > 0 {
				s.enqueue(b.stopReplicaRequest(id, tps, del))
			}
		}
	}
}

func (b *batch) leaderAndIsrRequest(broker int32, parts map[TopicPartition]bool) kmsg.Request {
	ct := b.ct
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = leaderAndIsrVersion
	req.ControllerID = ct.c.cfg.BrokerID
	req.ControllerEpoch = ct.epoch
	req.BrokerEpoch = ct.live[broker].Epoch
	tps := make([]TopicPartition, 0, len(parts))
	for tp := range parts {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	leaders := map[int32]bool{}
	var topic *kmsg.LeaderAndISRRequestTopicState
	for _, tp := range tps {
		st := ct.states[tp]
		if st == nil {
			continue
		}
		if topic == nil || topic.Topic != tp.Topic {
			req.TopicStates = append(req.TopicStates, kmsg.LeaderAndISRRequestTopicState{Topic: tp.Topic})
			topic = &req.TopicStates[len(req.TopicStates)-1]
		}
		p := kmsg.NewLeaderAndISRRequestTopicPartition()
		p.Topic = tp.Topic
		p.Partition = tp.Partition
		p.ControllerEpoch = st.controllerEpoch
		p.Leader = st.leader
		p.LeaderEpoch = st.leaderEpoch
		p.ISR = append([]int32{}, st.isr...)
		p.ZKVersion = st.zkVersion
		p.Replicas = append([]int32{}, ct.replicas(tp)...)
		p.AddingReplicas = []int32{}
		p.RemovingReplicas = []int32{}
		p.IsNew = parts[tp]
		topic.PartitionStates = append(topic.PartitionStates, p)
		if ct.isLive(st.leader) {
			leaders[st.leader] = true
		}
	}
	for _, id := range sortedKeys(leaders) {
		ep, ok := ct.live[id].Endpoint(ct.c.cfg.InterBrokerListener)
		if !ok {
			continue
		}
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = id, ep.Host, ep.Port
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	return req
}

func (b *batch) updateMetadataRequest(broker int32, tps []TopicPartition) kmsg.Request {
	ct := b.ct
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = updateMetadataVersion
	req.ControllerID = ct.c.cfg.BrokerID
	req.ControllerEpoch = ct.epoch
	req.BrokerEpoch = ct.live[broker].Epoch
	var topic *kmsg.UpdateMetadataRequestTopicState
	for _, tp := range tps {
		st := ct.states[tp]
		if st == nil {
			continue
		}
		if topic == nil || topic.Topic != tp.Topic {
			req.TopicStates = append(req.TopicStates, kmsg.UpdateMetadataRequestTopicState{Topic: tp.Topic})
			topic = &req.TopicStates[len(req.TopicStates)-1]
		}
		p := kmsg.NewUpdateMetadataRequestTopicPartition()
		p.Topic = tp.Topic
		p.Partition = tp.Partition
		p.ControllerEpoch = st.controllerEpoch
		p.Leader = st.leader
		if ct.deleting[tp.Topic] {
			p.Leader = zkdata.LeaderDuringDelete
		}
		p.LeaderEpoch = st.leaderEpoch
		p.ISR = append([]int32{}, st.isr...)
		p.ZKVersion = st.zkVersion
		p.Replicas = append([]int32{}, ct.replicas(tp)...)
		p.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if !ct.isLive(r) {
				p.OfflineReplicas = append(p.OfflineReplicas, r)
			}
		}
		topic.PartitionStates = append(topic.PartitionStates, p)
	}
	for _, id := range ct.liveIDs() {
		bi := ct.live[id]
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		for _, e := range bi.Endpoints {
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol = e.Host, e.Port, e.Listener, securityProtocolID(e.Protocol())
			lb.Endpoints = append(lb.Endpoints, ep)
		}
		if bi.Rack != "" {
			r := bi.Rack
			lb.Rack = &r
		}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	return req
}

func (b *batch) stopReplicaRequest(broker int32, tps []TopicPartition, del bool) kmsg.Request {
	ct := b.ct
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = stopReplicaVersion
	req.ControllerID = ct.c.cfg.BrokerID
	req.ControllerEpoch = ct.epoch
	req.BrokerEpoch = ct.live[broker].Epoch
	req.DeletePartitions = del
	sortTPs(tps)
	var topic *kmsg.StopReplicaRequestTopic
	for _, tp := range tps {
		if topic == nil || topic.Topic != tp.Topic {
			req.Topics = append(req.Topics, kmsg.StopReplicaRequestTopic{Topic: tp.Topic})
			topic = &req.Topics[len(req.Topics)-1]
		}
		topic.Partitions = append(topic.Partitions, tp.Partition)
	}
	return req
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortInt32(out)
	return out
}
