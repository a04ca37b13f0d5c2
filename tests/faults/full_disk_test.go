package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Disk faults of the full matrix (docs/reliability.md, fault matrix row 16): what a broker
// finds on its disk after the machine lost power. They run only with ISRBROKER_FAULTS_FULL=1.

// powerLossRounds is row 16's N (docs/reliability.md, fault matrix: ×20).
const powerLossRounds = 20

// Row 16, power loss ×20: SIGKILL every replica of the partitions under an acks=all load,
// then cut each replica's segments at a random byte at or above its own recovery-point
// checkpoint (the page cache is lost: what the broker had not fsynced may be gone, torn
// mid-batch, or the file left empty), restart the brokers in random order. After each round,
// every acknowledged record below the lowest point any replica kept must still be there;
// acknowledged records above it may be lost and are reported apart (powerloss_lost), as the
// acks=1 loss is. At the end: R (replicas identical below the HW, same log start), no offset
// with two values (O), and D and S for the idempotent producer.
func TestFault16_PowerLoss(t *testing.T) {
	fullMatrix(t)
	s := startScenarioWith(t, "16-power-loss", scenarioOptions{
		// The checkpoint of flushed offsets every second, segments of 16 KiB (about one roll
		// a second per partition; each roll flushes the segment it closes): the recovery point
		// moves during a round, so the cuts land both below and above the acknowledged records.
		Overrides:    map[string]string{"log.flush.offset.checkpoint.interval.ms": "1000"},
		TopicConfigs: map[string]string{"segment.bytes": "16384"},
		NoMonitor:    true,
	})
	processKeepOutputs(s)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("power loss: seed %d", seed)
	s.mayLose = map[string]bool{}
	ids := s.c.IDs()
	var worstRecovery time.Duration
	lostAboveN, keptBelowN := 0, 0
	lostBelow := map[string]bool{} // reported once, and judged again by L at the end
	for round := 1; round <= powerLossRounds; round++ {
		s.all.waitAcks(t, -1, 600, waitLong, fmt.Sprintf("before power loss %d", round))
		s.waitFullISR(waitLong)
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		s.fault(ids[0], fmt.Sprintf("power loss %d/%d: SIGKILL brokers %v", round, powerLossRounds, ids))
		killedAt := time.Now()
		for _, id := range ids {
			s.c.Broker(id).Kill()
		}
		// safe[p]: the lowest offset at which any replica's cut left its log.
		safe := map[int32]int64{}
		for p := int32(0); p < topicPartitions; p++ {
			safe[p] = -1
		}
		for _, id := range ids {
			rps, err := readRecoveryPoints(s.c.Broker(id).LogDir)
			if err != nil {
				t.Fatalf("broker %d: %v", id, err)
			}
			for p := int32(0); p < topicPartitions; p++ {
				rp := rps[s.topic+"-"+strconv.Itoa(int(p))]
				kept := powerCut(t, rng, s.c.Broker(id).PartitionDir(s.topic, p), rp)
				if safe[p] < 0 || kept < safe[p] {
					safe[p] = kept
				}
			}
		}
		t.Logf("power loss %d: lowest kept offset per partition %v", round, safe)
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		s.c.WaitUnregistered(waitLong, ids...)
		// Every acknowledgement the client has now was sent before the power loss (none can
		// come while every broker is down), also those that reached it after killedAt.
		acks := s.all.acksBefore(time.Now())
		for _, id := range ids {
			s.c.Broker(id).Start()
		}
		s.c.WaitRegistered(ids...)
		s.waitFullISR(waitLong)
		worstRecovery = max(worstRecovery, time.Since(killedAt))

		// The new leaders start from their checkpointed HW (Kafka's
		// replication-offset-checkpoint, written every 5 s), which may lag what every replica
		// kept; it reaches the lowest kept offset once the followers have fetched.
		cluster.WaitFor(t, readableWithin, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ends, err := s.c.EndOffsets(ctx, s.topic)
			if err != nil {
				return false, err.Error()
			}
			for p, off := range safe {
				if ends[p] < off {
					return false, fmt.Sprintf("partition %d: HW %d below %d, the lowest offset every replica kept", p, ends[p], off)
				}
			}
			return true, ""
		})
		// Settle this round: what was acknowledged before the power loss is either still
		// there, or was above every replica's kept data.
		recs, err := readAll(s.c, s.topic, topicPartitions, time.Now().Add(readableWithin))
		if err != nil {
			t.Fatalf("U: power loss %d: reading back: %v", round, err)
		}
		present := make(map[string]bool, len(recs))
		for _, r := range recs {
			present[r.Value] = true
		}
		for _, a := range acks {
			if present[a.Value] || s.mayLose[a.Value] || lostBelow[a.Value] {
				continue
			}
			if a.Offset >= safe[a.Partition] {
				s.mayLose[a.Value] = true
				lostAboveN++
				continue
			}
			keptBelowN++
			lostBelow[a.Value] = true
			t.Errorf("L: power loss %d: %q acknowledged at partition %d offset %d is gone, below offset %d that every replica kept",
				round, a.Value, a.Partition, a.Offset, safe[a.Partition])
		}
		s.all.waitAcks(t, -1, 300, waitLong, fmt.Sprintf("after power loss %d", round))
	}
	s.heal(fmt.Sprintf("%d power losses done", powerLossRounds))
	s.extra = append(s.extra, fmt.Sprintf("rounds=%d powerloss_lost=%d lost_below_kept=%d worst_recovery=%s seed=%d",
		powerLossRounds, lostAboveN, keptBelowN, fmtDur(worstRecovery), seed))
	s.finish()
}

// acksBefore returns the acknowledgements that arrived before at.
func (p *producer) acksBefore(at time.Time) []ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ack
	for _, a := range p.acks {
		if a.At.Before(at) {
			out = append(out, a)
		}
	}
	return out
}

// readRecoveryPoints parses a log dir's recovery-point-offset-checkpoint (Kafka's text
// format: version 0, the entry count, then "topic partition offset" lines;
// docs/kafka-facts.md) itself, keyed "topic-partition". A missing file is no entries.
func readRecoveryPoints(logDir string) (map[string]int64, error) {
	f, err := os.Open(filepath.Join(logDir, "recovery-point-offset-checkpoint"))
	if os.IsNotExist(err) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if line < 2 || len(fs) != 3 {
			continue
		}
		off, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("recovery-point-offset-checkpoint: %q: %v", sc.Text(), err)
		}
		out[fs[0]+"-"+fs[1]] = off
	}
	return out, sc.Err()
}

// powerCut drops what a power loss may drop from one partition's log: it keeps every batch
// below recoveryPoint, then a random number of the batches after it, then a random prefix
// (possibly none) of the next batch (a torn write), and empties every later segment file (a
// file whose directory entry reached the disk but none of its data). It returns the offset the
// log now ends at (the first offset lost).
func powerCut(t *testing.T, rng *rand.Rand, dir string, recoveryPoint int64) int64 {
	t.Helper()
	bs, err := cluster.ReadPartitionBatches(dir)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	first := len(bs) // the first batch at or above the recovery point
	for i, b := range bs {
		if b.BaseOffset >= recoveryPoint {
			first = i
			break
		}
	}
	k := first + rng.Intn(len(bs)-first+1) // batches [0, k) stay whole
	end := recoveryPoint
	if k > 0 {
		end = bs[k-1].LastOffset() + 1
	}
	bases, err := cluster.SegmentBaseOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cutSeg, cutPos int64 = -1, 0
	if k < len(bs) {
		b := bs[k]
		cutSeg, cutPos = b.Segment, b.Position+rng.Int63n(12+int64(b.Length))
	} else if len(bs) > 0 {
		last := bs[len(bs)-1]
		cutSeg, cutPos = last.Segment, last.Position+12+int64(last.Length)
	}
	for _, base := range bases {
		name := filepath.Join(dir, fmt.Sprintf("%020d.log", base))
		switch {
		case cutSeg < 0 || base < cutSeg:
			continue
		case base == cutSeg:
			err = os.Truncate(name, cutPos)
		default:
			err = os.Truncate(name, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: recovery point %d, kept %d of %d batches, log ends at %d (segment %d cut at byte %d)",
		filepath.Base(dir), recoveryPoint, k, len(bs), end, cutSeg, cutPos)
	return end
}

// diskFullSize is the tmpfs of row 19: room for the topic's first records, then full.
const diskFullSize = 64 << 20

// Row 19, disk full: broker 1's log dir is a tmpfs of 64 MiB, broker 1 leads partition 0
// (and follows 1 and 2); under the acks=all load the tmpfs is filled to its last 64 KiB. The
// write that fails takes the log dir offline (KIP-112); with no other dir the broker shuts
// down, and the controller moves partition 0 to another ISR member within the session
// timeout + 10 s of the fill. Nothing acknowledged is lost (L); after the space is freed and the
// broker restarted, no partial batch is left in its logs (R reads every segment) and it
// rejoins every ISR.
func TestFault19_DiskFull(t *testing.T) {
	fullMatrix(t)
	requireMount(t)
	var mnt string
	s := startScenarioWith(t, "19-disk-full", scenarioOptions{
		Assignment:  map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}},
		BeforeTopic: func(c *cluster.Cluster) { mnt = moveLogDirOntoTmpfs(t, c, 1, diskFullSize) },
	})
	processKeepOutputs(s)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the disk fills")
	if l := s.leader(0); l != 1 {
		t.Fatalf("partition 0 is led by %d, want broker 1 (its preferred leader)", l)
	}
	filler := filepath.Join(mnt, "filler")
	s.fault(1, "fill broker 1's log dir (tmpfs) to its last 64 KiB")
	if err := fillUntil(filler, 64<<10); err != nil {
		t.Fatal(err)
	}
	st := s.c.ZK.WaitPartitionState(s.topic, 0, sessionTimeout+10*time.Second, func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != 1, "want a leader other than broker 1, whose disk is full"
	})
	moved := time.Since(s.faultAt)
	t.Logf("partition 0 led by %d (leader_epoch %d, ISR %v) %v after the fill", st.Leader, st.LeaderEpoch, st.ISR, moved.Round(time.Millisecond))
	code, exited := s.c.Broker(1).WaitExit(waitLong)
	out := strings.ToLower(s.c.Broker(1).OutputSince())
	switch {
	case !exited:
		t.Errorf("broker 1 (one log dir, now full) still running %v after the fill: a broker with no online log dir shuts down (KIP-112)", waitLong)
		s.c.Broker(1).Kill()
	case !strings.Contains(out, "offline"):
		t.Errorf("broker 1 exited (code %d) without logging its log dir going offline:\n%s", code, s.c.Broker(1).Tail(30))
	default:
		t.Logf("broker 1 exited with code %d after its only log dir went offline", code)
	}
	s.all.waitAcks(t, 0, 300, waitLong, "on partition 0 after the disk filled")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s.c.Broker(1).Start()
	s.c.WaitRegistered(1)
	s.heal("space freed, broker 1 restarted")
	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after broker 1 rejoined")
	s.extra = append(s.extra, "leader_moved="+fmtDur(moved))
	s.finish()
}

// requireMount skips (fails, with CI set) when this process cannot mount a tmpfs: row 19
// needs root.
func requireMount(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("row 19 needs to mount a tmpfs (root): %v: %s", err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	_ = exec.Command("umount", dir).Run()
}

// moveLogDirOntoTmpfs stops broker id, mounts a tmpfs of size bytes over its log dir with
// the dir's contents copied onto it, and starts the broker again (unmounted in cleanup). The
// log dir becomes a symbolic link to a folder of the tmpfs; it returns the mount point.
func moveLogDirOntoTmpfs(t *testing.T, c *cluster.Cluster, id int32, size int) string {
	t.Helper()
	if code := c.Broker(id).Terminate(); code != 0 {
		t.Fatalf("broker %d exited with code %d", id, code)
	}
	dir := c.Broker(id).LogDir
	saved := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
	}
	run("cp", "-a", dir+"/.", saved)
	// The tmpfs holds the log dir and the filler beside it: mount it one level up.
	mnt := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	run("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", mnt)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	if err := os.MkdirAll(filepath.Join(mnt, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("cp", "-a", saved+"/.", filepath.Join(mnt, "logs"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(mnt, "logs"), dir); err != nil {
		t.Fatal(err)
	}
	c.Broker(id).Start()
	c.WaitRegistered(id)
	t.Logf("broker %d: log dir %s now on a tmpfs of %d MiB", id, dir, size>>20)
	return mnt
}

// fillUntil writes zeros into path until the file system holding it has at most leave bytes
// free (or the write fails with ENOSPC).
func fillUntil(path string, leave int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
			return err
		}
		free := int64(st.Bavail) * st.Bsize
		if free <= leave {
			return nil
		}
		n := min(int64(len(buf)), free-leave)
		if _, err := f.Write(buf[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}
