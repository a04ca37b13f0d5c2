package perf

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// The regular expressions tools use on Kafka's output (e.g. Kafka's own system tests,
// kafkatest/services/performance/producer_performance.py, split the final line on ", ").
var (
	kafkaProducerFinal  = regexp.MustCompile(`^(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d{2}) ms avg latency, (\d+\.\d{2}) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$`)
	kafkaProducerWindow = regexp.MustCompile(`^(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d) ms avg latency, (\d+\.\d) ms max latency\.$`)
)

func TestSummaryFormatMatchesKafka(t *testing.T) {
	s := Summary{Records: 100000, RecordsPerSec: 19996.0008, MBPerSec: 19.53, AvgLatencyMs: 2.34, MaxLatencyMs: 45, P50: 2, P95: 5, P99: 9, P999: 30}
	want := "100000 records sent, 19996.000800 records/sec (19.53 MB/sec), 2.34 ms avg latency, 45.00 ms max latency, 2 ms 50th, 5 ms 95th, 9 ms 99th, 30 ms 99.9th."
	if got := s.String(); got != want {
		t.Fatalf("final line\n got %q\nwant %q", got, want)
	}
	if !kafkaProducerFinal.MatchString(want) {
		t.Fatal("regexp does not match Kafka's line")
	}
	w := Window{Records: 50000, RecordsPerSec: 9998.0, MBPerSec: 9.7637, AvgLatencyMs: 2.31, MaxLatencyMs: 45}
	wantW := "50000 records sent, 9998.0 records/sec (9.76 MB/sec), 2.3 ms avg latency, 45.0 ms max latency."
	if got := w.String(); got != wantW {
		t.Fatalf("progress line\n got %q\nwant %q", got, wantW)
	}
	if !kafkaProducerWindow.MatchString(wantW) {
		t.Fatal("window regexp does not match Kafka's line")
	}
}

func TestStatsTotalsAndWindows(t *testing.T) {
	var out bytes.Buffer
	start := time.Unix(1000, 0)
	s := NewStats(10, start, 5*time.Second, &out)
	// 4 records of 1 MiB in the first 5 s window, acked with 1..4 ms latency.
	for i := 1; i <= 4; i++ {
		s.Record(time.Duration(i)*time.Millisecond, 1<<20, start.Add(time.Duration(i)*time.Second))
	}
	if out.Len() != 0 {
		t.Fatalf("progress line before the interval: %q", out.String())
	}
	// The 5th, at 5 s, closes the window: 5 records in 5 s, 5 MiB.
	s.Record(10*time.Millisecond, 1<<20, start.Add(5*time.Second))
	want := "5 records sent, 1.0 records/sec (1.00 MB/sec), 4.0 ms avg latency, 10.0 ms max latency.\n"
	if out.String() != want {
		t.Fatalf("progress\n got %q\nwant %q", out.String(), want)
	}
	for i := 0; i < 5; i++ {
		s.Record(500*time.Microsecond, 1<<20, start.Add(6*time.Second))
	}
	sum := s.Total(start.Add(10 * time.Second))
	if sum.Records != 10 || sum.Bytes != 10<<20 {
		t.Fatalf("totals %+v", sum)
	}
	if sum.RecordsPerSec != 1 || sum.MBPerSec != 1 {
		t.Fatalf("rates %+v", sum)
	}
	if sum.AvgLatencyMs != 2.25 || sum.MaxLatencyMs != 10 {
		t.Fatalf("latency avg %v max %v, want 2.25 and 10", sum.AvgLatencyMs, sum.MaxLatencyMs)
	}
	// Sorted latencies (ms): 0.5×5, 1, 2, 3, 4, 10; index ⌊q·10⌋ → 50th = 1 (truncated), 95th,
	// 99th and 99.9th = 10.
	if sum.P50 != 1 || sum.P95 != 10 || sum.P99 != 10 || sum.P999 != 10 {
		t.Fatalf("percentiles %d %d %d %d", sum.P50, sum.P95, sum.P99, sum.P999)
	}
	if !kafkaProducerFinal.MatchString(sum.String()) {
		t.Fatalf("final line %q does not parse like Kafka's", sum.String())
	}
}

func TestPercentilesNearestRankLikeKafka(t *testing.T) {
	lat := make([]int32, 1000)
	for i := range lat {
		lat[i] = int32(1000 - i) // 1000..1, unsorted
	}
	got := Percentiles(lat, 0.5, 0.95, 0.99, 0.999)
	// Kafka: values[i] = sorted[(int)(p * n)] → sorted[500]=501, [950]=951, [990]=991, [999]=1000.
	want := []int32{501, 951, 991, 1000}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("percentiles %v, want %v", got, want)
		}
	}
	if p := Percentiles(nil, 0.5); p[0] != 0 {
		t.Fatalf("empty: %v", p)
	}
	if p := Percentiles([]int32{7}, 0.5, 0.999); p[0] != 7 || p[1] != 7 {
		t.Fatalf("one sample: %v", p)
	}
}

func TestStatsSamplesAtMost500k(t *testing.T) {
	s := NewStats(2_000_000, time.Now(), 0, nil)
	if s.sampling != 4 {
		t.Fatalf("sampling %d, want 4", s.sampling)
	}
	for i := 0; i < 2_000_000; i++ {
		s.Record(time.Millisecond, 1, time.Now())
	}
	if len(s.latencies) != 500000 {
		t.Fatalf("%d samples, want 500000", len(s.latencies))
	}
}

func TestProducerProps(t *testing.T) {
	props, err := ParseProps([]string{"acks=all", "bootstrap.servers=a:1,b:2", "linger.ms=5", "compression.type=LZ4"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewProducerSettings(props)
	if err != nil {
		t.Fatal(err)
	}
	if s.Acks != -1 || s.Linger != 5*time.Millisecond || s.Compression != "lz4" || len(s.BootstrapServers) != 2 || s.Idempotent {
		t.Fatalf("settings %+v", s)
	}
	// Kafka 2.4 defaults.
	s, err = NewProducerSettings(map[string]string{"bootstrap.servers": "h:1"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Acks != 1 || s.Idempotent || s.Compression != "none" || s.Linger != 0 || s.MaxInFlight != 5 || s.DeliveryTimeout != 120*time.Second || s.ClientID != "perf-producer-client" {
		t.Fatalf("defaults %+v", s)
	}
	// Idempotence without acks: acks=all.
	s, err = NewProducerSettings(map[string]string{"bootstrap.servers": "h:1", "enable.idempotence": "true"})
	if err != nil || s.Acks != -1 || !s.Idempotent {
		t.Fatalf("idempotent %+v %v", s, err)
	}
	for _, acks := range []string{"0", "1", "-1", "all", "ALL"} {
		if _, err := NewProducerSettings(map[string]string{"bootstrap.servers": "h:1", "acks": acks}); err != nil {
			t.Fatalf("acks=%s: %v", acks, err)
		}
	}
	// Every option set builds a client.
	s, err = NewProducerSettings(map[string]string{
		"bootstrap.servers": "127.0.0.1:1", "acks": "1", "batch.size": "65536", "linger.ms": "1",
		"max.in.flight.requests.per.connection": "3", "request.timeout.ms": "30000", "delivery.timeout.ms": "60000",
		"retries": "3", "buffer.memory": "33554432", "metadata.max.age.ms": "300000", "retry.backoff.ms": "100",
		"connections.max.idle.ms": "540000", "client.id": "x", "compression.type": "zstd",
		"key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
	})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(s.Opts()...)
	if err != nil {
		t.Fatalf("kgo rejects the options: %v", err)
	}
	cl.Close()
	for _, acks := range []int16{0, -1} {
		s.Acks = acks
		s.Idempotent = acks == -1
		cl, err := kgo.NewClient(s.Opts()...)
		if err != nil {
			t.Fatalf("acks=%d: kgo rejects the options: %v", acks, err)
		}
		cl.Close()
	}
}

func TestProducerPropsErrors(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"bootstrap.servers": "h:1", "acks": "2"}, `invalid value "2" for producer property acks`},
		{map[string]string{"bootstrap.servers": "h:1", "foo.bar": "1"}, `unknown producer property "foo.bar"`},
		{map[string]string{"acks": "1"}, "bootstrap.servers is required"},
		{map[string]string{"bootstrap.servers": " , "}, "invalid value"},
		{map[string]string{"bootstrap.servers": "h:1", "linger.ms": "-1"}, "linger.ms"},
		{map[string]string{"bootstrap.servers": "h:1", "batch.size": "x"}, "batch.size"},
		{map[string]string{"bootstrap.servers": "h:1", "compression.type": "brotli"}, "compression.type"},
		{map[string]string{"bootstrap.servers": "h:1", "enable.idempotence": "true", "acks": "1"}, "needs acks=all"},
		{map[string]string{"bootstrap.servers": "h:1", "enable.idempotence": "true", "max.in.flight.requests.per.connection": "6"}, "<= 5"},
		{map[string]string{"bootstrap.servers": "h:1", "enable.idempotence": "maybe"}, "true or false"},
	} {
		_, err := NewProducerSettings(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", tc.props, err, tc.want)
		}
	}
	if _, err := ParseProps([]string{"acks"}); err == nil {
		t.Error("a property without '=' is accepted")
	}
	if _, err := ParseProps([]string{"=1"}); err == nil {
		t.Error("a property without a name is accepted")
	}
	p, err := ParseProps([]string{"bootstrap.servers=a:1,b:2", "x=y=z"})
	if err != nil || p["bootstrap.servers"] != "a:1,b:2" || p["x"] != "y=z" {
		t.Errorf("ParseProps: %v %v", p, err)
	}
}

func TestReadPropsFile(t *testing.T) {
	p, err := readProps(strings.NewReader("# comment\n! also\n\nacks = all\nbootstrap.servers=a:1\nlinger.ms: 5\n"), "f")
	if err != nil || p["acks"] != "all" || p["bootstrap.servers"] != "a:1" || p["linger.ms"] != "5" || len(p) != 3 {
		t.Fatalf("%v %v", p, err)
	}
	if _, err := readProps(strings.NewReader("novalue\n"), "f"); err == nil {
		t.Fatal("a line without a value is accepted")
	}
}

// runApp runs args through an app holding only the perf command, as main does.
func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{
		Name: "isrbroker", Writer: &out, ErrWriter: &out,
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		Commands:                  []*cli.Command{Command()},
	}
	err := app.RunContext(context.Background(), append([]string{"isrbroker"}, args...))
	return out.String(), err
}

// captureProduce parses the produce flags only (the action is replaced).
func captureProduce(t *testing.T, args ...string) (ProduceConfig, error) {
	t.Helper()
	var got ProduceConfig
	var cerr error
	cmd := produceCommand()
	cmd.Action = func(c *cli.Context) error {
		got, cerr = produceConfig(c)
		return nil
	}
	app := &cli.App{Name: "x", Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}, DisableSliceFlagSeparator: true,
		ExitErrHandler: func(*cli.Context, error) {}, Commands: []*cli.Command{cmd}}
	if err := app.Run(append([]string{"x", "produce"}, args...)); err != nil {
		return got, err
	}
	return got, cerr
}

func TestProduceFlagsLikeKafka(t *testing.T) {
	// Kafka's usual spelling: --producer-props takes several name=value words, and flags may
	// follow them; --throughput -1 is a value, not a flag.
	cfg, err := captureProduce(t, "--topic", "t", "--num-records", "20000", "--record-size", "100", "--throughput", "-1",
		"--producer-props", "acks=all", "bootstrap.servers=a:1,b:2", "linger.ms=2", "--print-metrics")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Topic != "t" || cfg.NumRecords != 20000 || len(cfg.Payloads) != 1 || len(cfg.Payloads[0]) != 100 || cfg.Throughput != -1 || !cfg.PrintMetrics {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.Producer.Acks != -1 || len(cfg.Producer.BootstrapServers) != 2 || cfg.Producer.Linger != 2*time.Millisecond {
		t.Fatalf("producer %+v", cfg.Producer)
	}
	for _, b := range cfg.Payloads[0] {
		if b < 'A' || b > 'Z' {
			t.Fatalf("payload byte %q is not an upper-case letter", b)
		}
	}
	// Flags after the props, with = values, and the props flag repeated.
	cfg, err = captureProduce(t, "--producer-props", "bootstrap.servers=h:1", "--topic=t", "--num-records=5",
		"--record-size=10", "--throughput=1000", "--producer-props", "acks=0")
	if err != nil || cfg.Producer.Acks != 0 || cfg.Throughput != 1000 || cfg.NumRecords != 5 {
		t.Fatalf("%+v %v", cfg, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"}, "--topic is required"},
		{[]string{"--topic", "t", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"}, "--num-records is required"},
		{[]string{"--topic", "t", "--num-records", "0", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"}, "greater than zero"},
		{[]string{"--topic", "t", "--num-records", "1", "--record-size", "1", "--producer-props", "bootstrap.servers=h:1"}, "--throughput is required"},
		{[]string{"--topic", "t", "--num-records", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"}, "exactly one of --record-size and --payload-file"},
		{[]string{"--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1"}, "--producer-props or --producer.config"},
		{[]string{"--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1", "nope=1"}, `unknown producer property "nope"`},
		{[]string{"--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1", "--bogus"}, "not defined: -bogus"},
		{[]string{"--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "stray"}, `unexpected argument "stray"`},
		{[]string{"--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "0", "--producer-props", "bootstrap.servers=h:1"}, "--throughput 0"},
	} {
		_, err := captureProduce(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestSplitPayloads(t *testing.T) {
	p := SplitPayloads([]byte("a\nbb\n\nccc\n"), "\n")
	if len(p) != 3 || string(p[2]) != "ccc" {
		t.Fatalf("%q", p)
	}
	p = SplitPayloads([]byte("a|b"), "|")
	if len(p) != 2 {
		t.Fatalf("%q", p)
	}
}

func TestThrottleDelay(t *testing.T) {
	start := time.Unix(0, 0)
	if d := throttleDelay(start, 100, 1000, start.Add(50*time.Millisecond)); d != 50*time.Millisecond {
		t.Fatalf("ahead of schedule: delay %v, want 50ms", d)
	}
	if d := throttleDelay(start, 100, 1000, start.Add(200*time.Millisecond)); d != 0 {
		t.Fatalf("behind schedule: delay %v", d)
	}
	if d := throttleDelay(start, 100, -1, start); d != 0 {
		t.Fatalf("unthrottled: delay %v", d)
	}
}

func TestConsumeFormatMatchesKafka(t *testing.T) {
	df, err := ParseDateFormat(DefaultDateFormat)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, 3, 5, 7, 8, 9, 12*int(time.Millisecond), time.Local)
	s := ConsumeSummary{Start: start, End: start.Add(2500 * time.Millisecond), Messages: 20000, Bytes: 2000000}
	want := "2024-03-05 07:08:09:012, 2024-03-05 07:08:11:512, 1.9073, 0.7629, 20000, 8000.0000, 0, 2500, 0.7629, 8000.0000"
	if got := s.SummaryLine(df); got != want {
		t.Fatalf("data line\n got %q\nwant %q", got, want)
	}
	if len(strings.Split(ConsumeHeader, ", ")) != len(strings.Split(want, ", ")) {
		t.Fatal("header and data line have different column counts")
	}
	line := detailedLine(df, 3<<20, 1<<20, 300, 100, start, start.Add(2*time.Second))
	wantD := "2024-03-05 07:08:11:012, 0, 3.0000, 1.0000, 300, 100.0000, 0, 2000, 1.0000, 100.0000"
	if line != wantD {
		t.Fatalf("detailed line\n got %q\nwant %q", line, wantD)
	}
}

func TestDateFormat(t *testing.T) {
	tm := time.Date(2009, 1, 2, 15, 4, 5, 7*int(time.Millisecond), time.UTC)
	for pattern, want := range map[string]string{
		"yyyy-MM-dd HH:mm:ss:SSS":      "2009-01-02 15:04:05:007",
		"yy/M/d h:mm a":                "09/1/2 3:04 PM",
		"EEE, d MMM yyyy HH:mm:ss Z":   "Fri, 2 Jan 2009 15:04:05 +0000",
		"EEEE MMMM 'at' HH 'o''clock'": "Friday January at 15 o'clock",
		"HH''mm":                       "15'04",
		"yyyy-MM-dd'T'HH:mm:ss.SSSXXX": "2009-01-02T15:04:05.007Z",
	} {
		df, err := ParseDateFormat(pattern)
		if err != nil {
			t.Fatalf("%q: %v", pattern, err)
		}
		if got := df.Format(tm); got != want {
			t.Errorf("%q: got %q, want %q", pattern, got, want)
		}
	}
	for _, bad := range []string{"yyyy-MM-dd 'unterminated", "yyyy-ww"} {
		if _, err := ParseDateFormat(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConsumeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topic", "t", "--messages", "1"}, "--bootstrap-server is required"},
		{[]string{"--bootstrap-server", "h:1", "--messages", "1"}, "--topic is required"},
		{[]string{"--bootstrap-server", "h:1", "--topic", "t"}, "--messages is required"},
		{[]string{"--bootstrap-server", "h:1", "--topic", "t", "--messages", "1", "--reporting-interval", "0"}, "Reporting interval"},
		{[]string{"--bootstrap-server", "h:1", "--topic", "t", "--messages", "1", "--date-format", "ww"}, "unsupported pattern letter"},
	} {
		_, err := runApp(t, append([]string{"perf", "consume"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A bootstrap address nobody listens on fails in one line within MetadataTimeout.
func TestUnreachableBootstrap(t *testing.T) {
	old := MetadataTimeout
	MetadataTimeout = 1500 * time.Millisecond
	defer func() { MetadataTimeout = old }()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = runApp(t, "perf", "produce", "--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+addr)
	if err == nil || !strings.Contains(err.Error(), "cannot reach any broker at "+addr) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("produce: %v", err)
	}
	_, err = runApp(t, "perf", "consume", "--bootstrap-server", addr, "--topic", "t", "--messages", "1")
	if err == nil || !strings.Contains(err.Error(), "cannot reach any broker at "+addr) {
		t.Fatalf("consume: %v", err)
	}
}

// --print-metrics waits for franz-go's produce batch hooks, which run on goroutines of their
// own after the records are acknowledged, so record-send-total counts every acknowledged record.
func TestPrintMetricsAwaitsLateBatchHooks(t *testing.T) {
	m := newClientMetrics("producer-metrics", "c")
	release := make(chan struct{})
	go func() {
		<-release
		for i := 0; i < 4; i++ {
			m.OnProduceBatchWritten(kgo.BrokerMetadata{}, "t", 0, kgo.ProduceBatchMetrics{NumRecords: 250})
		}
	}()
	close(release)
	start := time.Now()
	m.awaitBatchRecords(1000, time.Minute)
	if got := m.batchRecords.Load(); got != 1000 {
		t.Fatalf("awaitBatchRecords returned with %d of 1000 records counted", got)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("awaitBatchRecords waited for its deadline although the hooks had run")
	}
	// Hooks that never come: it gives up at its deadline.
	m2 := newClientMetrics("producer-metrics", "c")
	m2.awaitBatchRecords(1, 10*time.Millisecond)
}
