package clients

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 10 item 2 with the group consumers of sarama (ConsumerGroup) and kafka-go
// (Reader{GroupID}): members join and leave while a producer writes; every produced record is
// processed, commits only go up (as OffsetFetch reads them back, and as kafka-go's synchronous
// commits were acknowledged), a member taking a partition over starts at or above every
// commit seen before, and the final commits are the end offsets (cluster.GroupJournal).

// groupClusterOverrides are the group settings of these tests (as tests/integration's).
var groupClusterOverrides = map[string]string{
	"offsets.topic.num.partitions":     "6",
	"offsets.topic.replication.factor": "3",
	"group.initial.rebalance.delay.ms": "100",
	"group.min.session.timeout.ms":     "1000",
	"auto.leader.rebalance.enable":     "false",
}

// groupMember is one client's group consumer, stopped by its stop function.
type groupMember struct {
	name string
	stop func()
}

// midStream runs the join/leave sequence with members made by start: m1 alone, m2 joins, m3
// joins, m1 leaves, m2 leaves, while 6 partitions are written round-robin; then the producer
// stops, m3 commits the end offsets and the journal is checked.
func midStream(t *testing.T, topic, group string, lateCommits bool, start func(t *testing.T, c *cluster.Cluster, j *cluster.GroupJournal, name string) groupMember) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, Overrides: groupClusterOverrides})
	const partitions = 6
	c.CreateTopic(topic, partitions, 3)
	j := cluster.NewGroupJournal()
	if lateCommits {
		j.AllowLateCommit()
	}
	wctx, wcancel := context.WithCancel(context.Background())
	watched := j.WatchCommits(wctx, c, group, topic, 100*time.Millisecond)
	defer func() { wcancel(); <-watched }()

	// The producer: 30 records round-robin every 30 ms (about 1000/s), acks=all.
	log := cluster.NewProducedLog()
	pctx, pcancel := context.WithCancel(context.Background())
	var perr error
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; pctx.Err() == nil; seq += 30 {
			if err := c.ProduceRoundRobin(context.Background(), topic, partitions, "v", seq, 30, log); err != nil {
				perr = err
				return
			}
			select {
			case <-pctx.Done():
			case <-tick.C:
			}
		}
	}()
	defer func() { pcancel(); pwg.Wait() }()

	stopM3 := c.Groups.JoinLeaveMidStream(j, group, topic, partitions, 90*time.Second, func(name string) func() {
		return start(t, c, j, name).stop
	})

	pcancel()
	pwg.Wait()
	if perr != nil {
		t.Fatalf("producer: %v", perr)
	}
	if gaps := log.Gaps(); gaps != "" {
		t.Fatal(gaps)
	}
	ends := log.Ends(partitions)
	c.Groups.WaitCommitted(group, topic, ends, 90*time.Second)
	stopM3()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	final, err := c.Groups.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatalf("final OffsetFetch: %v", err)
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		t.Logf("%s processed partitions %v", m, j.ProcessedBy(m))
	}
	if len(j.ProcessedBy("m3")) == 0 {
		t.Errorf("m3 processed nothing")
	}
	res := j.Check(log.Values(), final)
	t.Logf("journal: %d records processed (%d repeats of the uncommitted tail), %d sessions (%d started just below a late commit), %d commits seen; watcher errors %v",
		res.Processed, res.Repeated, res.Sessions, res.LateCommitRereads, res.CommitsSeen, j.WatchErrors())
	for _, v := range res.Violations {
		t.Error(v)
	}
}

// saramaHandler journals every message before marking it, and commits synchronously when a
// session ends (rebalance or leave).
type saramaHandler struct {
	name string
	j    *cluster.GroupJournal
}

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		// Taken before the mark: no commit covering m can be acknowledged before it.
		h.j.Processed(h.name, m.Partition, m.Offset, m.Value, time.Now())
		s.MarkMessage(m, "")
	}
	return nil
}

func TestSaramaConsumerGroup_JoinLeaveMidStreamLosesNothing(t *testing.T) {
	const topic, group = "sarama-group", "sarama-grp"
	midStream(t, topic, group, false, func(t *testing.T, c *cluster.Cluster, j *cluster.GroupJournal, name string) groupMember {
		cfg := sarama.NewConfig()
		cfg.ClientID = name
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
		cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = 10 * time.Second
		cfg.Consumer.Return.Errors = true
		cg, err := sarama.NewConsumerGroup(c.BootstrapAddrs(), group, cfg)
		if err != nil {
			t.Fatalf("%s: sarama consumer group: %v", name, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, saramaHandler{name, j}); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					t.Logf("%s: Consume: %v", name, err)
					retryPause(ctx)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for err := range cg.Errors() {
				t.Logf("%s: %v", name, err)
			}
		}()
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cancel()
				if err := cg.Close(); err != nil { // commits and leaves the group
					t.Errorf("%s: close: %v", name, err)
				}
				wg.Wait()
			})
		}
		t.Cleanup(stop)
		return groupMember{name, stop}
	})
}

// kafka-go's Reader has one commit queue for all generations: CommitMessages of a record
// delivered just before a rebalance can be served by the next generation, after that
// generation's OffsetFetch, so the member then holding the partition (itself or another) may
// get that record once more although its commit was acknowledged (the broker answered both
// correctly, in that order). The journal counts such re-reads apart (AllowLateCommit) and
// still fails a start below any earlier commit.
func TestKafkaGoReaderGroup_JoinLeaveMidStreamLosesNothing(t *testing.T) {
	const topic, group = "kafka-go-group", "kafka-go-grp"
	midStream(t, topic, group, true, func(t *testing.T, c *cluster.Cluster, j *cluster.GroupJournal, name string) groupMember {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: c.BootstrapAddrs(), GroupID: group, Topic: topic,
			StartOffset:       kafka.FirstOffset,
			HeartbeatInterval: 500 * time.Millisecond,
			SessionTimeout:    10 * time.Second,
			RebalanceTimeout:  10 * time.Second,
			JoinGroupBackoff:  500 * time.Millisecond,
			MaxWait:           500 * time.Millisecond,
			// CommitInterval 0: CommitMessages commits synchronously.
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				at := time.Now()
				m, err := r.FetchMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					t.Logf("%s: fetch: %v", name, err)
					retryPause(ctx)
					continue
				}
				j.Processed(name, int32(m.Partition), m.Offset, m.Value, at)
				if err := r.CommitMessages(ctx, m); err != nil {
					if ctx.Err() == nil {
						t.Logf("%s: commit of %d/%d: %v", name, m.Partition, m.Offset, err)
					}
					continue
				}
				j.Committed(name, int32(m.Partition), m.Offset+1)
			}
		}()
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cancel()
				<-done
				if err := r.Close(); err != nil { // leaves the group
					t.Errorf("%s: close: %v", name, err)
				}
			})
		}
		t.Cleanup(stop)
		return groupMember{name, stop}
	})
}

// retryPause is a client's back-off before retrying a failed call (not synchronisation).
func retryPause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}
