package broker

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/fetchsession"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// Fetch: v4-12 (record batch v2; v12 flexible).
//
// Behavior:
//   - Consumers (replica_id -1) and followers (replica_id >= 0, which read up to the LEO,
//     S7) both come here; the replica manager handles min_bytes/max_wait_ms (delayed fetch
//     completing on new data or timeout) and answers per partition (HW, log start offset,
//     raw batches as stored, S1; OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER, ...).
//   - max_bytes and partition_max_bytes are passed down and enforced again here at batch
//     boundaries: once the response holds max_bytes of records later partitions get none;
//     the first partition with data always keeps its first batch (KIP-74).
//   - Incremental fetch sessions (KIP-227, broker/fetchsession, fetch_sessions.go), from v7:
//     session_epoch -1 is a sessionless full fetch (session_id 0 in the answer), 0 a full
//     fetch creating a session (its random non-zero id in the answer; 0 when the cache has no
//     room), > 0 an incremental fetch of the session: every cached partition is read, and the
//     answer carries only those with records, an error or a changed HW, LSO or log start
//     offset. Unknown session → FETCH_SESSION_ID_NOT_FOUND, wrong epoch →
//     INVALID_FETCH_SESSION_EPOCH, top-level with no partitions; forgotten_topics_data leaves
//     the session. v4-6 are sessionless.
//   - last_stable_offset = HW (no transactions), no aborted transactions; isolation_level is
//     therefore not needed: READ_COMMITTED reads up to the LSO, which is the HW, as
//     READ_UNCOMMITTED does.
//   - Fetch from follower (KIP-392): a consumer's v11 fetch carries client metadata (rack_id,
//     the listener), as Kafka's handleFetchRequest builds it from v11. A follower serves it up to
//     its HW; on the leader with replica.selector.class set, a partition may be answered with
//     no records and preferred_read_replica (replicamanager/read_replica.go); otherwise -1.
//   - Zero-copy reads: on a socket the records are not read into memory; they are regions of
//     the segment files sent with sendfile, the response framing (encoded by kmsg) written
//     around them (kproto.AppendSplicedFetch, Kafka's FileRecords.writeTo). A partition whose
//     records must be cut below the regions' length is read into memory (docs/performance.md).
//   - Record bytes go to BytesOutPerSec (per topic and all topics) for consumers and
//     ReplicationBytesOutPerSec for followers; each partition counts in
//     TotalFetchRequestsPerSec, and in FailedFetchRequestsPerSec on an unexpected error
//     (topic_metrics.go).
//
// Deviations: v12 and above are not advertised: v12's
// last_fetched_epoch asks the leader for a diverging-epoch check (KIP-595) that isrbroker
// does not make; followers truncate through OffsetForLeaderEpoch (K1) and consumers use
// KIP-320 validation, both served (docs/compatibility.md).

func init() { regKey(kmsg.Fetch, 4, 11, handleFetch) }

func handleFetch(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	// Followers' fetches are exempt from the client quotas (Kafka: CLUSTER_ACTION).
	r.quotaDone = req.ReplicaID >= 0
	fctx := s.newFetchContext(req)
	if code := fctx.Error(); code != 0 {
		resp.ErrorCode = code
		r.respond(resp)
		return
	}
	params := rm.FetchParams{
		ReplicaID: req.ReplicaID,
		MaxWait:   time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond,
		MinBytes:  req.MinBytes,
		MaxBytes:  req.MaxBytes,
	}
	if req.Version >= 11 && req.ReplicaID < 0 {
		params.Client = &rm.ClientMetadata{RackID: req.Rack, Listener: r.c.listener} // KIP-392
	}
	if params.MaxBytes <= 0 {
		params.MaxBytes = math.MaxInt32
	}
	// Authorization (docs/acls.md): a follower needs CLUSTER_ACTION on the cluster, a consumer
	// READ on each topic; a refused partition of the fetch (its session's included) is
	// answered TOPIC_AUTHORIZATION_FAILED, as Kafka.
	parts := fctx.Partitions()
	denied := fetchDenied(s.authz, r, req.ReplicaID, parts)
	for _, p := range parts {
		if denied != nil && denied[p.TopicPartition] {
			continue
		}
		params.Partitions = append(params.Partitions, rm.FetchPartition{
			TopicPartition:     p.TopicPartition,
			FetchOffset:        p.FetchOffset,
			LogStartOffset:     p.LogStartOffset,
			PartitionMaxBytes:  p.MaxBytes,
			CurrentLeaderEpoch: p.CurrentLeaderEpoch,
		})
	}
	finish := func(results []rm.FetchPartitionResult) {
		answers, size := fetchAnswers(parts, params.MaxBytes, withDenied(results, denied))
		if !r.quotaDone && r.throttledFetch(resp, fctx, size) {
			return
		}
		var keep []bool
		resp.SessionID, resp.ErrorCode, keep = fctx.Respond(time.Now(), sessionResults(answers))
		if resp.ErrorCode != 0 {
			keep = make([]bool, len(answers)) // another request of the session came first: no partitions
		}
		spliced := fillFetchTopics(resp, answers, keep)
		s.markFetch(req.ReplicaID, resp, spliced)
		s.markOmittedFetches(answers, keep)
		if len(spliced) > 0 {
			r.slot.complete(reply{fetch: &kproto.SplicedFetch{Resp: resp, Files: spliced}})
			return
		}
		r.respond(resp)
	}
	if len(params.Partitions) == 0 {
		finish(nil)
		return
	}
	// Zero-copy reads: on a socket the records stay in the segment files and go out with
	// sendfile, the response framing written around them (docs/performance.md, "Zero-copy
	// reads"); other connections get the bytes read into memory.
	params.FileRecords = r.c.zeroCopy
	s.deps.Replicas.FetchMessages(params, func(results []rm.FetchPartitionResult) {
		r.safe(func() { finish(results) })
	})
}

// fetchAnswer is one partition's answer before the session picks the answer's partitions:
// files, when set, are the records of a partition sent whole from the segment files
// (rp.RecordBatches is then empty, for kproto.AppendSplicedFetch).
type fetchAnswer struct {
	topic string
	rp    kmsg.FetchResponseTopicPartition
	files record.FileRecords
}

// fillFetchResponse answers every partition of req (a sessionless fetch) in request order and
// returns the number of record bytes included and the spliced partitions (fetchAnswers,
// fillFetchTopics).
func fillFetchResponse(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, maxBytes int32, results []rm.FetchPartitionResult) (int, []kproto.SplicedPartition) {
	var parts []fetchsession.PartitionFetch
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			parts = append(parts, fetchsession.PartitionFetch{TopicPartition: tp(t.Topic, p.Partition),
				PartitionRequest: fetchsession.PartitionRequest{FetchOffset: p.FetchOffset, MaxBytes: p.PartitionMaxBytes}})
		}
	}
	answers, total := fetchAnswers(parts, maxBytes, results)
	return total, fillFetchTopics(resp, answers, nil)
}

// fetchAnswers builds the per-partition answers in the order of parts and returns the number
// of record bytes included. Records that are file regions (FetchParams.FileRecords) and are
// sent whole stay regions (fetchAnswer.files); regions that must be cut at a batch boundary
// below their length are read into memory first (the copying path), as is every Records result.
func fetchAnswers(parts []fetchsession.PartitionFetch, maxBytes int32, results []rm.FetchPartitionResult) ([]fetchAnswer, int) {
	byTP := make(map[rm.TopicPartition]*rm.FetchPartitionResult, len(results))
	for i := range results {
		byTP[results[i].TopicPartition] = &results[i]
	}
	budget := int64(maxBytes)
	minOne := true
	total := 0
	answers := make([]fetchAnswer, 0, len(parts))
	for _, p := range parts {
		a := fetchAnswer{topic: p.Topic, rp: kmsg.NewFetchResponseTopicPartition()}
		rp := &a.rp
		rp.Partition = p.Partition
		rp.PreferredReadReplica = -1
		res, ok := byTP[p.TopicPartition]
		if !ok {
			rp.ErrorCode = kerr.UnknownServerError.Code
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			answers = append(answers, a)
			continue
		}
		rp.ErrorCode = res.ErrorCode
		if res.HasPreferredReadReplica {
			rp.PreferredReadReplica = res.PreferredReadReplica // KIP-392
		}
		rp.HighWatermark = res.HighWatermark
		rp.LastStableOffset = res.HighWatermark // no transactions: LSO = HW
		rp.LogStartOffset = res.LogStartOffset
		recs := res.Records
		limit := budget
		if pm := int64(p.MaxBytes); pm >= 0 && pm < limit {
			limit = pm
		}
		if files := res.Files; files.Len > 0 {
			if files.Len <= limit {
				minOne = false
				budget -= files.Len
				total += int(files.Len)
				rp.RecordBatches = []byte{} // the regions go here (kproto.AppendSplicedFetch)
				a.files = files
				answers = append(answers, a)
				continue
			}
			var err error
			if recs, err = files.ReadAll(nil); err != nil {
				// The segment went away after the read (deleted, truncated or closed on a
				// leadership change): the client refreshes its metadata and fetches again.
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				recs = nil
			}
		}
		if len(recs) > 0 {
			if int64(len(recs)) > limit {
				recs = recs[:batchPrefix(recs, max(limit, 0), minOne)]
			}
			if len(recs) > 0 {
				minOne = false
				budget -= int64(len(recs))
				total += len(recs)
			}
		}
		if recs == nil {
			// An empty record set is size 0, never null: librdkafka rejects MessageSetSize -1.
			recs = []byte{}
		}
		rp.RecordBatches = recs
		answers = append(answers, a)
	}
	return answers, total
}

// sessionResults is what the fetch session needs of the answers to pick the changed ones.
func sessionResults(answers []fetchAnswer) []fetchsession.PartitionResult {
	out := make([]fetchsession.PartitionResult, len(answers))
	for i := range answers {
		rp := &answers[i].rp
		out[i] = fetchsession.PartitionResult{
			ErrorCode:        rp.ErrorCode,
			HighWatermark:    rp.HighWatermark,
			LastStableOffset: rp.LastStableOffset,
			LogStartOffset:   rp.LogStartOffset,
			RecordBytes:      int64(len(rp.RecordBatches)) + answers[i].files.Len,
		}
	}
	return out
}

// fillFetchTopics puts the answers keep selects (nil: all) into resp.Topics, consecutive
// partitions of a topic under one topic entry (Kafka's batchByTopic), and returns the spliced
// partitions indexed into resp.
func fillFetchTopics(resp *kmsg.FetchResponse, answers []fetchAnswer, keep []bool) []kproto.SplicedPartition {
	var spliced []kproto.SplicedPartition
	resp.Topics = resp.Topics[:0]
	for i := range answers {
		if keep != nil && !keep[i] {
			continue
		}
		a := &answers[i]
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != a.topic {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = a.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		if a.files.Len > 0 {
			spliced = append(spliced, kproto.SplicedPartition{Topic: len(resp.Topics) - 1, Partition: len(rt.Partitions), Records: a.files})
		}
		rt.Partitions = append(rt.Partitions, a.rp)
	}
	return spliced
}
