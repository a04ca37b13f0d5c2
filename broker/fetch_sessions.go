package broker

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/fetchsession"
)

// Incremental fetch sessions (KIP-227): the Fetch handler resolves each request against the
// cache (broker/fetchsession) before reading, and lets the context pick the partitions of the
// answer after.

// newFetchSessionCache builds the cache of max.incremental.fetch.session.cache.slots sessions
// (Config.FetchSessionCacheSlots: 0 is Kafka's default, negative none), its metrics in the
// broker's registry. Sessions a cache has no room for are answered with session_id 0.
func newFetchSessionCache(cfg Config) *fetchsession.Cache {
	slots := int(cfg.FetchSessionCacheSlots)
	switch {
	case slots == 0:
		slots = fetchsession.DefaultCacheSlots
	case slots < 0:
		slots = 0
	}
	return fetchsession.NewCache(slots, fetchsession.MinEvictionAge, cfg.Registry)
}

// newFetchContext resolves req: Fetch v4-6 have no session fields and are sessionless full
// fetches (Kafka reads them as session 0, epoch -1); from v7 session_id and session_epoch name
// the context, forgotten_topics_data the partitions an incremental fetch drops. A follower's
// (replica_id >= 0) sessions are privileged in the cache's eviction.
func (s *Server) newFetchContext(req *kmsg.FetchRequest) *fetchsession.Context {
	sessionID, epoch := req.SessionID, req.SessionEpoch
	if req.Version < 7 {
		sessionID, epoch = fetchsession.InvalidSessionID, fetchsession.FinalEpoch
	}
	var fetch []fetchsession.PartitionFetch
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			f := fetchsession.PartitionFetch{
				TopicPartition: tp(t.Topic, p.Partition),
				PartitionRequest: fetchsession.PartitionRequest{
					FetchOffset:        p.FetchOffset,
					LogStartOffset:     p.LogStartOffset,
					MaxBytes:           p.PartitionMaxBytes,
					CurrentLeaderEpoch: p.CurrentLeaderEpoch,
				},
			}
			if req.Version < 9 {
				f.CurrentLeaderEpoch = -1
			}
			fetch = append(fetch, f)
		}
	}
	var forget []fetchsession.TopicPartition
	if req.Version >= 7 {
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				forget = append(forget, tp(ft.Topic, p))
			}
		}
	}
	return s.fetchSessions.NewContext(time.Now(), sessionID, epoch, fetch, forget, req.ReplicaID >= 0)
}
