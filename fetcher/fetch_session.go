package fetcher

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// The session metadata of a Fetch request (KIP-227, Kafka's FetchMetadata).
const (
	invalidSessionID int32 = 0
	initialEpoch     int32 = 0  // a full fetch asking for a session
	finalEpoch       int32 = -1 // a sessionless full fetch
)

func nextEpoch(prev int32) int32 {
	switch {
	case prev < 0:
		return finalEpoch
	case prev == 1<<31-1:
		return 1
	default:
		return prev + 1
	}
}

// sessionPartitionData is what a fetch asks of one partition; a partition whose data is unchanged
// since the last request of the session is left out of an incremental request.
type sessionPartitionData struct {
	fetchOffset    int64
	logStartOffset int64
	maxBytes       int32
	leaderEpoch    int32
}

type sessionPartition struct {
	tp   TopicPartition
	data sessionPartitionData
}

// fetchSession is a fetcher's side of its incremental fetch session with the leader (KIP-227,
// Kafka's FetchSessionHandler, which Kafka's ReplicaFetcherThread uses from IBP 1.1): the first
// fetch is full and asks for a session (epoch 0); once the leader answers with a session id the
// fetches are incremental, carrying only the partitions that joined or whose fetch offset, log
// start offset, max bytes or leader epoch changed, and in forgotten_topics_data those that left
// (removed, truncating, backing off, throttled). The leader's answers carry only the partitions
// with something new. A session error (FETCH_SESSION_ID_NOT_FOUND: the leader restarted or
// evicted the session; INVALID_FETCH_SESSION_EPOCH), a failed request or an answer that does not
// match the session makes the next fetch full again. Used by the fetcher's goroutine only.
type fetchSession struct {
	id    int32 // invalidSessionID until the leader gives one
	epoch int32 // of the next request: initialEpoch means a full fetch

	parts map[TopicPartition]sessionPartitionData // as the leader's session has them
	order []TopicPartition
}

func newFetchSession() *fetchSession {
	return &fetchSession{epoch: initialEpoch, parts: make(map[TopicPartition]sessionPartitionData)}
}

func (s *fetchSession) full() bool { return s.epoch == initialEpoch || s.epoch == finalEpoch }

// build fills req's session fields, partitions and forgotten topics for the partitions next (in
// order), which become the session's. It reports whether there is anything to send: partitions
// or, for an incremental fetch, partitions to forget.
func (s *fetchSession) build(req *kmsg.FetchRequest, next []sessionPartition) bool {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	topics := kproto.NewByTopic(&req.Topics, func(topic string) kmsg.FetchRequestTopic {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		return rt
	})
	add := func(p sessionPartition) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.CurrentLeaderEpoch = p.data.leaderEpoch
		rp.FetchOffset = p.data.fetchOffset
		rp.LogStartOffset = p.data.logStartOffset
		rp.PartitionMaxBytes = p.data.maxBytes
		rt := topics.Topic(p.tp.Topic)
		rt.Partitions = append(rt.Partitions, rp)
	}
	nextParts := make(map[TopicPartition]sessionPartitionData, len(next))
	order := make([]TopicPartition, 0, len(next))
	for _, p := range next {
		if _, dup := nextParts[p.tp]; dup {
			continue
		}
		nextParts[p.tp] = p.data
		order = append(order, p.tp)
		if prev, ok := s.parts[p.tp]; s.full() || !ok || prev != p.data {
			add(p)
		}
	}
	forgotten := 0
	if !s.full() {
		forget := kproto.NewByTopic(&req.ForgottenTopics, func(topic string) kmsg.FetchRequestForgottenTopic {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = topic
			return ft
		})
		for _, tp := range s.order {
			if _, ok := nextParts[tp]; !ok {
				ft := forget.Topic(tp.Topic)
				ft.Partitions = append(ft.Partitions, tp.Partition)
				forgotten++
			}
		}
	}
	s.parts, s.order = nextParts, order
	return len(order) > 0 || forgotten > 0
}

// handleResponse moves the session on after an answer (Kafka's handleResponse). It reports
// whether the answer's partitions are to be processed; when not, problem says why, and the next
// fetch is full (a fresh session after FETCH_SESSION_ID_NOT_FOUND, else closing this one).
func (s *fetchSession) handleResponse(resp *kmsg.FetchResponse) (ok bool, problem string) {
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code {
			s.id, s.epoch = invalidSessionID, initialEpoch
		} else {
			s.epoch = initialEpoch // a full fetch closing session s.id
		}
		return false, kerr.ErrorForCode(resp.ErrorCode).Error()
	}
	if s.full() {
		if problem := s.verify(resp, true); problem != "" {
			s.id, s.epoch = invalidSessionID, initialEpoch
			return false, problem
		}
		if resp.SessionID == invalidSessionID {
			s.id, s.epoch = invalidSessionID, initialEpoch // no session (the leader's cache is full): full again
		} else {
			s.id, s.epoch = resp.SessionID, nextEpoch(initialEpoch)
		}
		return true, ""
	}
	if problem := s.verify(resp, false); problem != "" {
		s.epoch = initialEpoch
		return false, problem
	}
	if resp.SessionID == invalidSessionID {
		s.id, s.epoch = invalidSessionID, initialEpoch // the leader closed the session
	} else {
		s.epoch = nextEpoch(s.epoch)
	}
	return true, ""
}

// handleError is a failed request (Kafka's handleError): the next fetch is full, closing the
// session.
func (s *fetchSession) handleError() { s.epoch = initialEpoch }

// verify checks an answer's partitions against the session: a full answer has exactly the
// session's partitions, an incremental one only partitions of it.
func (s *fetchSession) verify(resp *kmsg.FetchResponse, full bool) string {
	seen := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if _, ok := s.parts[tp]; !ok {
				return fmt.Sprintf("the answer has %v, which is not in the fetch session", tp)
			}
			seen++
		}
	}
	if full && seen != len(s.parts) {
		return fmt.Sprintf("the full fetch answer has %d partitions of the %d fetched", seen, len(s.parts))
	}
	return ""
}
