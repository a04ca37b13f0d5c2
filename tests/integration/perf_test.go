package integration

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 4 item 5: `isrbroker perf produce|consume` through the built binary against a live
// 3-broker cluster; the output must parse the way tools parse Kafka's
// kafka-producer-perf-test / kafka-consumer-perf-test output.

var (
	// ProducerPerformance's final line (Kafka 2.4 printTotal).
	perfProduceFinal = regexp.MustCompile(`(?m)^(\d+) records sent, (\d+\.\d+) records/sec \((\d+\.\d+) MB/sec\), (\d+\.\d+) ms avg latency, (\d+\.\d+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$`)
	// ConsumerPerformance's data line: two dates, then MB, MB/s, messages, messages/s,
	// rebalance ms, fetch ms, fetch MB/s, fetch messages/s.
	perfConsumeData = regexp.MustCompile(`(?m)^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}), (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}), (\d+\.\d{4}), (\d+\.\d{4}), (\d+), (\d+\.\d{4}), (\d+), (\d+), (\d+\.\d{4}), (\d+\.\d{4})$`)
)

const perfHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"

func TestPerfProduceAndConsumeParseLikeKafka(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic, records = "perf", 20000
	c.CreateTopicWithConfigs(topic, 6, 3, map[string]string{"min.insync.replicas": "2"})
	bootstrap := strings.Join(c.BootstrapAddrs(), ",")

	r := cluster.RunBinary(t, "", 2*time.Minute, "perf", "produce", "--topic", topic,
		"--num-records", strconv.Itoa(records), "--record-size", "100", "--throughput", "-1",
		"--producer-props", "acks=all", "bootstrap.servers="+bootstrap)
	if r.TimedOut || r.ExitCode != 0 {
		t.Fatalf("perf produce: exit %d (timed out %v)\nstdout: %s\nstderr: %s", r.ExitCode, r.TimedOut, r.Stdout, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	m := perfProduceFinal.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("the last line of perf produce does not parse like Kafka's:\n%s", r.Stdout)
	}
	if m[1] != strconv.Itoa(records) {
		t.Fatalf("%s records sent, want %d", m[1], records)
	}
	rps, _ := strconv.ParseFloat(m[2], 64)
	mbps, _ := strconv.ParseFloat(m[3], 64)
	avg, _ := strconv.ParseFloat(m[4], 64)
	maxLat, _ := strconv.ParseFloat(m[5], 64)
	p50, _ := strconv.Atoi(m[6])
	p999, _ := strconv.Atoi(m[9])
	if rps <= 0 || mbps <= 0 || avg <= 0 || maxLat < avg || float64(p50) > maxLat || float64(p999) > maxLat {
		t.Fatalf("implausible numbers in %q", m[0])
	}
	// records/s and MB/s agree for 100-byte records.
	if got := rps * 100 / (1 << 20); got < mbps-0.01 || got > mbps+0.01 {
		t.Fatalf("%.2f MB/s does not match %.1f records/s of 100 B", mbps, rps)
	}
	// Every acknowledged record is in the log, below the HW.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := c.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != records {
		t.Fatalf("end offsets %v sum to %d, want %d", ends, total, records)
	}

	r = cluster.RunBinary(t, "", 2*time.Minute, "perf", "consume", "--bootstrap-server", bootstrap,
		"--topic", topic, "--messages", strconv.Itoa(records), "--timeout", "20000")
	if r.TimedOut || r.ExitCode != 0 {
		t.Fatalf("perf consume: exit %d (timed out %v)\nstdout: %s\nstderr: %s", r.ExitCode, r.TimedOut, r.Stdout, r.Stderr)
	}
	lines = strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 2 || lines[0] != perfHeader {
		t.Fatalf("perf consume output is not Kafka's header and one data line:\n%s", r.Stdout)
	}
	m = perfConsumeData.FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("the data line does not parse like Kafka's: %q", lines[1])
	}
	if m[5] != strconv.Itoa(records) || m[3] != "1.9073" || m[7] != "0" {
		t.Fatalf("consumed %s messages, %s MB, rebalance %s ms; want %d, 1.9073 (20000 × 100 B), 0", m[5], m[3], m[7], records)
	}

	// --throughput paces the producer: 1500 records at 1000 records/s take about 1.5 s.
	r = cluster.RunBinary(t, "", 2*time.Minute, "perf", "produce", "--topic", topic, "--num-records", "1500",
		"--record-size", "10", "--throughput", "1000", "--producer-props", "bootstrap.servers="+bootstrap, "linger.ms=1", "--print-metrics")
	if r.ExitCode != 0 {
		t.Fatalf("throttled perf produce: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if m = perfProduceFinal.FindStringSubmatch(r.Stdout); m == nil { // the final line precedes the metrics
		t.Fatalf("throttled run: no final line in %q", r.Stdout)
	}
	if rps, _ := strconv.ParseFloat(m[2], 64); m[1] != "1500" || rps > 1100 {
		t.Fatalf("throttled to 1000 records/s, got %s records at %.1f records/s", m[1], rps)
	}
	// --print-metrics: Kafka's "Metric Name  Value" table after the final line.
	if !regexp.MustCompile(`(?m)^Metric Name +Value$`).MatchString(r.Stdout) ||
		!regexp.MustCompile(`(?m)^producer-metrics:record-send-total:\{client-id=perf-producer-client\} +: 1500\.000$`).MatchString(r.Stdout) {
		t.Fatalf("--print-metrics output lacks the metrics table or record-send-total 1500:\n%s", r.Stdout)
	}

	// --show-detailed-stats: the detailed header, then interval lines in the same columns.
	r = cluster.RunBinary(t, "", 2*time.Minute, "perf", "consume", "--bootstrap-server", bootstrap,
		"--topic", topic, "--messages", strconv.Itoa(records), "--show-detailed-stats", "--reporting-interval", "1")
	lines = strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.ExitCode != 0 || len(lines) < 2 || !strings.HasPrefix(lines[0], "time, threadId, data.consumed.in.MB") {
		t.Fatalf("perf consume --show-detailed-stats: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	detailed := regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}, 0, \d+\.\d{4}, \d+\.\d{4}, \d+, \d+\.\d{4}, 0, \d+, \d+\.\d{4}, \d+\.\d{4}$`)
	for _, l := range lines[1:] {
		if !detailed.MatchString(l) {
			t.Fatalf("detailed stats line %q does not parse like Kafka's", l)
		}
	}

	// Errors are one line on stderr and exit status 1.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "consume", "--bootstrap-server", bootstrap, "--topic", "no-such-topic", "--messages", "1"}, "topic no-such-topic does not exist"},
		{[]string{"perf", "produce", "--topic", topic, "--num-records", "1", "--record-size", "1", "--throughput", "-1",
			"--producer-props", "bootstrap.servers=" + bootstrap, "acks=2"}, `invalid value "2" for producer property acks`},
		{[]string{"perf", "produce", "--topic", topic, "--num-records", "1", "--record-size", "1", "--throughput", "-1",
			"--producer-props", "bootstrap.servers=" + bootstrap, "frobnicate=1"}, `unknown producer property "frobnicate"`},
	} {
		r := cluster.RunBinary(t, "", time.Minute, tc.args...)
		stderr := strings.TrimSpace(r.Stderr)
		if r.ExitCode != 1 || strings.Contains(stderr, "\n") || !strings.HasPrefix(stderr, "isrbroker: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line with %q", tc.args, r.ExitCode, stderr, tc.want)
		}
	}
}
