package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// mountTmpfs mounts a tmpfs of size at dir (created); the test is skipped when that is not
// possible (not root, no mount permission in a container).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disk full test: needs root to mount a size-limited tmpfs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("disk full test: cannot mount a tmpfs (%v: %s)", err, strings.TrimSpace(string(out)))
	}
}

func umount(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v: %s", dir, err, out)
	}
}

// wholeBatches checks that a segment file is a sequence of whole record batches (8-byte base
// offset, 4-byte length, then length bytes) and returns how many it holds.
func wholeBatches(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for pos := 0; pos < len(data); n++ {
		if len(data)-pos < 12 {
			return n, fmt.Errorf("%s: %d trailing bytes at %d: a partial batch header", path, len(data)-pos, pos)
		}
		l := int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if l <= 0 || pos+12+l > len(data) {
			return n, fmt.Errorf("%s: batch at %d of length %d runs past the end (%d bytes): a partial batch", path, pos, l, len(data))
		}
		pos += 12 + l
	}
	return n, nil
}

// Fault matrix, disk full (KIP-112, docs/kafka-facts.md §12): the leader's only log dir is a
// small tmpfs that fills under acks=all load. Its dir goes offline; with no dir left the
// broker shuts down (Kafka halts), so its ZooKeeper registration goes and the leadership moves
// to another ISR member within zookeeper.session.timeout + 10 s. No acknowledged record is
// lost, and after a restart with space (the same files on a bigger tmpfs) the log holds no
// partial batch: the torn tail is truncated by recovery, since the offline dir got no clean
// shutdown marker.
func TestDiskFullTakesTheLeadersLogDirOffline(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	mountTmpfs(t, mnt, "6m")
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	session := 6 * time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: session,
		Overrides:       map[string]string{"min.insync.replicas": "2", "log.flush.offset.checkpoint.interval.ms": "1000"},
		BrokerOverrides: map[int32]map[string]string{1: {"log.dirs": mnt}}})
	const topic = "full"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2, 3}}, nil)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		st, err := c.ZK.PartitionState(topic, 0)
		return err == nil && st.Leader == 1 && len(st.ISR) == 3, fmt.Sprintf("state %+v, %v", st, err)
	})

	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0), kgo.RecordRetries(1000))
	var mu sync.Mutex
	acked := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exited := make(chan time.Time, 1)
	go func() {
		c.Broker(1).WaitExit(2 * time.Minute)
		exited <- time.Now()
	}()
	var exitedAt time.Time
	value := make([]byte, 16<<10)
	for i, after := 0, 0; after < 3; i++ {
		if ctx.Err() != nil {
			t.Fatalf("the leader's log dir never failed; broker 1 output:\n%s", c.Broker(1).Tail(40))
		}
		var wg sync.WaitGroup
		for j := 0; j < 8; j++ { // 8 in flight: load
			key := fmt.Sprintf("r-%06d-%d", i, j)
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: value}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					acked[string(r.Key)] = true
				}
			})
		}
		wg.Wait()
		if exitedAt.IsZero() {
			select {
			case exitedAt = <-exited:
			default:
			}
		}
		if !exitedAt.IsZero() {
			after++ // a few more rounds: the producer retries to the new leader
		}
	}
	if code, ok := c.Broker(1).WaitExit(time.Second); !ok || code == 0 {
		t.Fatalf("broker 1 exit code %d (exited %v), want a failure exit", code, ok)
	}
	out := c.Broker(1).Output()
	if !strings.Contains(out, "all log dirs have failed") || !strings.Contains(out, "I/O error on a log dir") {
		t.Fatalf("broker 1 did not log the offline dir and the shutdown:\n%s", c.Broker(1).Tail(40))
	}
	cluster.WaitFor(t, time.Until(exitedAt.Add(session+10*time.Second)), func() (bool, string) {
		st, err := c.ZK.PartitionState(topic, 0)
		return err == nil && st.Leader != 1 && st.Leader > 0 && !slices.Contains(st.ISR, 1), fmt.Sprintf("state %+v, %v", st, err)
	})
	st, _ := c.ZK.PartitionState(topic, 0)
	if moved := st.Modified.Sub(exitedAt); moved > session+10*time.Second {
		t.Fatalf("leadership moved %v after broker 1 exited, want within %v", moved, session+10*time.Second)
	}
	t.Logf("leadership moved to %d (state written %v after broker 1 exited); %d records acknowledged",
		st.Leader, st.Modified.Sub(exitedAt).Round(time.Millisecond), len(acked))
	if fileExistsAt(filepath.Join(mnt, ".kafka_cleanshutdown")) {
		t.Fatal("the failed dir got a clean shutdown marker: recovery would be skipped")
	}

	// Restart with space: the same files on a bigger tmpfs at the same place.
	keep := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", mnt, keep).CombinedOutput(); err != nil {
		t.Fatalf("copying the full dir: %v: %s", err, out)
	}
	umount(t, mnt)
	mountTmpfs(t, mnt, "128m")
	if out, err := exec.Command("cp", "-a", keep+"/.", mnt).CombinedOutput(); err != nil {
		t.Fatalf("copying back: %v: %s", err, out)
	}
	c.Broker(1).Start()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		st, err := c.ZK.PartitionState(topic, 0)
		return err == nil && slices.Contains(st.ISR, 1), fmt.Sprintf("broker 1 not back in the ISR: %+v, %v", st, err)
	})
	segs, _ := filepath.Glob(filepath.Join(mnt, topic+"-0", "*.log"))
	if len(segs) == 0 {
		t.Fatal("no segment in the recovered log")
	}
	for _, s := range segs {
		if _, err := wholeBatches(s); err != nil {
			t.Fatal(err)
		}
	}

	// No acknowledged record is lost.
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	for missing := len(acked); missing > 0; {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			if acked[k] && !seen[k] {
				seen[k] = true
				missing--
			}
		})
	}
	if len(seen) != len(acked) {
		t.Fatalf("%d of %d acknowledged records lost", len(acked)-len(seen), len(acked))
	}
}

func fileExistsAt(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
