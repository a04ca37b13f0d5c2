package broker

import (
	"sync/atomic"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's per-API request metrics (RequestChannel's RequestMetrics in Kafka 2.4):
// kafka.network:type=RequestMetrics,name=RequestsPerSec,request=<Api> (a meter),
// name=TotalTimeMs,request=<Api> (from the request read off the socket to its response
// written, milliseconds) and its five phases, which add up to it (docs/metrics.md):
//   - RequestQueueTimeMs: read → the handler starts (waiting for a response slot, as
//     queued.max.requests, or for the first UpdateMetadata);
//   - LocalTimeMs: the handler's own work (an append, a read);
//   - RemoteTimeMs: parked in a purgatory after the handler returned (an acks=-1 produce
//     waiting for the ISR, a fetch waiting for min_bytes);
//   - ResponseQueueTimeMs: completed → a goroutine takes it to write it (earlier responses of
//     the connection go first);
//   - ResponseSendTimeMs: writing it to the socket (conn_write.go).
//
// A fetch counts as "Fetch" and as "FetchConsumer" or "FetchFollower" (replica_id >= 0), as
// Kafka 2.4 does. The request names are Kafka's ApiKeys names. Deviation: RequestsPerSec has no
// version key property (Kafka's has one series per request version).
const (
	metricRequestsPerSec      = "RequestsPerSec"
	metricTotalTimeMs         = "TotalTimeMs"
	metricRequestQueueTimeMs  = "RequestQueueTimeMs"
	metricLocalTimeMs         = "LocalTimeMs"
	metricRemoteTimeMs        = "RemoteTimeMs"
	metricResponseQueueTimeMs = "ResponseQueueTimeMs"
	metricResponseSendTimeMs  = "ResponseSendTimeMs"
)

// kafkaAPINames are Kafka 2.4's ApiKeys names, by key.
var kafkaAPINames = [...]string{
	"Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata",
	"ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat",
	"LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions",
	"CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch",
	"AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit",
	"DescribeAcls", "CreateAcls", "DeleteAcls", "DescribeConfigs", "AlterConfigs",
	"AlterReplicaLogDirs", "DescribeLogDirs", "SaslAuthenticate", "CreatePartitions",
	"CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken",
	"DescribeDelegationToken", "DeleteGroups", "ElectLeaders", "IncrementalAlterConfigs",
	"AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete",
}

// requestName is Kafka's name of key (kmsg's for keys newer than Kafka 2.4).
func requestName(key int16) string {
	if key >= 0 && int(key) < len(kafkaAPINames) {
		return kafkaAPINames[key]
	}
	return kmsg.NameForKey(key)
}

// RequestMetricName is the registry name of metric name ("RequestsPerSec", "TotalTimeMs")
// for request (a Kafka API name, or FetchConsumer / FetchFollower).
func RequestMetricName(name, request string) string {
	return "kafka.network:type=RequestMetrics,name=" + name + ",request=" + request
}

// apiMetrics is the request meter, the total-time timer and its phases' timers of one request
// name.
type apiMetrics struct {
	requests  metrics.Meter
	totalTime metrics.Timer
	phases    [numPhases]metrics.Timer // by requestPhase
}

// requestPhase indexes the phases of a request's total time, in order.
type requestPhase int

const (
	phaseRequestQueue requestPhase = iota
	phaseLocal
	phaseRemote
	phaseResponseQueue
	phaseResponseSend
	numPhases
)

var phaseMetricNames = [numPhases]string{metricRequestQueueTimeMs, metricLocalTimeMs, metricRemoteTimeMs, metricResponseQueueTimeMs, metricResponseSendTimeMs}

func newAPIMetrics(reg metrics.Registry, request string) *apiMetrics {
	m := &apiMetrics{
		requests:  metrics.GetOrRegisterMeter(RequestMetricName(metricRequestsPerSec, request), reg),
		totalTime: getOrRegisterTimeHistogram(RequestMetricName(metricTotalTimeMs, request), reg),
	}
	for i, name := range phaseMetricNames {
		m.phases[i] = getOrRegisterTimeHistogram(RequestMetricName(name, request), reg)
	}
	return m
}

// getOrRegisterTimeHistogram is a go-metrics Timer without the meter of its own: Kafka's
// TotalTimeMs and phases are histograms (the rate is RequestsPerSec's), and a StandardTimer
// marks a meter on every update (three moving averages and a clock read), six or twelve times
// per request; their reservoir (exponentially decaying, 1028 samples, alpha 0.015, as Kafka's
// biased histograms and go-metrics' own timers) is the same. Exported as a summary in ms
// (broker/metricsexport), as before.
func getOrRegisterTimeHistogram(name string, reg metrics.Registry) metrics.Timer {
	return reg.GetOrRegister(name, func() metrics.Timer {
		return metrics.NewCustomTimer(metrics.NewHistogram(metrics.NewExpDecaySample(1028, 0.015)), noMeter{})
	}).(metrics.Timer)
}

// noMeter is go-metrics' NilMeter (nothing counted, no ticking) whose Snapshot is the
// *MeterSnapshot that StandardTimer.Snapshot asserts (NilMeter's own would panic there, and
// with it every scrape of the metrics endpoint).
type noMeter struct{ metrics.NilMeter }

func (noMeter) Snapshot() metrics.Meter { return &metrics.MeterSnapshot{} }

// requestMetrics holds every served key's metrics, made once at start so the request path
// indexes a slice and formats no name.
type requestMetrics struct {
	byKey                        []*apiMetrics // index: API key; nil for keys not served
	fetchConsumer, fetchFollower *apiMetrics
}

func newRequestMetrics(reg metrics.Registry) *requestMetrics {
	rm := &requestMetrics{
		fetchConsumer: newAPIMetrics(reg, "FetchConsumer"),
		fetchFollower: newAPIMetrics(reg, "FetchFollower"),
	}
	for key := range handlers {
		if int(key) >= len(rm.byKey) {
			rm.byKey = append(rm.byKey, make([]*apiMetrics, int(key)+1-len(rm.byKey))...)
		}
		rm.byKey[key] = newAPIMetrics(reg, requestName(key))
	}
	return rm
}

// requestTiming is what a request's slot records once its response is written. The points in
// time after start are offsets from it (monotonic). dequeued and localDone are set on the reader
// goroutine before and after the handler, completed by whoever completes the slot; all before
// the response stream's lock hands the slot to its writer (a response is not taken while its
// handler runs), so the writer sees them. localDone stays atomic for readers outside that order.
type requestTiming struct {
	start time.Time   // the request frame was read
	api   *apiMetrics // the request's API; nil: not counted
	fetch *apiMetrics // FetchConsumer or FetchFollower for a fetch, else nil

	dequeued  time.Duration // the handler started
	localDone int64         // the handler returned (ns after start; 0: not yet); atomic access only once the slot is shared
	completed time.Duration // the response was completed (slot.complete)
	taken     time.Duration // the writer took the response
}

// handlerStarted, handlerReturned, responseCompleted and responseTaken mark the phase
// boundaries (see the package comment above for what each phase is).
func (t *requestTiming) handlerStarted() { t.dequeued = time.Since(t.start) }
func (t *requestTiming) handlerReturned() {
	atomic.StoreInt64(&t.localDone, int64(time.Since(t.start)))
}
func (t *requestTiming) responseCompleted() { t.completed = time.Since(t.start) }
func (t *requestTiming) responseTaken()     { t.taken = time.Since(t.start) }

// timing starts the timing of a request of key read at start; req is the decoded body (nil
// when it was not decoded).
func (rm *requestMetrics) timing(start time.Time, key int16, req kmsg.Request) requestTiming {
	t := requestTiming{start: start}
	if key >= 0 && int(key) < len(rm.byKey) {
		t.api = rm.byKey[key]
	}
	if f, ok := req.(*kmsg.FetchRequest); ok {
		if f.ReplicaID >= 0 {
			t.fetch = rm.fetchFollower
		} else {
			t.fetch = rm.fetchConsumer
		}
	}
	return t
}

// record counts the request, its total time and its phases; called once its response is
// written (or, for an acks=0 produce, completed without one). A response completed inside its
// handler has no remote time: its local time ends at the completion (as Kafka's, whose
// apiLocalCompleteTimeNanos is set by sendResponse when the handler answers itself).
func (t *requestTiming) record() {
	if t.api == nil {
		return
	}
	total := time.Since(t.start)
	local := t.completed
	if d := time.Duration(atomic.LoadInt64(&t.localDone)); d > 0 && d < local {
		local = d
	}
	phases := [numPhases]time.Duration{
		phaseRequestQueue:  t.dequeued,
		phaseLocal:         local - t.dequeued,
		phaseRemote:        t.completed - local,
		phaseResponseQueue: t.taken - t.completed,
		phaseResponseSend:  total - t.taken,
	}
	for _, m := range []*apiMetrics{t.api, t.fetch} {
		if m == nil {
			continue
		}
		m.requests.Mark(1)
		m.totalTime.Update(total)
		for i, d := range phases {
			m.phases[i].Update(max(d, 0))
		}
	}
}
