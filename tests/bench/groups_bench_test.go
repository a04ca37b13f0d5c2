package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Consumer-group benchmarks (docs/performance.md, "Consumer groups"): OffsetCommit throughput
// into __consumer_offsets (RF 3, acks=all as offsets.commit.required.acks=-1), the time for 10
// members to join a 60-partition topic, and the coordinator failover time after kill -9.

// groupBenchOverrides are the broker settings of the group benchmarks: Kafka's defaults except
// a 10-partition __consumer_offsets (created faster) and no initial rebalance delay, so the
// join benchmark measures the protocol, not the 3 s wait.
var groupBenchOverrides = map[string]string{
	"offsets.topic.num.partitions":     "10",
	"offsets.topic.replication.factor": "3",
	"group.initial.rebalance.delay.ms": "0",
	"group.min.session.timeout.ms":     "1000",
}

// BenchmarkGroups_OffsetCommit_RF3: one b.N iteration = one acknowledged OffsetCommit of one
// partition (a standalone commit: generation -1, as kadm sends), from `conc` committers at
// once, each on its own group (so several coordinators share the load).
func BenchmarkGroups_OffsetCommit_RF3(b *testing.B) {
	c := cluster.Start(b, cluster.Options{Brokers: 3, Overrides: groupBenchOverrides})
	const topic = "commits"
	c.CreateTopic(topic, partitions, 3)
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("committers=%d", conc), func(b *testing.B) {
			ctx := context.Background()
			adms := make([]*kadm.Client, conc)
			for i := range adms {
				adms[i] = kadm.NewClient(c.Client())
				// Warm up: find the coordinator, create and load __consumer_offsets.
				if err := adms[i].CommitAllOffsets(ctx, fmt.Sprintf("bench-%d-%d", conc, i), commitOf(topic, 0, 1)); err != nil {
					b.Fatalf("warm-up commit: %v", err)
				}
			}
			var next atomic.Int64
			var failed atomic.Value
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i := range adms {
				wg.Add(1)
				go func() {
					defer wg.Done()
					group := fmt.Sprintf("bench-%d-%d", conc, i)
					for {
						n := next.Add(1)
						if n > int64(b.N) {
							return
						}
						if err := adms[i].CommitAllOffsets(ctx, group, commitOf(topic, int32(n)%partitions, n)); err != nil {
							failed.Store(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			took := time.Since(start)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatalf("commit: %v", err)
			}
			b.ReportMetric(float64(b.N)/took.Seconds(), "commits/s")
		})
	}
}

func commitOf(topic string, p int32, offset int64) kadm.Offsets {
	offs := kadm.Offsets{}
	offs.AddOffset(topic, p, offset, -1)
	return offs
}

// BenchmarkGroups_TenMembersJoin60Partitions: one b.N iteration = 10 franz-go members (range
// balancer) starting at once on a new group of a 60-partition topic, timed until every member
// has its assignment and together they hold all 60 partitions.
func BenchmarkGroups_TenMembersJoin60Partitions(b *testing.B) {
	c := cluster.Start(b, cluster.Options{Brokers: 3, Overrides: groupBenchOverrides})
	const topic, parts, members = "join60", 60, 10
	c.CreateTopic(topic, parts, 3)
	// Warm up __consumer_offsets.
	if err := c.Admin().CommitAllOffsets(context.Background(), "warm-up", commitOf(topic, 0, 0)); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		group := fmt.Sprintf("join-%d", i)
		var mu sync.Mutex
		held := map[int32]int{}
		assignedMembers := 0
		allIn := make(chan struct{})
		start := time.Now()
		var clients []*kgo.Client
		for m := 0; m < members; m++ {
			got := false
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapAddrs()...), kgo.ConsumerGroup(group),
				kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
					mu.Lock()
					defer mu.Unlock()
					for _, p := range a[topic] {
						held[p]++
					}
					if !got && len(a[topic]) > 0 {
						got = true
						assignedMembers++
					}
					if assignedMembers == members && len(held) == parts {
						select {
						case <-allIn:
						default:
							close(allIn)
						}
					}
				}),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
					mu.Lock()
					defer mu.Unlock()
					for _, p := range r[topic] {
						if held[p]--; held[p] == 0 {
							delete(held, p)
						}
					}
				}))
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, cl)
			go cl.PollFetches(context.Background()) // starts the group management
		}
		select {
		case <-allIn:
		case <-time.After(2 * time.Minute):
			b.Fatalf("10 members did not all get partitions within 2 minutes")
		}
		took := time.Since(start)
		total += took
		b.StopTimer()
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Add(1)
			go func() { defer wg.Done(); cl.Close() }()
		}
		wg.Wait()
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/join")
}

// BenchmarkGroups_CoordinatorFailover: one b.N iteration = kill -9 the coordinator of a group
// whose two members commit every 100 ms, timed until a member's commit is acknowledged again;
// the killed broker is restarted (untimed) before the next iteration. ZooKeeper session
// timeout 6 s (Kafka's default), member session timeout 6 s.
func BenchmarkGroups_CoordinatorFailover(b *testing.B) {
	c := cluster.Start(b, cluster.Options{Brokers: 3, Overrides: groupBenchOverrides})
	const topic, group = "failover", "failover-bench"
	c.CreateTopic(topic, partitions, 3)
	ctx := context.Background()
	if err := c.ProduceRoundRobin(ctx, topic, partitions, "r", 0, 600, cluster.NewProducedLog()); err != nil {
		b.Fatal(err)
	}
	var lastAck atomic.Int64 // unix nanos of the latest acknowledged commit
	fixed := map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 1}}}
	for m := 0; m < 2; m++ {
		cl := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.MetadataMinAge(250*time.Millisecond), kgo.DisableAutoCommit())
		go func() {
			for {
				pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				fs := cl.PollFetches(pctx)
				cancel()
				if fs.IsClientClosed() {
					return
				}
				// Commit every 100 ms whether or not records came (offset 1 of partition 0,
				// with the member's generation: the same coordinator path as any commit).
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				cl.CommitOffsetsSync(cctx, fixed, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
					if err == nil && resp != nil && len(resp.Topics) > 0 && len(resp.Topics[0].Partitions) > 0 && resp.Topics[0].Partitions[0].ErrorCode == 0 {
						lastAck.Store(time.Now().UnixNano())
					}
				})
				ccancel()
			}
		}()
	}
	c.Groups.WaitStable(group, topic, partitions, 2, time.Minute)
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cluster.WaitFor(b, time.Minute, func() (bool, string) {
			return time.Since(time.Unix(0, lastAck.Load())) < time.Second, "no commit acknowledged in the last second"
		})
		coord, err := c.Groups.Coordinator(ctx, group)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		killed := time.Now()
		c.Broker(coord).Kill()
		dead := time.Now() // acknowledgements after this come from another coordinator
		cluster.WaitFor(b, time.Minute, func() (bool, string) {
			return lastAck.Load() > dead.UnixNano(), "no commit acknowledged since the kill"
		})
		total += time.Unix(0, lastAck.Load()).Sub(killed)
		b.StopTimer()
		c.Broker(coord).Start()
		c.WaitRegistered(coord)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/failover")
}
