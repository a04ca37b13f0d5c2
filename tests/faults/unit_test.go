package faults

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// The checker must be able to fail: synthetic histories with each kind of violation.
func TestChecker_FindsLostDuplicateAndConflictingOffsets(t *testing.T) {
	now := time.Now()
	acks := []ack{
		{Value: "s-all-00000000", Partition: 0, Offset: 0, At: now},
		{Value: "s-all-00000001", Partition: 1, Offset: 0, At: now},
		{Value: "s-all-00000002", Partition: 0, Offset: 1, At: now}, // lost
		{Value: "s-all-00000003", Partition: 1, Offset: 1, At: now}, // final read has it at 2
	}
	final := []readRec{
		{0, 0, "s-all-00000000"},
		{1, 0, "s-all-00000001"},
		{1, 1, "s-all-00000001"}, // duplicate
		{1, 2, "s-all-00000003"},
		{2, 0, "other-0"},
	}
	during := []readRec{{0, 0, "s-all-00000000"}, {2, 0, "s-all-00000009"}} // p2/0 changed
	a := analyse("s-all", acks, final, during, true)
	if a.Acked != 4 || a.Lost != 1 || a.Duplicates != 1 || a.Conflicts != 2 {
		t.Errorf("analysis %+v, want acked 4 lost 1 duplicates 1 conflicts 2", a)
	}
	b := analyse("s-all", acks, final, during, false)
	if b.Lost != 1 || b.Duplicates != 1 || b.Conflicts != 0 {
		t.Errorf("acks=1 analysis %+v, want lost 1 duplicates 1 and no offset checks", b)
	}

	clean := analyse("s-all", acks[:2], final[:2], final[:2], true)
	if clean.Lost != 0 || clean.Duplicates != 0 || clean.Conflicts != 0 || len(clean.Examples) != 0 {
		t.Errorf("clean history judged %+v", clean)
	}
}

func TestChecker_EpochsAndGaps(t *testing.T) {
	st := func(leader, epoch, cepoch int32) stateObs {
		return stateObs{State: cluster.PartitionState{Leader: leader, LeaderEpoch: epoch, ControllerEpoch: cepoch}}
	}
	if bad := epochViolations(0, []stateObs{st(1, 0, 1), st(1, 0, 1), st(2, 1, 1), st(2, 1, 2)}); len(bad) != 0 {
		t.Errorf("rising epochs judged bad: %v", bad)
	}
	if bad := epochViolations(0, []stateObs{st(1, 3, 1), st(2, 2, 1)}); len(bad) != 1 {
		t.Errorf("leader_epoch going back: %v", bad)
	}
	if bad := epochViolations(0, []stateObs{st(1, 3, 1), st(2, 3, 1)}); len(bad) != 1 {
		t.Errorf("new leader with the same leader_epoch: %v", bad)
	}
	if bad := epochViolations(0, []stateObs{st(1, 3, 2), st(1, 3, 1)}); len(bad) != 1 {
		t.Errorf("controller_epoch going back: %v", bad)
	}

	t0 := time.Now()
	acks := []ack{{Partition: 0, At: t0}, {Partition: 1, At: t0.Add(time.Second)}, {Partition: 0, At: t0.Add(3 * time.Second)}, {Partition: 1, At: t0.Add(2 * time.Second)}}
	if g := longestGap(acks); g != 3*time.Second {
		t.Errorf("longest gap %v, want 3s", g)
	}
	line := result{Scenario: "x", Acked: 5, NewLeader: -1, Unavailable: 1234 * time.Millisecond, Extra: []string{"a=1"}}.Line()
	if want := "scenario=x acked=5 lost=0 duplicates=0 divergent=0 new_leader=- unavailable=1.23s a=1"; line != want {
		t.Errorf("line %q, want %q", line, want)
	}
}

// The firewall cuts exactly one loopback link and removes its rules again.
func TestFirewall_DropsOneLoopbackLinkAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("changes iptables: skipped with -short")
	}
	f := requireFirewall(t)
	a, b, other := cluster.OwnAddress(201), cluster.OwnAddress(202), cluster.OwnAddress(203)
	ln, err := net.Listen("tcp", net.JoinHostPort(b, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := func(from string) error {
		d := net.Dialer{Timeout: 700 * time.Millisecond, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(a); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	f.Cut(a, b)
	rules, err := f.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 {
		t.Errorf("%d tagged rules after one cut, want 2: %v", len(rules), rules)
	}
	if err := dial(a); err == nil {
		t.Errorf("%s reached %s through the cut", a, b)
	}
	if err := dial(other); err != nil {
		t.Errorf("%s could not reach %s, only %s was cut off: %v", other, b, a, err)
	}
	f.Heal()
	if rules, err := f.Rules(); err != nil || len(rules) != 0 {
		t.Errorf("after Heal: tagged rules %v (%v)", rules, err)
	}
	if err := dial(a); err != nil {
		t.Errorf("after Heal: %v", err)
	}
	if ip := cluster.OwnAddress(1); ip != "127.0.0.11" {
		t.Errorf("OwnAddress(1) = %s", ip)
	}
	if !strings.HasPrefix(firewallTag(), "isrbroker-faults-") {
		t.Errorf("tag %q", firewallTag())
	}
}

// Checkers S and X on planted violations.
func TestChecker_SequenceOrderAndRefusedWrites(t *testing.T) {
	final := []readRec{
		{0, 0, "p-all-00000000"}, {0, 1, "p-all-00000003"}, {0, 2, "p-all-00000006"},
		{1, 0, "p-all-00000001"}, {1, 1, "p-all-00000004"},
		{1, 2, "other-00000000"}, // another producer's value does not count
		{2, 5, "p-all-00000002"},
	}
	if bad := sequenceViolations("p-all", final); len(bad) != 0 {
		t.Errorf("rising sequences judged bad: %v", bad)
	}
	// A retry of sequence 3 appended after sequence 6 on partition 0 (offsets 1 and 3 hold
	// the same value: D counts it; S counts the order).
	planted := append(append([]readRec(nil), final...), readRec{0, 3, "p-all-00000003"})
	if bad := sequenceViolations("p-all", planted); len(bad) != 1 || !strings.Contains(bad[0], "sequence 3 at offset 3 after sequence 6") {
		t.Errorf("sequence going back at partition 0 offset 3: %v", bad)
	}
	// Read out of offset order: the checker sorts by offset before judging.
	shuffled := []readRec{{0, 2, "p-all-00000006"}, {0, 0, "p-all-00000000"}, {0, 1, "p-all-00000003"}}
	if bad := sequenceViolations("p-all", shuffled); len(bad) != 0 {
		t.Errorf("shuffled but rising judged bad: %v", bad)
	}

	if bad := refusedPresent([]string{"refused-crc-1", "refused-count-1"}, final); len(bad) != 0 {
		t.Errorf("no refused value in the log, judged %v", bad)
	}
	withRefused := append(append([]readRec(nil), final...), readRec{2, 6, "refused-count-1"})
	if bad := refusedPresent([]string{"refused-crc-1", "refused-count-1"}, withRefused); len(bad) != 1 || !strings.Contains(bad[0], "partition 2 offset 6") {
		t.Errorf("refused value at partition 2 offset 6: %v", bad)
	}
}
