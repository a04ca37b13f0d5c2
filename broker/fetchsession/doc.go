// Package fetchsession is the broker's cache of incremental fetch sessions (KIP-227), as Kafka
// 2.4's FetchSession.scala has it: the FetchSessionCache, the cached partitions of each session,
// and the four fetch contexts a Fetch request resolves to (docs/compatibility.md, Fetch).
//
// A Fetch request carries (session_id, session_epoch):
//
//   - epoch -1 (FINAL_EPOCH): a sessionless full fetch; a session named by session_id is closed.
//     The answer has session_id 0.
//   - epoch 0 (INITIAL_EPOCH): a full fetch that asks for a new session (closing the one named
//     by session_id, if any). The answer carries the new session's id, random and non-zero, or
//     0 when the cache has no room and nothing can be evicted; the next epoch expected is 1.
//   - epoch > 0: an incremental fetch of session session_id at exactly that epoch: its
//     partitions update the cached ones (fetch offset, log start offset, max bytes, leader
//     epoch) or join the session, forgotten_topics_data leave it, and every cached partition is
//     fetched; the answer holds only the partitions with something to tell (records, an error,
//     a changed HW, LSO or log start offset). An unknown id is FETCH_SESSION_ID_NOT_FOUND, a
//     wrong epoch INVALID_FETCH_SESSION_EPOCH; a session left without partitions is closed and
//     the fetch answered sessionless.
//
// The cache holds max.incremental.fetch.session.cache.slots sessions. A new session may evict an
// existing one when the cache is full: first one unused for longer than the eviction age (Kafka's
// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, 120 s, a constant of KafkaServer, no config);
// otherwise the least valuable by (privileged, size, id) among those older than the eviction age,
// where a follower's (privileged) new session may also evict any consumer session regardless of
// age. Its metrics are Kafka's (kafka.server:type=FetchSessionCache, docs/metrics.md).
//
// The package imports only the record leaf (logstore/record) and is used by the Fetch handler
// (broker/01_fetch.go); locks: the cache's before a session's, never the other way round.
package fetchsession
