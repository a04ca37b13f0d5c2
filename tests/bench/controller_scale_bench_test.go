package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// BenchmarkControllerScale measures the control plane at scale (docs/performance.md,
// "Controller at scale"): on three brokers with a 6 s ZooKeeper session it creates one topic
// with N partitions and RF=3 and times
//
//   - create: from the CreateTopics request until every partition state znode names a leader
//     and a full ISR (3 replicas) and every broker's metadata cache (UpdateMetadata, sent to it
//     after its LeaderAndIsr was answered) agrees with it;
//   - shutdown: from SIGTERM to a broker that is not the controller (K7, controlled shutdown)
//     until its process has exited and no partition state znode names it as leader;
//   - rejoin (not a goal, needed before the next step): from its restart until every ISR is
//     full again;
//   - failover: from kill -9 of the controller until another broker is controller and has
//     written every partition state that named the killed broker (leader or ISR member) — it
//     includes the session timeout, since only its expiry frees /controller (S9).
//
// It also reports the resident memory added per replica (VmRSS after creation minus before,
// summed over the brokers, over 3N replicas). N comes from CTRLSCALE_PARTITIONS, a
// comma-separated list (default 300); run it once per count, e.g.
//
//	CTRLSCALE_PARTITIONS=300,3000 go test -run XXX -bench ControllerScale -benchtime 1x -timeout 60m ./tests/bench
//
// scripts/controller-scale.sh runs it and prints the table. CTRLSCALE_SHUTDOWN_LOG=1 (with -v)
// logs the stopped broker's output from its "shutting down" line on. CTRLSCALE_PROFILE=DIR
// turns on the brokers' profiling endpoints, saves a CPU profile of each broker taken during
// the creation (CTRLSCALE_PROFILE_SECONDS long, default 8) and every broker's output to DIR;
// CTRLSCALE_LOGS=DIR saves only the outputs.
func BenchmarkControllerScale(b *testing.B) {
	counts, err := partitionCounts(os.Getenv("CTRLSCALE_PARTITIONS"))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range counts {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			if b.N > 1 {
				b.Skip("one cluster per count: run with -benchtime 1x")
			}
			r := controllerScale(b, n)
			b.ReportMetric(r.create.Seconds(), "create-s")
			b.ReportMetric(r.shutdown.Seconds(), "shutdown-s")
			b.ReportMetric(r.rejoin.Seconds(), "rejoin-s")
			b.ReportMetric(r.failover.Seconds(), "failover-s")
			b.ReportMetric(r.rssPerReplicaKiB, "rss-KiB/replica")
			// One table line per count, grepped by scripts/controller-scale.sh.
			fmt.Printf("CTRLSCALE partitions=%d create=%.2fs shutdown=%.2fs shutdownLeaders=%d rejoin=%.2fs failover=%.2fs rssPerReplica=%.1fKiB\n",
				n, r.create.Seconds(), r.shutdown.Seconds(), r.shutdownLeaders, r.rejoin.Seconds(), r.failover.Seconds(), r.rssPerReplicaKiB)
		})
	}
}

// partitionCounts parses CTRLSCALE_PARTITIONS.
func partitionCounts(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return []int32{300}, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("CTRLSCALE_PARTITIONS=%q: %q is not a positive partition count", s, f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

type scaleResult struct {
	create, shutdown, rejoin, failover time.Duration
	shutdownLeaders                    int
	rssPerReplicaKiB                   float64
}

const scaleTopic = "ctrlscale"

func controllerScale(b *testing.B, n int32) scaleResult {
	profDir := os.Getenv("CTRLSCALE_PROFILE")
	opts := cluster.Options{Brokers: 3, SessionTimeout: 6 * time.Second}
	if profDir != "" {
		opts.Overrides = map[string]string{"isrbroker.pprof.enable": "true"}
	}
	c := cluster.Start(b, opts)
	ids := c.IDs()
	if dir := cmp.Or(os.Getenv("CTRLSCALE_LOGS"), profDir); dir != "" {
		defer saveOutputs(b, c, ids, dir)
	}
	var r scaleResult
	// Bounds of every wait: generous, so a slow run is measured rather than failed.
	limit := 2*time.Minute + time.Duration(n)*30*time.Millisecond

	rssBefore := totalRSS(b, c, ids)
	var profiles sync.WaitGroup
	if profDir != "" {
		profileCPU(c, ids, profDir, "create", &profiles)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	adm := c.Admin()
	adm.SetTimeoutMillis(int32(limit / time.Millisecond))
	resp, err := adm.CreateTopic(ctx, n, 3, nil, scaleTopic)
	cancel()
	// REQUEST_TIMED_OUT only means the creation was not complete within the request's
	// timeout (it goes on, as in Kafka); the wait below measures it.
	if err != nil || (resp.Err != nil && !errors.Is(resp.Err, kerr.RequestTimedOut)) {
		b.Fatalf("create topic with %d partitions: %v %v", n, err, resp.Err)
	}
	// When each part of the agreement was first seen (a breakdown for the log).
	seen := map[string]time.Duration{}
	cluster.WaitFor(b, limit, func() (bool, string) {
		ok, msg := allAgree(c, n, ids, func(part string) {
			if _, ok := seen[part]; !ok {
				seen[part] = time.Since(start)
			}
		})
		return ok, msg
	})
	r.create = time.Since(start)
	profiles.Wait()
	b.Logf("creation of %d partitions: first seen %v", n, seen)
	rssAfter := totalRSS(b, c, ids)
	r.rssPerReplicaKiB = float64(rssAfter-rssBefore) / float64(3*n)

	// Controlled shutdown of a broker that is not the controller.
	ctrl := controllerID(b, c)
	victim := ids[0]
	for _, id := range ids {
		if id != ctrl {
			victim = id
			break
		}
	}
	states := readStates(b, c, n)
	for _, st := range states {
		if st.Leader == victim {
			r.shutdownLeaders++
		}
	}
	// The end is the later of the process's exit and the moment no partition state names the
	// broker as leader any more. That moment is read from ZooKeeper after the exit: the mtime of
	// each formerly led partition's state, written when the controller moved its leadership (a
	// later write of the same state only makes it later, never earlier). Polling the 3,000 states
	// meanwhile would load the ZooKeeper and the two cores the controller is using, and add up
	// to one polling round to the figure.
	start = time.Now()
	if err := syscall.Kill(c.Broker(victim).Pid(), syscall.SIGTERM); err != nil {
		b.Fatalf("SIGTERM broker %d: %v", victim, err)
	}
	if _, ok := c.Broker(victim).WaitExit(limit); !ok {
		b.Fatalf("broker %d did not exit within %v of SIGTERM", victim, limit)
	}
	exited := time.Since(start)
	var movedAfter time.Duration
	cluster.WaitFor(b, limit, func() (bool, string) {
		after, err := readStatesErr(c, n)
		if err != nil {
			return false, err.Error()
		}
		movedAfter = 0
		for p, st := range after {
			if st.Leader == victim {
				return false, fmt.Sprintf("partition %d still led by the stopped broker %d", p, victim)
			}
			if states[p].Leader == victim {
				movedAfter = max(movedAfter, st.Modified.Sub(start))
			}
		}
		return true, ""
	})
	r.shutdown = max(exited, movedAfter)
	b.Logf("controlled shutdown: SIGTERM at %s, leaders moved after %v, exited after %v",
		start.UTC().Format("15:04:05.000"), movedAfter, exited)
	if os.Getenv("CTRLSCALE_SHUTDOWN_LOG") != "" {
		// The stopped broker's own lines from "shutting down" on, without the per-partition ones.
		out := c.Broker(victim).OutputSince()
		if i := strings.Index(out, `msg="shutting down"`); i >= 0 {
			if j := strings.LastIndex(out[:i], "\n"); j >= 0 {
				out = out[j+1:]
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, " partition=") {
				b.Log(line)
			}
		}
	}

	// Rejoin, so that every ISR is full before the failover.
	start = time.Now()
	c.Broker(victim).Start()
	c.WaitRegistered(victim)
	cluster.WaitFor(b, limit, func() (bool, string) { return allAgree(c, n, ids, func(string) {}) })
	r.rejoin = time.Since(start)

	// Controller failover after kill -9 of the controller. As for the controlled shutdown, the
	// end is read from ZooKeeper rather than from the polling: once every state is written by
	// the new controller and names the killed broker nowhere, the failover ended at the latest
	// of those writes (the states' mtime, ZooKeeper's own time on this host's clock). Until a new
	// controller is elected only /controller is read, so the polling of 3,000 states does not
	// load the ZooKeeper and the two cores while the session expires.
	ctrl = controllerID(b, c)
	epochBefore := controllerEpoch(b, c)
	start = time.Now()
	c.Broker(ctrl).Kill()
	cluster.WaitFor(b, limit, func() (bool, string) {
		id, err := controllerIDErr(c)
		if err != nil || id == ctrl || id < 0 {
			return false, fmt.Sprintf("controller is %d (%v), killed %d", id, err, ctrl)
		}
		return true, ""
	})
	elected := time.Since(start)
	var lastWrite time.Duration
	cluster.WaitFor(b, limit, func() (bool, string) {
		lastWrite = 0
		for p, st := range readStates(b, c, n) {
			if st.Leader == ctrl || contains(st.ISR, ctrl) {
				return false, fmt.Sprintf("partition %d still names the killed controller %d: %+v", p, ctrl, st)
			}
			if st.ControllerEpoch <= epochBefore {
				return false, fmt.Sprintf("partition %d not written by the new controller: %+v", p, st)
			}
			lastWrite = max(lastWrite, st.Modified.Sub(start))
		}
		return true, ""
	})
	r.failover = max(elected, lastWrite)
	b.Logf("controller failover: kill -9 at %s, new controller seen after %v, last state written after %v (polling ended after %v)",
		start.UTC().Format("15:04:05.000"), elected, lastWrite, time.Since(start))
	return r
}

// allAgree reports whether every partition state has a leader and a 3-replica ISR and every
// broker in ids serves the same leader and ISR from its metadata cache. The controller sends a
// broker its requests one at a time, each after the previous one's response, and the
// UpdateMetadata after the LeaderAndIsr of the same event: a broker whose metadata agrees has
// applied its LeaderAndIsr (created its replicas, leaders and fetchers). (The /metrics
// endpoint is not polled: one scrape took 8.6 s at 10,000 partitions and would dominate.)
func allAgree(c *cluster.Cluster, n int32, ids []int32, done func(part string)) (bool, string) {
	states, err := readStatesErr(c, n)
	if err != nil {
		return false, err.Error()
	}
	for p, st := range states {
		if st.Leader < 0 || len(st.ISR) != 3 {
			return false, fmt.Sprintf("partition %d: leader %d ISR %v", p, st.Leader, st.ISR)
		}
	}
	done("zookeeper")
	agree := true
	var msg string
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		md, err := cluster.MetadataPartitions(ctx, c.Broker(id).Addr, scaleTopic)
		cancel()
		if err != nil {
			return false, fmt.Sprintf("metadata of broker %d: %v", id, err)
		}
		if len(md) != int(n) {
			return false, fmt.Sprintf("broker %d knows %d of %d partitions", id, len(md), n)
		}
		same := true
		for p, st := range states {
			m := md[int32(p)]
			if m.Leader != st.Leader || !cluster.SameMembers(m.ISR, st.ISR) {
				same, msg = false, fmt.Sprintf("broker %d: partition %d leader %d ISR %v, ZooKeeper %d %v", id, p, m.Leader, m.ISR, st.Leader, st.ISR)
				break
			}
		}
		if !same {
			agree = false
			continue
		}
		done(fmt.Sprintf("metadata@%d", id))
	}
	return agree, msg
}

// readStates reads the n partition state znodes with pipelined requests (many Gets in flight
// on the harness's one session).
func readStates(b *testing.B, c *cluster.Cluster, n int32) []cluster.PartitionState {
	out, err := readStatesErr(c, n)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func readStatesErr(c *cluster.Cluster, n int32) ([]cluster.PartitionState, error) {
	out := make([]cluster.PartitionState, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int32)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				out[p], errs[p] = c.ZK.PartitionState(scaleTopic, p)
			}
		}()
	}
	for p := int32(0); p < n; p++ {
		next <- p
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func controllerIDErr(c *cluster.Cluster) (int32, error) {
	data, _, err := c.ZK.Conn().Get("/controller")
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	var v struct {
		BrokerID int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return -1, fmt.Errorf("/controller %q: %w", data, err)
	}
	return v.BrokerID, nil
}

func controllerID(b *testing.B, c *cluster.Cluster) int32 {
	id, err := controllerIDErr(c)
	if err != nil || id < 0 {
		b.Fatalf("no controller: %d %v", id, err)
	}
	return id
}

func controllerEpoch(b *testing.B, c *cluster.Cluster) int32 {
	data, _, err := c.ZK.Conn().Get("/controller_epoch")
	if err != nil {
		b.Fatalf("/controller_epoch: %v", err)
	}
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		b.Fatalf("/controller_epoch %q: %v", data, err)
	}
	return int32(e)
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// totalRSS sums VmRSS (KiB) of the brokers' processes.
func totalRSS(b *testing.B, c *cluster.Cluster, ids []int32) int64 {
	var sum int64
	for _, id := range ids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Broker(id).Pid()))
		if err != nil {
			b.Fatalf("RSS of broker %d: %v", id, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				v, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					b.Fatalf("VmRSS of broker %d: %q", id, line)
				}
				sum += v
			}
		}
	}
	return sum
}

// profileCPU fetches a CPU profile of every broker (docs/performance.md, "Profiling a broker")
// into dir/<name>-<id>.pprof, for CTRLSCALE_PROFILE_SECONDS (default 8) from now.
func profileCPU(c *cluster.Cluster, ids []int32, dir, name string, wg *sync.WaitGroup) {
	secs := os.Getenv("CTRLSCALE_PROFILE_SECONDS")
	if secs == "" {
		secs = "8"
	}
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%s", c.Broker(id).MetricsAddr, secs)
			resp, err := http.Get(url)
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile of broker %d: %v\n", id, err)
				return
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, id)), data, 0o644)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile of broker %d: %v\n", id, err)
			}
		}()
	}
}

// saveOutputs writes every broker's output to dir/broker-<id>.log.
func saveOutputs(b *testing.B, c *cluster.Cluster, ids []int32, dir string) {
	for _, id := range ids {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("broker-%d.log", id)), []byte(c.Broker(id).Output()), 0o644); err != nil {
			b.Log(err)
		}
	}
}
