package replevents

import "testing"

// The journal keeps the last capacity events in order, numbered from 1, and Events(after)
// returns only newer ones; a nil recorder records nothing.
func TestRecorderRing(t *testing.T) {
	r := New(7, 3)
	for i := 0; i < 5; i++ {
		r.Record(Event{Kind: IsrShrink, Partition: int32(i)})
	}
	got := r.Events(0)
	if len(got) != 3 || got[0].Seq != 3 || got[2].Seq != 5 || got[0].Partition != 2 || got[2].Broker != 7 || got[2].TimeMs == 0 {
		t.Fatalf("events %+v, want seq 3..5 of broker 7", got)
	}
	if got := r.Events(4); len(got) != 1 || got[0].Seq != 5 {
		t.Fatalf("events after 4: %+v", got)
	}
	var nilRec *Recorder
	nilRec.Record(Event{Kind: Truncate})
	if got := nilRec.Events(0); len(got) != 0 {
		t.Fatalf("nil recorder events %+v", got)
	}
}
