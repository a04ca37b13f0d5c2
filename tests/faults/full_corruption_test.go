package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Row 20, corruption below the recovery point on the leader (issue 28; docs/design.md,
// "Corruption below the recovery point"): under the acks=all load, stop the leader of
// partition 0 cleanly and damage its files below the recovery point, then restart it; twice.
// Round 1: a byte flipped inside a batch of its oldest segment and the .index of the next
// segment deleted, checkpoints intact, so the flipped segment loads unverified: the broker's
// check before serving (or its scrubber) must find the bad batch, serve none of it, lower the
// recovery point and take its log dir offline, which shuts it down (its only dir); restarted,
// it recovers the segment, truncates at the bad batch and re-fetches from the new leader.
// Round 2: another flipped byte, a deleted .index and a truncated
// recovery-point-offset-checkpoint: every segment is recovered at load. Pass: no batch with a
// bad CRC reaches a consumer (franz-go checks each batch's CRC) or lies in any replica's log at
// the end (checked directly, cluster.ReadPartitionBatches), and every acknowledged record is
// still readable (L), also through each replica made leader in turn, with the replicas
// identical below the HW (R).
func TestFault20_CorruptBelowRecoveryPoint(t *testing.T) {
	fullMatrix(t)
	s := startScenarioWith(t, "20-corrupt-below-recovery-point", scenarioOptions{
		TopicConfigs: map[string]string{"segment.bytes": "16384"},
	})
	s.all.waitAcks(t, 0, 1500, time.Minute, "before the fault")

	for round := 1; round <= 2; round++ {
		victim := s.leader(0)
		dir := s.c.Broker(victim).PartitionDir(s.topic, 0)
		cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
			bases, err := cluster.SegmentBaseOffsets(dir)
			return err == nil && len(bases) >= 4, fmt.Sprintf("broker %d partition 0: segments %v (%v), want 4", victim, bases, err)
		})
		s.fault(victim, fmt.Sprintf("round %d: SIGTERM the leader of partition 0, corrupt it below its recovery point", round))
		s.c.Broker(victim).Terminate()
		bases, err := cluster.SegmentBaseOffsets(dir)
		if err != nil || len(bases) < 3 {
			t.Fatalf("broker %d partition 0: segments %v (%v); the row needs at least 3", victim, bases, err)
		}
		flipInBatch(t, dir, bases[0])
		index := filepath.Join(dir, fmt.Sprintf("%020d.index", bases[1]))
		if err := os.Remove(index); err != nil {
			t.Fatalf("deleting %s: %v", index, err)
		}
		if round == 2 {
			cp := filepath.Join(s.c.Broker(victim).LogDir, "recovery-point-offset-checkpoint")
			fi, err := os.Stat(cp)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(cp, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}
		s.all.waitAcks(t, 0, 300, waitLong, "while the leader is down")
		s.c.Broker(victim).Start()
		if round == 1 {
			// The check before serving, or the scrubber, finds the bad batch and the broker
			// takes its one log dir offline, so shuts down.
			ok, msg := cluster.Poll(2*time.Minute, func() (bool, string) {
				return strings.Contains(s.c.Broker(victim).OutputSince(), "corrupt batch below the recovery point"), "no corruption reported yet"
			})
			if !ok {
				t.Fatalf("broker %d never reported the corrupt batch: %s\n%s", victim, msg, s.c.Broker(victim).Tail(40))
			}
			if _, exited := s.c.Broker(victim).WaitExit(time.Minute); !exited {
				t.Errorf("broker %d kept running with its only log dir offline", victim)
				s.c.Broker(victim).Kill()
			}
			s.c.Broker(victim).Start()
		}
		s.c.WaitRegistered(victim)
		s.heal(fmt.Sprintf("round %d: broker %d restarted on its corrupted log", round, victim))
		for _, line := range strings.Split(s.c.Broker(victim).Output(), "\n") {
			if strings.Contains(line, "level=error") || strings.Contains(line, "level=warning") && strings.Contains(line, "component=log") {
				t.Logf("broker %d: %.400s", victim, line)
			}
		}
		if out := strings.ToLower(s.c.Broker(victim).OutputSince()); !strings.Contains(out, "truncat") {
			t.Errorf("round %d: broker %d's log does not mention truncating the corrupt segment:\n%s", round, victim, s.c.Broker(victim).Tail(30))
		}
		s.waitFullISR(waitLong)
		s.all.waitAcks(t, 0, 300, waitLong, "after the broker rejoined")
	}
	s.finish() // R reads every replica's segments and checks every batch's CRC
	for _, id := range s.assignment[0] {
		if _, err := cluster.ReadPartitionBatches(s.c.Broker(id).PartitionDir(s.topic, 0)); err != nil {
			t.Errorf("broker %d partition 0: %v", id, err)
		}
	}
	readFromEveryReplica(t, s)
}

// readFromEveryReplica makes each replica of partition 0 its leader in turn (the replica first
// in the assignment, then a preferred election) and consumes the partition from the start
// through it: every acknowledged record is there, and franz-go refuses any batch whose CRC does
// not match (the read then fails).
func readFromEveryReplica(t *testing.T, s *scenario) {
	t.Helper()
	acked := map[string]bool{}
	s.all.mu.Lock()
	for _, a := range s.all.acks {
		if a.Partition == 0 {
			acked[a.Value] = true
		}
	}
	s.all.mu.Unlock()
	adm := s.c.Admin()
	for _, r := range s.assignment[0] {
		order := []int32{r}
		for _, o := range s.assignment[0] {
			if o != r {
				order = append(order, o)
			}
		}
		req := kadm.AlterPartitionAssignmentsReq{}
		req.Assign(s.topic, 0, order)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := adm.AlterPartitionAssignments(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("reordering partition 0's replicas to %v: %v", order, err)
		}
		ok, msg := cluster.Poll(waitLong, func() (bool, string) {
			st, err := s.c.ZK.PartitionState(s.topic, 0)
			if err == nil && st.Leader == r {
				return true, ""
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, eerr := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{s.topic: {0: {}}})
			return false, fmt.Sprintf("leader %d (%v), election: %v", st.Leader, err, eerr)
		})
		if !ok {
			t.Errorf("broker %d never led partition 0: %s", r, msg)
			continue
		}
		// A new leader's HW may trail its log by one fetch round of its followers (Kafka's too),
		// and a consumer reads only up to it: read again until every acknowledged record is
		// there or readableWithin has passed.
		missing, deadline := 0, time.Now().Add(readableWithin)
		var rerr error
		for {
			recs, err := readAll(s.c, s.topic, topicPartitions, deadline)
			if rerr = err; err == nil {
				seen := map[string]bool{}
				for _, rec := range recs {
					if rec.Partition == 0 {
						seen[rec.Value] = true
					}
				}
				missing = 0
				for v := range acked {
					if !seen[v] {
						missing++
					}
				}
			}
			if (err == nil && missing == 0) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond) // back-off between two reads from the start
		}
		if rerr != nil {
			t.Errorf("reading through leader %d: %v", r, rerr)
			continue
		}
		if missing > 0 {
			t.Errorf("through leader %d: %d of %d acknowledged records of partition 0 missing", r, missing, len(acked))
		} else {
			t.Logf("through leader %d: all %d acknowledged records of partition 0 read", r, len(acked))
		}
	}
}

// flipInBatch flips one byte inside the records of the middle batch of a segment (past its
// header, so the batch still parses and only its CRC is wrong).
func flipInBatch(t *testing.T, dir string, base int64) {
	t.Helper()
	bs, err := cluster.ReadPartitionBatches(dir)
	if err != nil {
		t.Fatal(err)
	}
	var in []cluster.SegmentBatch
	for _, b := range bs {
		if b.Segment == base {
			in = append(in, b)
		}
	}
	if len(in) == 0 {
		t.Fatalf("%s: no batch in segment %d", dir, base)
	}
	b := in[len(in)/2]
	path := filepath.Join(dir, fmt.Sprintf("%020d.log", base))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := b.Position + 12 + int64(b.Length) - 1 // the batch's last byte: inside its last record
	one := make([]byte, 1)
	if _, err := f.ReadAt(one, at); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0x20
	if _, err := f.WriteAt(one, at); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: flipped byte %d of the batch at offset %d (segment %d)", filepath.Base(dir), at, b.BaseOffset, base)
}
