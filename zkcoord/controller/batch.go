package controller

import (
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestBatch is Kafka's ControllerBrokerRequestBatch: the requests one controller event
// produces, collected per broker and sent as at most one LeaderAndIsr, one UpdateMetadata and
// one StopReplica per delete flag to each broker, in that order. Partition states are taken
// from the controller's cache when the batch is sent.
type requestBatch struct {
	ct *Controller
	// leaderAndIsr[broker][tp] = isNew
	leaderAndIsr map[int32]map[TopicPartition]bool
	umBrokers    map[int32]bool
	umFull       map[int32]bool
	umParts      map[TopicPartition]bool
	stop         map[int32]map[bool][]TopicPartition
}

func (ct *Controller) newBatch() *requestBatch {
	return &requestBatch{
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
func (b *requestBatch) addLeaderAndIsr(brokers []int32, tp TopicPartition, isNew bool) {
	for _, id := range brokers {
		if !b.ct.ctx.isLive(id) {
			continue
		}
		m := b.leaderAndIsr[id]
		if m == nil {
			m = map[TopicPartition]bool{}
			b.leaderAndIsr[id] = m
		}
		m[tp] = m[tp] || isNew
	}
	b.updateMetadata(b.ct.ctx.liveIDs(), []TopicPartition{tp})
}

// updateMetadata queues UpdateMetadata for tps (possibly none: the live broker list alone)
// to brokers.
func (b *requestBatch) updateMetadata(brokers []int32, tps []TopicPartition) {
	for _, id := range brokers {
		b.umBrokers[id] = true
	}
	for _, tp := range tps {
		b.umParts[tp] = true
	}
}

// fullUpdateMetadata queues an UpdateMetadata with every partition to brokers.
func (b *requestBatch) fullUpdateMetadata(brokers []int32) {
	for _, id := range brokers {
		b.umBrokers[id] = true
		b.umFull[id] = true
	}
}

func (b *requestBatch) stopReplica(brokers []int32, tp TopicPartition, del bool) {
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
func (b *requestBatch) send() {
	ct := b.ct
	for _, id := range sorted.Keys(b.leaderAndIsr) {
		if ct.chans.senders[id] != nil {
			ct.chans.send(id, b.leaderAndIsrRequest(id, b.leaderAndIsr[id]))
		}
	}
	if len(b.umBrokers) > 0 {
		parts := sorted.TPKeys(b.umParts)
		var all []TopicPartition
		for _, id := range sorted.Keys(b.umBrokers) {
			if ct.chans.senders[id] == nil {
				continue
			}
			ps := parts
			if b.umFull[id] {
				if all == nil {
					all = ct.ctx.sortedStates()
					for _, tp := range parts { // partitions being deleted are not in states
						if _, ok := ct.ctx.states[tp]; !ok {
							all = append(all, tp)
						}
					}
				}
				ps = all
			}
			ct.chans.send(id, b.updateMetadataRequest(id, ps))
		}
	}
	for _, id := range sorted.Keys(b.stop) {
		if ct.chans.senders[id] == nil {
			continue
		}
		for _, del := range []bool{false, true} {
			if tps := b.stop[id][del]; len(tps) > 0 {
				ct.chans.send(id, b.stopReplicaRequest(id, tps, del))
			}
		}
	}
}

// header is what every controller request carries: the controller's id and epoch, and the
// epoch of the broker it goes to (a broker ignores a request for an older epoch of itself).
func (b *requestBatch) header(broker int32) (controllerID, controllerEpoch int32, brokerEpoch int64) {
	return b.ct.cfg.BrokerID, b.ct.ctx.epoch, b.ct.ctx.live[broker].Epoch
}

func (b *requestBatch) leaderAndIsrRequest(broker int32, parts map[TopicPartition]bool) kmsg.Request {
	ct := b.ct
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = leaderAndIsrVersion
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = b.header(broker)
	tps := sorted.TPKeys(parts)
	leaders := map[int32]bool{}
	topics := kproto.NewByTopic(&req.TopicStates, func(topic string) kmsg.LeaderAndISRRequestTopicState {
		return kmsg.LeaderAndISRRequestTopicState{Topic: topic}
	})
	for _, tp := range tps {
		st := ct.ctx.states[tp]
		if st == nil {
			continue
		}
		p := kmsg.NewLeaderAndISRRequestTopicPartition()
		p.Topic = tp.Topic
		p.Partition = tp.Partition
		p.ControllerEpoch = st.controllerEpoch
		p.Leader = st.leader
		p.LeaderEpoch = st.leaderEpoch
		p.ISR = append([]int32{}, st.isr...)
		p.ZKVersion = st.zkVersion
		p.Replicas = append([]int32{}, ct.ctx.replicas(tp)...)
		p.AddingReplicas = []int32{}
		p.RemovingReplicas = []int32{}
		p.IsNew = parts[tp]
		topic := topics.Topic(tp.Topic)
		topic.PartitionStates = append(topic.PartitionStates, p)
		if ct.ctx.isLive(st.leader) {
			leaders[st.leader] = true
		}
	}
	for _, id := range sorted.Keys(leaders) {
		ep, ok := ct.ctx.live[id].Endpoint(ct.cfg.InterBrokerListener)
		if !ok {
			continue
		}
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = id, ep.Host, ep.Port
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	return req
}

func (b *requestBatch) updateMetadataRequest(broker int32, tps []TopicPartition) kmsg.Request {
	ct := b.ct
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = updateMetadataVersion
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = b.header(broker)
	topics := kproto.NewByTopic(&req.TopicStates, func(topic string) kmsg.UpdateMetadataRequestTopicState {
		return kmsg.UpdateMetadataRequestTopicState{Topic: topic}
	})
	for _, tp := range tps {
		st := ct.ctx.states[tp]
		if st == nil {
			continue
		}
		p := kmsg.NewUpdateMetadataRequestTopicPartition()
		p.Topic = tp.Topic
		p.Partition = tp.Partition
		p.ControllerEpoch = st.controllerEpoch
		p.Leader = st.leader
		if ct.deletion.isQueued(tp.Topic) {
			p.Leader = zkdata.LeaderDuringDelete
		}
		p.LeaderEpoch = st.leaderEpoch
		p.ISR = append([]int32{}, st.isr...)
		p.ZKVersion = st.zkVersion
		p.Replicas = append([]int32{}, ct.ctx.replicas(tp)...)
		p.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if !ct.ctx.isReplicaOnline(r, tp) { // dead broker or offline log dir
				p.OfflineReplicas = append(p.OfflineReplicas, r)
			}
		}
		topic := topics.Topic(tp.Topic)
		topic.PartitionStates = append(topic.PartitionStates, p)
	}
	for _, id := range ct.ctx.liveIDs() {
		bi := ct.ctx.live[id]
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

func (b *requestBatch) stopReplicaRequest(broker int32, tps []TopicPartition, del bool) kmsg.Request {
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = stopReplicaVersion
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = b.header(broker)
	req.DeletePartitions = del
	sorted.TPs(tps)
	topics := kproto.NewByTopic(&req.Topics, func(topic string) kmsg.StopReplicaRequestTopic {
		return kmsg.StopReplicaRequestTopic{Topic: topic}
	})
	for _, tp := range tps {
		topic := topics.Topic(tp.Topic)
		topic.Partitions = append(topic.Partitions, tp.Partition)
	}
	return req
}
