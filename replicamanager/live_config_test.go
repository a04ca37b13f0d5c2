package replicamanager

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

func (e *env) partitionCfg(t *testing.T) topicConfig {
	t.Helper()
	p := e.rm.getPartition(tp0())
	if p == nil {
		t.Fatal("t-0 not hosted")
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if got := p.log.Config(); got != p.cfg.log {
		t.Fatalf("partition config and log config differ:\n%+v\n%+v", p.cfg.log, got)
	}
	return p.cfg
}

// Precedence (docs/live-configs.md §1–2): topic override > /config/brokers/<id> >
// /config/brokers/<default> > server.properties; removing a level falls back to the next one,
// at once, on a partition that exists.
func TestLiveConfigPrecedence(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1}, []int32{1})
	static := e.rm.cfg.LogDefaults.RetentionMs
	ret := func() int64 { return e.partitionCfg(t).log.RetentionMs }

	e.rm.applyDynamicConfig("brokers/<default>", map[string]string{"log.retention.ms": "1000", "min.insync.replicas": "2",
		"log.retention.hours": "1", // read-only in Kafka: ignored
	})
	if ret() != 1000 || e.partitionCfg(t).minInsyncReplicas != 2 {
		t.Fatalf("cluster default not applied: %+v", e.partitionCfg(t))
	}
	e.rm.applyDynamicConfig("brokers/7", map[string]string{"log.retention.ms": "7"}) // another broker's
	e.rm.applyDynamicConfig("brokers/1", map[string]string{"log.retention.ms": "2000"})
	if ret() != 2000 {
		t.Fatalf("per-broker over cluster default: retention.ms %d, want 2000", ret())
	}
	e.rm.applyDynamicConfig("topics/t", map[string]string{"retention.ms": "3000"})
	e.rm.applyDynamicConfig("topics/other", map[string]string{"retention.ms": "9"})
	if ret() != 3000 {
		t.Fatalf("topic override over broker levels: retention.ms %d, want 3000", ret())
	}
	e.rm.applyDynamicConfig("topics/t", map[string]string{})
	if ret() != 2000 {
		t.Fatalf("topic override deleted: retention.ms %d, want the per-broker 2000", ret())
	}
	e.rm.applyDynamicConfig("brokers/1", map[string]string{})
	if ret() != 1000 {
		t.Fatalf("per-broker deleted: retention.ms %d, want the cluster default 1000", ret())
	}
	e.rm.applyDynamicConfig("brokers/<default>", map[string]string{"log.retention.ms": "not-a-number"})
	if ret() != static || e.partitionCfg(t).minInsyncReplicas != 1 {
		t.Fatalf("cluster default gone: %+v, want server.properties' retention %d and min.insync.replicas 1", e.partitionCfg(t), static)
	}
}

// K2 live: min.insync.replicas raised in /config/topics rejects the next acks=all produce with
// NOT_ENOUGH_REPLICAS; a partition created after a change gets the current config.
func TestLiveMinInsyncReplicasAndLaterPartition(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.rm.applyDynamicConfig("brokers/<default>", map[string]string{"log.segment.bytes": "4096", "log.message.timestamp.type": "LogAppendTime"})
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1, 2})
	if c := e.partitionCfg(t).log; c.SegmentBytes != 4096 || c.TimestampType != logstore.LogAppendTime {
		t.Fatalf("partition created after the broker change: %+v", c)
	}
	before := time.Now().UnixMilli() // the log's clock
	r := waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	if r.ErrorCode != 0 || r.LogAppendTime < before || r.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("LogAppendTime produce: %+v, want log_append_time of the log's clock (>= %d)", r, before)
	}
	e.rm.applyDynamicConfig("topics/t", map[string]string{"min.insync.replicas": "3"})
	if r := waitResult(t, e.produce(t, -1, 1, time.Second), time.Second); r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with ISR 2 < min.insync.replicas 3: %+v", r)
	}
	e.rm.applyDynamicConfig("topics/t", map[string]string{"min.insync.replicas": "2"})
	if r := waitResult(t, e.produce(t, 1, 1, time.Second), time.Second); r.ErrorCode != 0 {
		t.Fatalf("acks=1 after lowering: %+v", r)
	}
	if got := e.partitionCfg(t).minInsyncReplicas; got != 2 {
		t.Fatalf("min.insync.replicas %d, want 2", got)
	}
}

// Config deliveries race with produces, partition creation and the gauges (go test -race).
func TestLiveConfigConcurrent(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1}, []int32{1})
	var wg sync.WaitGroup
	run := func(n int, f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				f(i)
			}
		}()
	}
	run(200, func(i int) {
		e.rm.applyDynamicConfig("topics/t", map[string]string{"min.insync.replicas": []string{"1", "2"}[i%2], "segment.bytes": "100000"})
	})
	run(200, func(i int) {
		e.rm.applyDynamicConfig("brokers/<default>", map[string]string{"log.retention.ms": []string{"1000", "2000"}[i%2]})
	})
	run(200, func(i int) { waitResult(t, e.produce(t, 1, 1, time.Second), time.Second) })
	run(200, func(i int) { e.gauge("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount") })
	run(20, func(i int) {
		tp := TopicPartition{Topic: "t", Partition: int32(i + 1)}
		if err := e.rm.createPartitions([]TopicPartition{tp})[tp]; err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	e.rm.applyDynamicConfig("topics/t", map[string]string{"min.insync.replicas": "2"})
	for i := int32(0); i <= 20; i++ {
		p := e.rm.getPartition(TopicPartition{Topic: "t", Partition: i})
		if p.view().minIsr != 2 {
			t.Fatalf("t-%d: min.insync.replicas %d after the last change, want 2", i, p.view().minIsr)
		}
	}
}
