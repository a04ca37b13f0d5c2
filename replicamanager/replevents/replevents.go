// Package replevents is the broker's bounded journal of replication events for the live
// replication page (docs/replication-page.md): ISR shrinks and expansions (S10, K4), a replica
// becoming leader or follower with its leader epoch (S9, S14), follower log truncations with
// their offsets (K1, S19, S20) and controller changes (S9). The replica manager and the
// controller (its elected/resigned hook, wired by main to broker/replview's Page) record into
// one Recorder; the page reads it. It imports nothing of the repository, so every layer may
// record.
package replevents

import (
	"sync"
	"time"
)

// Kind names an event.
type Kind string

// The event kinds.
const (
	IsrShrink          Kind = "IsrShrink"          // the leader removed followers from the ISR (S10)
	IsrExpand          Kind = "IsrExpand"          // the leader added a caught-up follower to the ISR (K4)
	BecomeLeader       Kind = "BecomeLeader"       // LeaderAndIsr made this broker leader at LeaderEpoch (S9)
	BecomeFollower     Kind = "BecomeFollower"     // LeaderAndIsr made this broker follower of Leader at LeaderEpoch (S14)
	Truncate           Kind = "Truncate"           // the follower truncated its log from FromOffset to ToOffset (K1, S19)
	TruncateFully      Kind = "TruncateFully"      // the follower emptied its log and restarted at ToOffset (S20)
	ControllerElected  Kind = "ControllerElected"  // this broker won the controller election at ControllerEpoch (S9)
	ControllerResigned Kind = "ControllerResigned" // this broker stopped being the controller
)

// Event is one replication event. Unused fields are omitted from JSON; Partition is -1 for
// events of no partition.
type Event struct {
	Seq             uint64  `json:"seq"`    // 1, 2, ... per broker process
	TimeMs          int64   `json:"timeMs"` // Unix milliseconds
	Broker          int32   `json:"broker"` // the broker that recorded it
	Kind            Kind    `json:"kind"`
	Topic           string  `json:"topic,omitempty"`
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader,omitempty"`
	LeaderEpoch     int32   `json:"leaderEpoch,omitempty"`
	ISR             []int32 `json:"isr,omitempty"`
	Changed         []int32 `json:"changed,omitempty"` // replicas removed from or added to the ISR
	FromOffset      int64   `json:"fromOffset,omitempty"`
	ToOffset        int64   `json:"toOffset,omitempty"`
	HighWatermark   int64   `json:"highWatermark,omitempty"`
	Controller      int32   `json:"controller,omitempty"` // the controller's broker id
	ControllerEpoch int32   `json:"controllerEpoch,omitempty"`
}

// DefaultCapacity is the number of events a Recorder keeps.
const DefaultCapacity = 512

// Recorder keeps the last events in a ring. A nil *Recorder records nothing. Safe for
// concurrent use.
type Recorder struct {
	broker int32
	now    func() time.Time

	mu   sync.Mutex
	ring []Event
	next int    // index of the next write
	full bool   // the ring has wrapped
	seq  uint64 // last sequence number given
}

// New returns a recorder for brokerID keeping capacity events (DefaultCapacity when <= 0).
func New(brokerID int32, capacity int) *Recorder {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Recorder{broker: brokerID, now: time.Now, ring: make([]Event, capacity)}
}

// Record stamps e with the next sequence number, the time and the broker id, and keeps it,
// dropping the oldest event when the ring is full.
func (r *Recorder) Record(e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq = r.seq
	e.TimeMs = r.now().UnixMilli()
	e.Broker = r.broker
	r.ring[r.next] = e
	r.next++
	if r.next == len(r.ring) {
		r.next, r.full = 0, true
	}
}

// Events returns the kept events with a sequence number greater than after, oldest first.
func (r *Recorder) Events(after uint64) []Event {
	if r == nil {
		return []Event{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.ring))
	add := func(es []Event) {
		for _, e := range es {
			if e.Seq > after {
				out = append(out, e)
			}
		}
	}
	if r.full {
		add(r.ring[r.next:])
	}
	add(r.ring[:r.next])
	return out
}

// Partitionless is the Partition of events that concern no partition.
const Partitionless int32 = -1
