package perf

import (
	"fmt"
	"io"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// clientMetrics counts what --print-metrics reports, from franz-go hooks. The names follow
// the Kafka client's metrics where one corresponds (group:name:{client-id=...}).
type clientMetrics struct {
	group, clientID string

	requests, bytesOut, bytesIn atomic.Int64
	batches, batchRecords       atomic.Int64
	batchBytes, batchWireBytes  atomic.Int64 // uncompressed, compressed
	fetchRecords, fetchBytes    atomic.Int64

	// batchWritten wakes awaitBatchRecords (cap 1) after a produce batch hook.
	batchWritten chan struct{}
}

var (
	_ kgo.HookBrokerWrite         = (*clientMetrics)(nil)
	_ kgo.HookBrokerRead          = (*clientMetrics)(nil)
	_ kgo.HookProduceBatchWritten = (*clientMetrics)(nil)
	_ kgo.HookFetchBatchRead      = (*clientMetrics)(nil)
)

func newClientMetrics(group, clientID string) *clientMetrics {
	return &clientMetrics{group: group, clientID: clientID, batchWritten: make(chan struct{}, 1)}
}

func (m *clientMetrics) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, err error) {
	if err == nil {
		m.requests.Add(1)
	}
	m.bytesOut.Add(int64(n))
}

func (m *clientMetrics) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	m.bytesIn.Add(int64(n))
}

func (m *clientMetrics) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, b kgo.ProduceBatchMetrics) {
	m.batches.Add(1)
	m.batchRecords.Add(int64(b.NumRecords))
	m.batchBytes.Add(int64(b.UncompressedBytes))
	m.batchWireBytes.Add(int64(b.CompressedBytes))
	select {
	case m.batchWritten <- struct{}{}:
	default:
	}
}

// awaitBatchRecords waits, at most max, until the produce batch hooks have counted n records.
// franz-go calls HookProduceBatchWritten on a goroutine of its own after the batch's records
// are finished, so a Flush can return before the last batches are counted; --print-metrics
// would then report fewer records sent than were acknowledged.
func (m *clientMetrics) awaitBatchRecords(n int64, max time.Duration) {
	t := time.NewTimer(max)
	defer t.Stop()
	for m.batchRecords.Load() < n {
		select {
		case <-m.batchWritten:
		case <-t.C:
			return
		}
	}
}

func (m *clientMetrics) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, b kgo.FetchBatchMetrics) {
	m.fetchRecords.Add(int64(b.NumRecords))
	m.fetchBytes.Add(int64(b.UncompressedBytes))
}

// values returns the metric values by display name.
func (m *clientMetrics) values() map[string]float64 {
	tag := fmt.Sprintf("{client-id=%s}", m.clientID)
	name := func(group, n string) string { return group + ":" + n + ":" + tag }
	ratio := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	out := map[string]float64{
		name(m.group, "request-total"):       float64(m.requests.Load()),
		name(m.group, "outgoing-byte-total"): float64(m.bytesOut.Load()),
		name(m.group, "incoming-byte-total"): float64(m.bytesIn.Load()),
	}
	if m.group == "producer-metrics" {
		out[name(m.group, "record-send-total")] = float64(m.batchRecords.Load())
		out[name(m.group, "batch-size-avg")] = ratio(m.batchWireBytes.Load(), m.batches.Load())
		out[name(m.group, "records-per-batch-avg")] = ratio(m.batchRecords.Load(), m.batches.Load())
		out[name(m.group, "compression-rate-avg")] = ratio(m.batchWireBytes.Load(), m.batchBytes.Load())
	} else {
		g := "consumer-fetch-manager-metrics"
		out[name(g, "records-consumed-total")] = float64(m.fetchRecords.Load())
		out[name(g, "bytes-consumed-total")] = float64(m.fetchBytes.Load())
	}
	return out
}

// print writes the metrics like Kafka's ToolsUtils.printMetrics: a "Metric Name  Value"
// header, then one "name : value" line per metric, names padded and sorted.
func (m *clientMetrics) print(out io.Writer) {
	vals := m.values()
	names := make([]string, 0, len(vals))
	width := len("Metric Name")
	for n := range vals {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	fmt.Fprintf(out, "\n%-*s   %s\n", width, "Metric Name", "Value")
	for _, n := range names {
		fmt.Fprintf(out, "%-*s : %.3f\n", width, n, vals[n])
	}
}
