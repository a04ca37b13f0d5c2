package txncoord

import (
	"testing"
)

// Kafka 2.4.1's validPreviousStates, written as a matrix: row = from, column = to, in the order
// Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
// PrepareEpochFence.
func TestValidTransitions(t *testing.T) {
	states := []TxnState{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence}
	valid := []string{
		//       E O PC PA CC CA D F
		"Empty:  1 1 0  0  0  0  1 0",
		"Ong:    0 1 1  1  0  0  0 1",
		"PC:     0 0 0  0  1  0  0 0",
		"PA:     0 0 0  0  0  1  0 0",
		"CC:     1 1 0  0  0  0  1 0",
		"CA:     1 1 0  0  0  0  1 0",
		"Dead:   0 0 0  0  0  0  0 0",
		"Fence:  0 0 0  1  0  0  0 0",
	}
	for i, row := range valid {
		var bits []bool
		for _, ch := range row {
			if ch == '0' || ch == '1' {
				bits = append(bits, ch == '1')
			}
		}
		for j, want := range bits {
			if got := isValidTransition(states[i], states[j]); got != want {
				t.Errorf("%s -> %s: valid %v, want %v", states[i], states[j], got, want)
			}
		}
	}
}

func TestPrepareAndComplete(t *testing.T) {
	m := newTxnMetadata("x", 1, noProducerEpoch, 1000, Empty, 10)
	tr, err := m.prepareIncrementProducerEpoch(2000, 20)
	if err != nil || tr.producerEpoch != 0 || tr.state != Empty || tr.start != -1 || tr.timeoutMs != 2000 {
		t.Fatalf("increment from -1: %+v %v", tr, err)
	}
	if _, err := m.prepareAddPartitions(map[topicPartition]struct{}{tp0: {}}, 30); err == nil {
		t.Fatal("a second transition prepared while one is pending")
	}
	if err := m.completeTransitionTo(tr); err != nil {
		t.Fatal(err)
	}
	if m.producerEpoch != 0 || m.timeoutMs != 2000 || m.lastUpdate != 20 || m.hasPending {
		t.Fatalf("after Empty: %+v", m)
	}
	// AddPartitions starts the transaction; a second add keeps the start.
	tr, _ = m.prepareAddPartitions(map[topicPartition]struct{}{tp0: {}}, 30)
	if err := m.completeTransitionTo(tr); err != nil || m.start != 30 || m.state != Ongoing {
		t.Fatalf("add: %v %+v", err, m)
	}
	tr, _ = m.prepareAddPartitions(map[topicPartition]struct{}{tp1: {}}, 40)
	if err := m.completeTransitionTo(tr); err != nil || m.start != 30 || len(m.partitions) != 2 {
		t.Fatalf("second add: %v %+v", err, m)
	}
	// Completion's sanity checks refuse a transit that does not fit.
	bad := []struct {
		name string
		prep func() (transit, error)
		edit func(*transit)
	}{
		{"Prepare with other partitions", func() (transit, error) { return m.prepareAbortOrCommit(PrepareCommit, 50) },
			func(t *transit) { t.partitions = map[topicPartition]struct{}{tp0: {}} }},
		{"Prepare with another epoch", func() (transit, error) { return m.prepareAbortOrCommit(PrepareCommit, 50) },
			func(t *transit) { t.producerEpoch++ }},
		{"Ongoing dropping a partition", func() (transit, error) { return m.prepareAddPartitions(nil, 50) },
			func(t *transit) { delete(t.partitions, tp1) }},
		{"another pending state", func() (transit, error) { return m.prepareAbortOrCommit(PrepareAbort, 50) },
			func(t *transit) { t.state = PrepareCommit }},
	}
	for _, b := range bad {
		tr, err := b.prep()
		if err != nil {
			t.Fatalf("%s: prepare: %v", b.name, err)
		}
		b.edit(&tr)
		if err := m.completeTransitionTo(tr); err == nil {
			t.Fatalf("%s: completed", b.name)
		}
		m.hasPending = false
	}
	tr, _ = m.prepareAbortOrCommit(PrepareCommit, 60)
	if err := m.completeTransitionTo(tr); err != nil || m.state != PrepareCommit {
		t.Fatalf("prepare commit: %v", err)
	}
	tr, _ = m.prepareComplete(70)
	if tr.state != CompleteCommit {
		t.Fatalf("complete after PrepareCommit: %s", tr.state)
	}
	if err := m.completeTransitionTo(tr); err != nil || len(m.partitions) != 0 || m.state != CompleteCommit || m.start != 30 {
		t.Fatalf("complete: %v %+v", err, m)
	}
	// Dead and PrepareEpochFence are never completed.
	for _, prep := range []func() (transit, error){m.prepareDead} {
		tr, err := prep()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.completeTransitionTo(tr); err == nil {
			t.Fatalf("%s completed", tr.state)
		}
		m.hasPending = false
	}
	// A bump by two is refused.
	tr, _ = m.prepareIncrementProducerEpoch(2000, 80)
	tr.producerEpoch++
	if err := m.completeTransitionTo(tr); err == nil {
		t.Fatal("epoch bump by two completed")
	}
}
