package broker

import (
	"sync/atomic"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/decaysample"
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
	totalTime *timeHistogram
	phases    [numPhases]*timeHistogram // by requestPhase
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

// timeHistogram is one of Kafka's request time histograms: a go-metrics Timer without a meter
// of its own, for the registry and the exporter (Kafka's TotalTimeMs and phases are histograms;
// the rate is RequestsPerSec's, and a StandardTimer marks a meter on every update: three moving
// averages and a clock read, six or twelve times per request), over Kafka's reservoir
// (decaysample: Yammer's exponentially decaying sample, 1028 values, alpha 0.015). The request
// path updates the reservoir directly (record), with the time it read for the total; the
// Timer's own Update goes through its lock to the same reservoir. Exported as a summary in ms
// (broker/metricsexport).
type timeHistogram struct {
	metrics.Timer
	sample *decaysample.Sample
}

func newTimeHistogram() *timeHistogram {
	s := decaysample.New(decaysample.DefaultSize, decaysample.DefaultAlpha)
	return &timeHistogram{Timer: metrics.NewCustomTimer(metrics.NewHistogram(s), noMeter{}), sample: s}
}

// updateAt records d, observed at now.
func (h *timeHistogram) updateAt(now time.Time, d time.Duration) { h.sample.UpdateAt(now, int64(d)) }

// getOrRegisterTimeHistogram returns the histogram registered under name, registering a new
// one if there is none (or, in a registry shared with other code, something else under it).
func getOrRegisterTimeHistogram(name string, reg metrics.Registry) *timeHistogram {
	if h, ok := reg.GetOrRegister(name, func() *timeHistogram { return newTimeHistogram() }).(*timeHistogram); ok {
		return h
	}
	h := newTimeHistogram()
	reg.Unregister(name)
	_ = reg.Register(name, h)
	return h
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
	now := t.start.Add(total) // the histograms' observation time, without another clock read
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
		m.totalTime.updateAt(now, total)
		for i, d := range phases {
			m.phases[i].updateAt(now, max(d, 0))
		}
	}
}
