package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// Kafka 2.4 ConsumerPerformance's headers.
const (
	ConsumeHeader         = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	ConsumeDetailedHeader = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)

// ConsumeConfig is one `perf consume` run.
type ConsumeConfig struct {
	BootstrapServers  []string
	Topic             string
	Messages          int64
	Timeout           time.Duration // give up when no record arrived for this long
	ShowDetailedStats bool
	ReportingInterval time.Duration
	DateFormat        *DateFormat
	HideHeader        bool
	FromLatest        bool
	FetchSize         int32 // max bytes per partition per fetch
	PrintMetrics      bool
}

// ConsumeSummary is what the final line reports.
type ConsumeSummary struct {
	Start, End time.Time
	Messages   int64
	Bytes      int64 // key + value bytes, as Kafka counts them
	TimedOut   bool
}

func consumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "consume",
		Usage: "consume a topic from its start and report throughput (kafka-consumer-perf-test)",
		UsageText: "isrbroker perf consume --bootstrap-server host:port --topic T --messages N [--timeout ms]\n" +
			"   [--show-detailed-stats --reporting-interval ms]",
		Description: "Assigns every partition of the topic directly (no consumer group) from the log start\n" +
			"(--from-latest: the log end) and prints Kafka 2.4's header and data line:\n" + ConsumeHeader,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Aliases: []string{"broker-list"}, Usage: "host:port[,host:port...] (required)"},
			&cli.StringFlag{Name: "topic", Usage: "the topic to consume (required)"},
			&cli.Int64Flag{Name: "messages", Usage: "number of messages to consume (required)"},
			&cli.Int64Flag{Name: "timeout", Value: 10000, Usage: "stop when no record arrives for this many ms"},
			&cli.BoolFlag{Name: "show-detailed-stats", Usage: "print one line per reporting interval instead of the summary"},
			&cli.Int64Flag{Name: "reporting-interval", Value: 5000, Usage: "ms between detailed stats lines"},
			&cli.StringFlag{Name: "date-format", Value: DefaultDateFormat, Usage: "Java SimpleDateFormat pattern of the time columns"},
			&cli.BoolFlag{Name: "hide-header", Usage: "do not print the header line"},
			&cli.BoolFlag{Name: "from-latest", Usage: "start at the log end instead of the log start"},
			&cli.IntFlag{Name: "fetch-size", Value: 1024 * 1024, Usage: "max bytes per partition per fetch"},
			&cli.BoolFlag{Name: "print-metrics", Usage: "print client metrics at the end"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := consumeConfig(c)
			if err != nil {
				return failf("%v", err)
			}
			if _, err := RunConsume(c.Context, cfg, c.App.Writer); err != nil {
				return failf("%v", err)
			}
			return nil
		},
	}
}

func consumeConfig(c *cli.Context) (ConsumeConfig, error) {
	var cfg ConsumeConfig
	if err := applyTrailingArgs(c, ""); err != nil {
		return cfg, err
	}
	for _, a := range strings.Split(c.String("bootstrap-server"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.BootstrapServers = append(cfg.BootstrapServers, a)
		}
	}
	if len(cfg.BootstrapServers) == 0 {
		return cfg, errors.New("--bootstrap-server is required")
	}
	if cfg.Topic = c.String("topic"); cfg.Topic == "" {
		return cfg, errors.New("--topic is required")
	}
	if !c.IsSet("messages") {
		return cfg, errors.New("--messages is required")
	}
	if cfg.Messages = c.Int64("messages"); cfg.Messages <= 0 {
		return cfg, errors.New("--messages should be greater than zero")
	}
	if t := c.Int64("timeout"); t < 0 {
		return cfg, errors.New("--timeout should not be negative")
	} else {
		cfg.Timeout = time.Duration(t) * time.Millisecond
	}
	ri := c.Int64("reporting-interval")
	if ri <= 0 {
		return cfg, errors.New("Reporting interval must be greater than 0.")
	}
	cfg.ReportingInterval = time.Duration(ri) * time.Millisecond
	fs := c.Int("fetch-size")
	if fs <= 0 || fs > 1<<30 {
		return cfg, errors.New("--fetch-size should be between 1 and 1073741824")
	}
	cfg.FetchSize = int32(fs)
	df, err := ParseDateFormat(c.String("date-format"))
	if err != nil {
		return cfg, err
	}
	cfg.DateFormat = df
	cfg.ShowDetailedStats = c.Bool("show-detailed-stats")
	cfg.HideHeader = c.Bool("hide-header")
	cfg.FromLatest = c.Bool("from-latest")
	cfg.PrintMetrics = c.Bool("print-metrics")
	return cfg, nil
}

// SummaryLine formats s like Kafka 2.4's ConsumerPerformance data line:
// "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f" (start, end, MB, MB/s, messages,
// messages/s, rebalance ms, fetch ms, fetch MB/s, fetch messages/s). Times count in whole
// milliseconds as Kafka's do; there is no group, so the rebalance time is 0 and the fetch
// time is the whole run.
func (s ConsumeSummary) SummaryLine(df *DateFormat) string {
	elapsedMs := max(s.End.UnixMilli()-s.Start.UnixMilli(), 1)
	const rebalanceMs = 0
	fetchMs := max(elapsedMs-rebalanceMs, 1)
	mb := float64(s.Bytes) / (1024 * 1024)
	secs := float64(elapsedMs) / 1000
	fetchSecs := float64(fetchMs) / 1000
	return fmt.Sprintf("%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f",
		df.Format(s.Start), df.Format(s.End), mb, mb/secs, s.Messages, float64(s.Messages)/secs,
		rebalanceMs, fetchMs, mb/fetchSecs, float64(s.Messages)/fetchSecs)
}

// detailedLine is one --show-detailed-stats line (Kafka's printConsumerProgress): the
// interval's rates between the previous report at from and now.
func detailedLine(df *DateFormat, bytes, lastBytes, msgs, lastMsgs int64, from, now time.Time) string {
	elapsedMs := float64(max(now.UnixMilli()-from.UnixMilli(), 1))
	totalMB := float64(bytes) / (1024 * 1024)
	intervalMB := float64(bytes-lastBytes) / (1024 * 1024)
	intervalMsgs := float64(msgs - lastMsgs)
	fetchMs := int64(elapsedMs) // no rebalances
	return fmt.Sprintf("%s, %d, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f",
		df.Format(now), 0, totalMB, 1000*intervalMB/elapsedMs, msgs, 1000*intervalMsgs/elapsedMs,
		0, fetchMs, 1000*intervalMB/float64(fetchMs), 1000*intervalMsgs/float64(fetchMs))
}

// RunConsume consumes up to cfg.Messages records of cfg.Topic from all its partitions and
// writes Kafka's header and data line (or detailed lines) to out.
func RunConsume(ctx context.Context, cfg ConsumeConfig, out io.Writer) (ConsumeSummary, error) {
	var sum ConsumeSummary
	if cfg.DateFormat == nil {
		cfg.DateFormat, _ = ParseDateFormat(DefaultDateFormat)
	}
	if cfg.ReportingInterval <= 0 {
		cfg.ReportingInterval = 5 * time.Second
	}
	if cfg.FetchSize <= 0 {
		cfg.FetchSize = 1024 * 1024
	}
	const clientID = "perf-consumer-client"
	mc, err := kgo.NewClient(kgo.SeedBrokers(cfg.BootstrapServers...), kgo.ClientID(clientID))
	if err != nil {
		return sum, fmt.Errorf("consumer: %v", err)
	}
	parts, err := topicPartitions(ctx, mc, cfg.BootstrapServers, cfg.Topic, false)
	mc.Close()
	if err != nil {
		return sum, err
	}
	if !cfg.HideHeader {
		if cfg.ShowDetailedStats {
			fmt.Fprintln(out, ConsumeDetailedHeader)
		} else {
			fmt.Fprintln(out, ConsumeHeader)
		}
	}

	offset := kgo.NewOffset().AtStart()
	if cfg.FromLatest {
		offset = kgo.NewOffset().AtEnd()
	}
	assign := make(map[int32]kgo.Offset, len(parts))
	for _, p := range parts {
		assign[p] = offset
	}
	metrics := newClientMetrics("consumer-metrics", clientID)
	sum.Start = time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.ClientID(clientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: assign}),
		kgo.FetchMaxPartitionBytes(cfg.FetchSize),
		kgo.FetchMaxWait(500*time.Millisecond), // Kafka's fetch.max.wait.ms
		kgo.WithHooks(metrics),
	)
	if err != nil {
		return sum, fmt.Errorf("consumer: %v", err)
	}
	defer cl.Close()

	now := sum.Start
	lastReport, lastConsumed := now, now
	var lastBytes, lastMsgs int64
	for sum.Messages < cfg.Messages && now.Sub(lastConsumed) <= cfg.Timeout && ctx.Err() == nil {
		// One poll waits at most 100 ms, as Kafka's tool polls.
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := cl.PollRecords(pctx, int(min(cfg.Messages-sum.Messages, 1<<30)))
		cancel()
		now = time.Now()
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetching %s partition %d: %v", t, p, err)
			}
		})
		if ferr != nil {
			return sum, ferr
		}
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			sum.Bytes += int64(len(r.Key) + len(r.Value))
		})
		sum.Messages += int64(n)
		if n > 0 {
			lastConsumed = now
		}
		if now.Sub(lastReport) >= cfg.ReportingInterval {
			if cfg.ShowDetailedStats {
				fmt.Fprintln(out, detailedLine(cfg.DateFormat, sum.Bytes, lastBytes, sum.Messages, lastMsgs, lastReport, now))
			}
			lastReport, lastBytes, lastMsgs = now, sum.Bytes, sum.Messages
		}
	}
	sum.End = time.Now()
	if ctx.Err() != nil {
		return sum, fmt.Errorf("interrupted after %d of %d messages", sum.Messages, cfg.Messages)
	}
	if sum.Messages < cfg.Messages {
		sum.TimedOut = true
		fmt.Fprintf(out, "WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. "+
			"You can use the --timeout option to increase the timeout.\n", cfg.Timeout.Milliseconds())
	}
	if !cfg.ShowDetailedStats {
		fmt.Fprintln(out, sum.SummaryLine(cfg.DateFormat))
	}
	if cfg.PrintMetrics {
		metrics.print(out)
	}
	return sum, nil
}
