// Command kfakecmp is the load side of scripts/kfake-compare.sh: the same franz-go client
// measures isrbroker and franz-go's kfake cluster, each a cluster of its own processes named
// by --bootstrap (kfake through `kfakecmp serve`, in a process of its own, as users run another
// cluster: issue 32), and prints the side-by-side table of issue 13 (docs/performance.md,
// "Side by side with kfake").
//
// Two kfake targets: "kfake" is kfake as it comes (its segment files in an in-memory file
// system that grows each file by doubling), "kfake-disk" is kfake with kfake.DataDir, its
// segment files on disk through the page cache as isrbroker's are. docs/performance.md says why
// both ("Why kfake runs slower here than in issue 13").
//
// It is a nested module so that kfake stays out of the main module's go.mod.
//
//	kfakecmp run --target isrbroker|kfake|kfake-disk --bootstrap H:P,H:P,H:P --round 1 [flags]  one round, one JSON line on stdout
//	kfakecmp serve --target kfake|kfake-disk --ports P1,P2,P3                   a kfake cluster until SIGTERM
//	kfakecmp table FILE                                                          the table of the JSON lines in FILE
//	kfakecmp freeports N                                                         N free loopback TCP ports
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	recordSize = 1024 // 1 KiB values, no key
	partitions = 3
	mib        = 1 << 20
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "table":
		if len(os.Args) != 3 {
			usage()
		}
		err = tableCmd(os.Args[2], os.Stdout)
	case "serve":
		err = serveCmd(os.Args[2:])
	case "freeports":
		err = freePortsCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakecmp:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kfakecmp run --target isrbroker|kfake|kfake-disk --bootstrap ADDRS [flags] | kfakecmp serve --target kfake|kfake-disk --ports P1,P2,P3 [--data-dir DIR] | kfakecmp table FILE | kfakecmp freeports N")
	os.Exit(2)
}

// Result is one target's figures in one round (one JSON line).
type Result struct {
	Target       string  `json:"target"`
	Round        int     `json:"round"`
	Records      int     `json:"records"`
	ProduceRF1   float64 `json:"produce_rf1_acks1_mibps"`
	Consume      float64 `json:"consume_mibps"`
	ProduceRF3   float64 `json:"produce_rf3_acksall_mibps"`
	LatencyP50ms float64 `json:"latency_p50_ms"`
	LatencyP99ms float64 `json:"latency_p99_ms"`
	LatencyRate  float64 `json:"latency_rate_mibps"`
	// LatencyLingerMs is the producer's linger in the latency phase (0 unless --latency-linger).
	LatencyLingerMs float64 `json:"latency_linger_ms"`
	Start           string  `json:"start"`
}

type runOpts struct {
	target, bootstrap   string
	round, records      int
	rateMiB             float64
	latencySeconds      float64
	latencyLinger       time.Duration
	latencyTimeline     time.Duration
	settleMiB           int64
	phases              map[string]bool
	pprof, profileDir   string
	profileSeconds      int
	keepTopics, verbose bool
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var o runOpts
	fs.StringVar(&o.target, "target", "", "isrbroker or kfake")
	fs.StringVar(&o.bootstrap, "bootstrap", "", "the target cluster's bootstrap servers host:port,... (isrbroker's brokers, or a `kfakecmp serve`)")
	fs.IntVar(&o.round, "round", 1, "round number (topic names and the JSON line)")
	fs.IntVar(&o.records, "records", 200_000, "records per throughput phase (1 KiB each)")
	fs.Float64Var(&o.rateMiB, "latency-rate", 20, "steady produce rate of the latency phase, MiB/s")
	fs.Float64Var(&o.latencySeconds, "latency-seconds", 5, "length of the latency phase, seconds")
	fs.DurationVar(&o.latencyLinger, "latency-linger", 0, "the producer's linger in the latency phase (franz-go's default is 10ms since v1.20; 0 measures the broker, not the client's wait)")
	fs.Int64Var(&o.settleMiB, "latency-settle", 256, "after a throughput phase, wait until the kernel's dirty and writeback pages are at most this many MiB before the latency phase (steady state, not the previous phase's writeback; at most 90 s); 0 does not wait")
	fs.DurationVar(&o.latencyTimeline, "latency-timeline", 0, "print the latency phase's p50, p99 and max per window of this length (by send time) to stderr; 0 prints none")
	fs.StringVar(&o.pprof, "pprof", "", "brokers' metrics listeners host:port,... to profile (CPU, mutex, block, allocs) during the RF=3 acks=all phase (isrbroker.pprof.enable)")
	fs.StringVar(&o.profileDir, "profile-dir", "", "where the profiles go (with --pprof)")
	fs.IntVar(&o.profileSeconds, "profile-seconds", 10, "length of the CPU, mutex and block profiles")
	phases := fs.String("phases", "rf1,consume,rf3,latency", "the phases to run, comma-separated (consume reads what rf1 produced)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.phases = map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		switch p {
		case "rf1", "consume", "rf3", "latency":
			o.phases[p] = true
		default:
			return fmt.Errorf("--phases: unknown phase %q (rf1, consume, rf3, latency)", p)
		}
	}
	if o.phases["consume"] && !o.phases["rf1"] {
		return errors.New("--phases: consume reads what rf1 produced, so it needs rf1")
	}
	if o.records <= 0 {
		return fmt.Errorf("--records must be positive, got %d", o.records)
	}
	if o.rateMiB <= 0 || o.latencySeconds <= 0 {
		return errors.New("--latency-rate and --latency-seconds must be positive")
	}
	if o.latencyTimeline < 0 {
		return errors.New("--latency-timeline must not be negative")
	}
	if o.settleMiB < 0 {
		return errors.New("--latency-settle must not be negative")
	}
	if o.latencyLinger < 0 {
		return errors.New("--latency-linger must not be negative")
	}
	if (o.pprof == "") != (o.profileDir == "") {
		return errors.New("--pprof and --profile-dir go together")
	}
	ctx := context.Background()
	switch o.target {
	case "isrbroker", "kfake", "kfake-disk":
	default:
		return fmt.Errorf("--target must be isrbroker, kfake or kfake-disk, got %q", o.target)
	}
	if o.bootstrap == "" {
		return fmt.Errorf("--target %s needs --bootstrap (kfake runs in its own process: kfakecmp serve)", o.target)
	}
	seeds := strings.Split(o.bootstrap, ",")
	r, err := runRound(ctx, o, seeds)
	if err != nil {
		return fmt.Errorf("%s round %d: %w", o.target, o.round, err)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kfakecmp: "+format+"\n", args...)
}

func runRound(ctx context.Context, o runOpts, seeds []string) (*Result, error) {
	res := &Result{Target: o.target, Round: o.round, Records: o.records, LatencyRate: o.rateMiB,
		LatencyLingerMs: float64(o.latencyLinger) / float64(time.Millisecond), Start: time.Now().UTC().Format(time.RFC3339)}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	name := func(kind string) string { return fmt.Sprintf("cmp-%d-%s", o.round, kind) }
	rf1, rf3, lat := name("rf1"), name("rf3"), name("lat")
	minISR := "2"
	if err := createTopic(ctx, adm, rf1, 1, nil); err != nil {
		return nil, err
	}
	for _, t := range []string{rf3, lat} {
		if err := createTopic(ctx, adm, t, 3, map[string]*string{"min.insync.replicas": &minISR}); err != nil {
			return nil, err
		}
	}
	defer func() {
		// Each round starts on a cluster without the previous round's data, for every target
		// alike: the round's topics are deleted and the next round waits until they are gone.
		if err := deleteTopics(adm, rf1, rf3, lat); err != nil {
			logf("%s round %d: %v", o.target, o.round, err)
		}
	}()

	value := make([]byte, recordSize)
	for i := range value { // random bytes: no compression would help anyway
		value[i] = byte(rand.UintN(256))
	}

	// 1. RF=1 acks=1, idempotence off (it needs acks=all).
	if o.phases["rf1"] {
		res.ProduceRF1, err = produceAll(ctx, seeds, rf1, o.records, value, nil, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		if err != nil {
			return nil, fmt.Errorf("produce RF=1 acks=1: %w", err)
		}
		logf("%s round %d: produce RF=1 acks=1 %.1f MiB/s", o.target, o.round, res.ProduceRF1)
	}

	// 2. Consume the RF=1 topic from the start, direct (no group).
	if o.phases["consume"] {
		res.Consume, err = consumeAll(ctx, seeds, rf1, o.records)
		if err != nil {
			return nil, fmt.Errorf("consume: %w", err)
		}
		logf("%s round %d: consume %.1f MiB/s", o.target, o.round, res.Consume)
	}
	if !o.phases["rf3"] && !o.phases["latency"] {
		return res, nil
	}

	// 3. RF=3 acks=all, min.insync.replicas=2, the client's default (idempotent) producer.
	var prof func() error
	if o.pprof != "" {
		prof = startProfiles(o)
	}
	if o.phases["rf3"] {
		res.ProduceRF3, err = produceAll(ctx, seeds, rf3, o.records, value, prof)
		if err != nil {
			return nil, fmt.Errorf("produce RF=3 acks=all: %w", err)
		}
		logf("%s round %d: produce RF=3 acks=all %.1f MiB/s", o.target, o.round, res.ProduceRF3)
	}
	if !o.phases["latency"] {
		return res, nil
	}

	// 4. Acknowledgement latency at a steady rate, RF=3 acks=all, once the throughput phases'
	// writeback has drained (settle.go).
	if o.settleMiB > 0 && (o.phases["rf1"] || o.phases["rf3"]) {
		waited, pending, err := settle(ctx, o.settleMiB<<20, settleDeadline)
		if err != nil {
			return nil, fmt.Errorf("settle before the latency phase: %w", err)
		}
		logf("%s round %d: waited %.1f s for the writeback of the throughput phases (dirty + writeback %d MiB)", o.target, o.round, waited.Seconds(), pending>>20)
	}
	// The profiles are taken here when the RF=3 phase did not run (--phases latency).
	var latProf func() error
	if !o.phases["rf3"] {
		latProf = prof
	}
	res.LatencyP50ms, res.LatencyP99ms, err = latency(ctx, seeds, lat, o.rateMiB, o.latencySeconds, o.latencyLinger, o.latencyTimeline, value, latProf)
	if err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	logf("%s round %d: ack latency at %.0f MiB/s p50 %.2f ms p99 %.2f ms", o.target, o.round, o.rateMiB, res.LatencyP50ms, res.LatencyP99ms)
	return res, nil
}

// createTopic creates the topic with 3 partitions and waits until every partition has a leader
// and, for RF=3, a full ISR (so min.insync.replicas=2 holds from the first record).
func createTopic(ctx context.Context, adm *kadm.Client, topic string, rf int16, configs map[string]*string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td := md.Topics[topic]
			ok := td.Err == nil && len(td.Partitions) == partitions
			for _, p := range td.Partitions {
				ok = ok && p.Err == nil && p.Leader >= 0 && len(p.ISR) == int(rf)
			}
			if ok {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: partitions without a leader or a full ISR after 60 s (last error %v)", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// deleteTopics deletes the topics and waits (60 s at most) until metadata no longer lists
// them, so the next round does not share the cluster with this one's partitions.
func deleteTopics(adm *kadm.Client, topics ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("deleting the round's topics: %w", err)
	}
	for {
		md, err := adm.Metadata(ctx)
		if err == nil {
			left := 0
			for _, t := range topics {
				if _, ok := md.Topics[t]; ok {
					left++
				}
			}
			if left == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the round's topics %v still listed 60 s after their deletion (last error %v)", topics, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func producer(seeds []string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}, extra...)
	return kgo.NewClient(opts...)
}

// warm produces one acknowledged record to each partition (the round-robin partitioner spreads
// them), so that metadata, connections and, for RF=3, every follower's fetching of every
// partition are in place before the clock starts. With one record only, the other partitions'
// followers could still be joining their fetcher threads: a partition added while its
// follower's fetch is parked at the leader is fetched only when that fetch returns, after up
// to replica.fetch.wait.max.ms (500 ms), and the acks=all records written meanwhile wait for it.
func warm(ctx context.Context, cl *kgo.Client, topic string, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, partitions)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: value}
	}
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

// startProfiles returns a function that takes CPU, mutex, block and allocation profiles (deltas
// over --profile-seconds) of every broker named by --pprof at once and writes them to
// --profile-dir as broker-N.{cpu,mutex,block,allocs}.pb.gz.
func startProfiles(o runOpts) func() error {
	return func() error {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i, addr := range strings.Split(o.pprof, ",") {
			for _, kind := range []string{"profile", "mutex", "block", "allocs"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := kind
					if kind == "profile" {
						name = "cpu"
					}
					url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, o.profileSeconds)
					if err := download(url, filepath.Join(o.profileDir, fmt.Sprintf("broker-%d.%s.pb.gz", i+1, name))); err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		return <-errs // nil when none failed
	}
}

func download(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func freePortsCmd(args []string) error {
	var n int
	if len(args) != 1 {
		return errors.New("freeports N")
	}
	if _, err := fmt.Sscan(args[0], &n); err != nil || n <= 0 || n > 64 {
		return fmt.Errorf("freeports: N must be 1..64, got %q", args[0])
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
		ports = append(ports, fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}

func readResults(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []Result
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}
