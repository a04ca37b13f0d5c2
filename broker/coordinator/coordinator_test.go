package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestHandlersRegisterLookupKeys(t *testing.T) {
	var hs Handlers[func() string]
	hs.Register(kmsg.Heartbeat, 0, 4, func() string { return "hb" })
	hs.Register(kmsg.JoinGroup, 0, 6, func() string { return "join" })
	if fn, ok := hs.Lookup(int16(kmsg.Heartbeat)); !ok || fn() != "hb" {
		t.Fatal("Heartbeat's handler not found")
	}
	if _, ok := hs.Lookup(int16(kmsg.Produce)); ok {
		t.Fatal("an unregistered key has a handler")
	}
	keys := hs.Keys()
	if len(keys) != 2 || keys[0] != (KeyRange{kmsg.JoinGroup, 0, 6}) || keys[1] != (KeyRange{kmsg.Heartbeat, 0, 4}) {
		t.Fatalf("Keys() = %v, want JoinGroup (11) then Heartbeat (12)", keys)
	}
}
