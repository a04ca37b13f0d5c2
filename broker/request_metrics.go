package broker

import (
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's per-API request metrics (RequestChannel's RequestMetrics in Kafka 2.4):
// kafka.network:type=RequestMetrics,name=RequestsPerSec,request=<Api> (a meter) and
// name=TotalTimeMs,request=<Api> (from the request read off the socket to its response
// written, milliseconds). A fetch counts as "Fetch" and as "FetchConsumer" or "FetchFollower"
// (replica_id >= 0), as Kafka 2.4 does. The request names are Kafka's ApiKeys names
// (docs/metrics.md). Deviation: RequestsPerSec has no version key property (Kafka's has one
// series per request version).
const (
	metricRequestsPerSec = "RequestsPerSec"
	metricTotalTimeMs    = "TotalTimeMs"
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

// apiMetrics is the request meter and total-time timer of one request name.
type apiMetrics struct {
	requests  metrics.Meter
	totalTime metrics.Timer
}

func newAPIMetrics(reg metrics.Registry, request string) *apiMetrics {
	return &apiMetrics{
		requests:  metrics.GetOrRegisterMeter(RequestMetricName(metricRequestsPerSec, request), reg),
		totalTime: metrics.GetOrRegisterTimer(RequestMetricName(metricTotalTimeMs, request), reg),
	}
}

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

// requestTiming is what a request's slot records once its response is written.
type requestTiming struct {
	start time.Time   // the request frame was read
	api   *apiMetrics // the request's API; nil: not counted
	fetch *apiMetrics // FetchConsumer or FetchFollower for a fetch, else nil
}

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

// record counts the request and its total time; called once its response is written (or,
// for an acks=0 produce, completed without one).
func (t requestTiming) record() {
	if t.api == nil {
		return
	}
	d := time.Since(t.start)
	t.api.requests.Mark(1)
	t.api.totalTime.Update(d)
	if t.fetch != nil {
		t.fetch.requests.Mark(1)
		t.fetch.totalTime.Update(d)
	}
}
