package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// ProduceConfig is one `perf produce` run.
type ProduceConfig struct {
	Topic      string
	NumRecords int64
	// Payloads: one (--record-size: RecordSize random upper-case letters, the same for every
	// record, as in Kafka 2.4) or several (--payload-file: one chosen at random per record).
	Payloads          [][]byte
	Throughput        float64 // records/s; < 0 unthrottled
	Producer          ProducerSettings
	PrintMetrics      bool
	ReportingInterval time.Duration // progress lines; 0: ReportingInterval
}

func produceCommand() *cli.Command {
	return &cli.Command{
		Name:  "produce",
		Usage: "produce records and report throughput and ack latency (kafka-producer-perf-test)",
		UsageText: "isrbroker perf produce --topic T --num-records N --record-size B --throughput R \\\n" +
			"   --producer-props bootstrap.servers=host:port [acks=all] [linger.ms=5] ...",
		Description: "Prints a progress line every 5 s and a final line, both in Kafka 2.4's format:\n" +
			"  N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P ms 50th, P ms 95th, P ms 99th, P ms 99.9th.\n" +
			"Latency is the time from handing a record to the client until its acknowledgement.\n" +
			"Unset producer properties take Kafka 2.4's producer defaults (acks=1, enable.idempotence=false,\n" +
			"compression.type=none, linger.ms=0); batch.size and buffer.memory keep franz-go's.\n" +
			"Supported producer properties: " + strings.Join(SupportedProducerProps(), ", "),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "topic", Usage: "produce records to this topic (required)"},
			&cli.Int64Flag{Name: "num-records", Usage: "number of records to produce (required)"},
			&cli.IntFlag{Name: "record-size", Usage: "record size in bytes (this or --payload-file)"},
			&cli.StringFlag{Name: "payload-file", Usage: "file of payloads, one chosen at random per record (this or --record-size)"},
			&cli.StringFlag{Name: "payload-delimiter", Value: `\n`, Usage: "payload separator in --payload-file"},
			&cli.Float64Flag{Name: "throughput", Usage: "throttle to about this many records/s; -1 for no throttling (required)"},
			&cli.StringSliceFlag{Name: "producer-props", Usage: "producer properties name=value ... (Kafka names; bootstrap.servers is required)"},
			&cli.StringFlag{Name: "producer.config", Usage: "producer properties file (--producer-props take precedence)"},
			&cli.BoolFlag{Name: "print-metrics", Usage: "print client metrics at the end"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := produceConfig(c)
			if err != nil {
				return failf("%v", err)
			}
			_, err = RunProduce(c.Context, cfg, c.App.Writer)
			if err != nil {
				return failf("%v", err)
			}
			return nil
		},
	}
}

// produceConfig validates the flags like Kafka's ProducerPerformance argument parser.
func produceConfig(c *cli.Context) (ProduceConfig, error) {
	var cfg ProduceConfig
	if err := applyTrailingArgs(c, "producer-props"); err != nil {
		return cfg, err
	}
	cfg.Topic = c.String("topic")
	if cfg.Topic == "" {
		return cfg, errors.New("--topic is required")
	}
	if !c.IsSet("num-records") {
		return cfg, errors.New("--num-records is required")
	}
	if cfg.NumRecords = c.Int64("num-records"); cfg.NumRecords <= 0 {
		return cfg, errors.New("--num-records should be greater than zero")
	}
	if !c.IsSet("throughput") {
		return cfg, errors.New("--throughput is required (records/s, or -1 for no throttling)")
	}
	cfg.Throughput = c.Float64("throughput")
	if cfg.Throughput == 0 {
		return cfg, errors.New("--throughput 0 would never send: give records/s, or -1 for no throttling")
	}
	sizeSet, fileSet := c.IsSet("record-size"), c.IsSet("payload-file")
	switch {
	case sizeSet == fileSet:
		return cfg, errors.New("give exactly one of --record-size and --payload-file")
	case sizeSet:
		n := c.Int("record-size")
		if n <= 0 {
			return cfg, errors.New("--record-size should be greater than zero")
		}
		cfg.Payloads = [][]byte{RandomPayload(n)}
	default:
		delim := c.String("payload-delimiter")
		if delim == `\n` {
			delim = "\n"
		}
		path := c.String("payload-file")
		abs, _ := filepath.Abs(path)
		fmt.Fprintf(c.App.Writer, "Reading payloads from: %s\n", abs)
		data, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("--payload-file: %v", err)
		}
		cfg.Payloads = SplitPayloads(data, delim)
		if len(cfg.Payloads) == 0 {
			return cfg, fmt.Errorf("--payload-file %s holds no payloads", path)
		}
		fmt.Fprintf(c.App.Writer, "Number of messages read: %d\n", len(cfg.Payloads))
	}
	props := map[string]string{}
	if f := c.String("producer.config"); f != "" {
		fp, err := ReadPropsFile(f)
		if err != nil {
			return cfg, fmt.Errorf("--producer.config: %v", err)
		}
		props = fp
	}
	kv, err := ParseProps(c.StringSlice("producer-props"))
	if err != nil {
		return cfg, err
	}
	for k, v := range kv {
		props[k] = v
	}
	if len(props) == 0 {
		return cfg, errors.New("either --producer-props or --producer.config must be specified (bootstrap.servers is required)")
	}
	if cfg.Producer, err = NewProducerSettings(props); err != nil {
		return cfg, err
	}
	cfg.PrintMetrics = c.Bool("print-metrics")
	return cfg, nil
}

// RandomPayload returns n random upper-case ASCII letters from a fixed seed (Kafka 2.4 builds
// one such payload and sends it in every record).
func RandomPayload(n int) []byte {
	rng := rand.New(rand.NewPCG(0, 0))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('A' + rng.IntN(26))
	}
	return b
}

// SplitPayloads splits a payload file's content at delim, dropping empty payloads.
func SplitPayloads(data []byte, delim string) [][]byte {
	if delim == "" {
		delim = "\n"
	}
	var out [][]byte
	for _, p := range bytes.Split(data, []byte(delim)) {
		if len(p) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// pending is one record in flight: the record and its send time. It is its own record
// Context (a never-cancelled one), which is how the promise finds the send time without an
// allocation per record; kgo truncates Record.Timestamp to milliseconds, too coarse for
// sub-millisecond acks.
type pending struct {
	context.Context
	rec  kgo.Record
	sent time.Time
}

// RunProduce produces cfg.NumRecords records, writes Kafka's progress and final lines to out
// and returns the summary. Records that failed are not counted (as in newer Kafka tools);
// any failure makes the returned error non-nil after the final line was printed.
func RunProduce(ctx context.Context, cfg ProduceConfig, out io.Writer) (Summary, error) {
	metrics := newClientMetrics("producer-metrics", cfg.Producer.ClientID)
	opts := append(cfg.Producer.Opts(), kgo.WithHooks(metrics))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Summary{}, fmt.Errorf("producer: %v", err)
	}
	defer cl.Close()
	// Fail fast, in one line, on an unreachable cluster or a missing topic; this also
	// warms up the client's metadata so the first records' latency is not a metadata fetch.
	if _, err := topicPartitions(ctx, cl, cfg.Producer.BootstrapServers, cfg.Topic, true); err != nil {
		return Summary{}, err
	}

	interval := cfg.ReportingInterval
	if interval == 0 {
		interval = ReportingInterval
	}
	var (
		errMu    sync.Mutex
		failed   int64
		firstErr error
	)
	pool := sync.Pool{New: func() any {
		p := &pending{Context: context.Background()}
		p.rec.Context = p
		return p
	}}
	start := time.Now()
	stats := NewStats(cfg.NumRecords, start, interval, out)
	// kgo calls promises serially, in the order records finish per partition.
	promise := func(r *kgo.Record, err error) {
		now := time.Now()
		p := r.Context.(*pending)
		if err != nil {
			errMu.Lock()
			failed++
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		} else {
			stats.Record(now.Sub(p.sent), len(r.Value), now)
		}
		p.rec = kgo.Record{Context: p}
		pool.Put(p)
	}
	rng := rand.New(rand.NewPCG(0, 0))
	var sent int64
	for sent = 0; sent < cfg.NumRecords && ctx.Err() == nil; sent++ {
		p := pool.Get().(*pending)
		p.rec.Topic = cfg.Topic
		p.rec.Value = cfg.Payloads[0]
		if len(cfg.Payloads) > 1 {
			p.rec.Value = cfg.Payloads[rng.IntN(len(cfg.Payloads))]
		}
		p.sent = time.Now()
		cl.Produce(ctx, &p.rec, promise)
		if cfg.Throughput > 0 {
			throttle(ctx, start, sent+1, cfg.Throughput)
		}
	}
	flushErr := cl.Flush(ctx)
	sum := stats.Total(time.Now())
	fmt.Fprintln(out, sum.String())
	errMu.Lock()
	nFailed, err1 := failed, firstErr
	errMu.Unlock()
	if cfg.PrintMetrics {
		metrics.awaitBatchRecords(sent-nFailed, 5*time.Second)
		metrics.print(out)
	}
	switch {
	case nFailed > 0:
		return sum, fmt.Errorf("%d of %d records failed; the first error: %v", nFailed, sent, err1)
	case flushErr != nil:
		return sum, fmt.Errorf("flushing the producer: %v", flushErr)
	case ctx.Err() != nil:
		return sum, fmt.Errorf("interrupted after %d of %d records", sent, cfg.NumRecords)
	}
	return sum, nil
}

// throttle paces sending to rate records/s from start (Kafka's ThroughputThrottler): after
// sent records it waits until sent/rate seconds have passed, when that is at least 1 ms.
func throttle(ctx context.Context, start time.Time, sent int64, rate float64) {
	d := throttleDelay(start, sent, rate, time.Now())
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func throttleDelay(start time.Time, sent int64, rate float64, now time.Time) time.Duration {
	if rate <= 0 {
		return 0
	}
	due := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
	if d := due.Sub(now); d >= time.Millisecond {
		return d
	}
	return 0
}
