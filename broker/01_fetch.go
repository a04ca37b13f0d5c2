package broker

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
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
//   - No incremental fetch sessions (KIP-227): every fetch is a full fetch and the response
//     carries session_id 0, which tells clients sessions are off. session_epoch > 0 names a
//     session we cannot have → FETCH_SESSION_ID_NOT_FOUND top-level.
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
// Deviations: forgotten_topics_data is ignored (sessions are off). v12 and above are not
// advertised: v12's last_fetched_epoch asks the leader for a diverging-epoch check (KIP-595)
// that isrbroker does not make; followers truncate through OffsetForLeaderEpoch (K1) and consumers use
// KIP-320 validation, both served (docs/compatibility.md).

func init() { regKey(kmsg.Fetch, 4, 11, handleFetch) }

func handleFetch(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionEpoch > 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
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
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			fp := rm.FetchPartition{
				TopicPartition:     tp(t.Topic, p.Partition),
				FetchOffset:        p.FetchOffset,
				LogStartOffset:     p.LogStartOffset,
				PartitionMaxBytes:  p.PartitionMaxBytes,
				CurrentLeaderEpoch: p.CurrentLeaderEpoch,
			}
			if req.Version < 9 {
				fp.CurrentLeaderEpoch = -1
			}
			params.Partitions = append(params.Partitions, fp)
		}
	}
	if len(params.Partitions) == 0 {
		r.respond(resp)
		return
	}
	// Zero-copy reads: on a socket the records stay in the segment files and go out with
	// sendfile, the response framing written around them (docs/performance.md, "Zero-copy
	// reads"); other connections get the bytes read into memory.
	params.FileRecords = r.c.zeroCopy
	s.deps.Replicas.FetchMessages(params, func(results []rm.FetchPartitionResult) {
		r.safe(func() {
			_, spliced := fillFetchResponse(resp, req, params.MaxBytes, results)
			s.markFetch(req.ReplicaID, resp, spliced)
			if len(spliced) > 0 {
				r.slot.complete(reply{fetch: &kproto.SplicedFetch{Resp: resp, Files: spliced}})
				return
			}
			r.respond(resp)
		})
	})
}

// fillFetchResponse builds the per-partition answers in request order and returns the
// number of record bytes included. Records that are file regions (FetchParams.FileRecords)
// and are sent whole are returned as spliced, their partition's record set left empty for
// kproto.AppendSplicedFetch; regions that must be cut at a batch boundary below their length
// are read into memory first (the copying path), as is every Records result.
func fillFetchResponse(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, maxBytes int32, results []rm.FetchPartitionResult) (int, []kproto.SplicedPartition) {
	var spliced []kproto.SplicedPartition
	byTP := make(map[rm.TopicPartition]*rm.FetchPartitionResult, len(results))
	for i := range results {
		byTP[results[i].TopicPartition] = &results[i]
	}
	budget := int64(maxBytes)
	minOne := true
	total := 0
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		rt.TopicID = t.TopicID
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.PreferredReadReplica = -1
			res, ok := byTP[tp(t.Topic, p.Partition)]
			if !ok {
				rp.ErrorCode = kerr.UnknownServerError.Code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.ErrorCode = res.ErrorCode
			if res.HasPreferredReadReplica {
				rp.PreferredReadReplica = res.PreferredReadReplica
			}
			rp.HighWatermark = res.HighWatermark
			rp.LastStableOffset = res.HighWatermark // no transactions: LSO = HW
			rp.LogStartOffset = res.LogStartOffset
			recs := res.Records
			limit := budget
			if pm := int64(p.PartitionMaxBytes); pm >= 0 && pm < limit {
				limit = pm
			}
			if files := res.Files; files.Len > 0 {
				if files.Len <= limit {
					minOne = false
					budget -= files.Len
					total += int(files.Len)
					rp.RecordBatches = []byte{} // the regions go here (kproto.AppendSplicedFetch)
					spliced = append(spliced, kproto.SplicedPartition{Topic: len(resp.Topics), Partition: len(rt.Partitions), Records: files})
					rt.Partitions = append(rt.Partitions, rp)
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
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return total, spliced
}
