// Package coordinator holds what Kafka's two coordinators share, the group coordinator
// (broker/groupcoord) and the transaction coordinator (broker/txncoord): the clock and timers
// they schedule with (tests inject a fake one), the registry of the API keys each serves
// with its handlers, and the authorization check their handlers make. It is a leaf: it imports
// only the ACL model (broker/security/acl).
package coordinator

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// Clock is a coordinator's time source. Tests inject a fake whose timers fire when the test
// advances it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f on its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// KeyRange is one served API key and its version range.
type KeyRange struct {
	Key      kmsg.Key
	Min, Max int16
}

// Handlers maps the API keys a coordinator serves to their handlers (H: the coordinator's
// handler function type). Filled by the handler files' init functions, read afterwards.
type Handlers[H any] struct {
	m map[int16]handler[H]
}

type handler[H any] struct {
	r  KeyRange
	fn H
}

// Register serves key at versions min..max with fn.
func (hs *Handlers[H]) Register(key kmsg.Key, min, max int16, fn H) {
	if hs.m == nil {
		hs.m = map[int16]handler[H]{}
	}
	hs.m[int16(key)] = handler[H]{r: KeyRange{Key: key, Min: min, Max: max}, fn: fn}
}

// Lookup returns key's handler.
func (hs *Handlers[H]) Lookup(key int16) (H, bool) {
	h, ok := hs.m[key]
	return h.fn, ok
}

// Keys lists the served keys and versions, by key.
func (hs *Handlers[H]) Keys() []KeyRange {
	out := make([]KeyRange, 0, len(hs.m))
	for _, h := range hs.m {
		out = append(out, h.r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Authorizer decides an operation of a request's principal on a resource (the broker's ACL
// authorizer; docs/acls.md). A nil Authorizer is no authorizer: everything is allowed.
type Authorizer func(op acl.Operation, typ acl.ResourceType, name string) bool

// Allows reports whether op on typ:name is allowed.
func (a Authorizer) Allows(op acl.Operation, typ acl.ResourceType, name string) bool {
	return a == nil || a(op, typ, name)
}
