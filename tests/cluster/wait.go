package cluster

import (
	"testing"
	"time"
)

// pollInterval is how often conditions are re-checked while waiting.
const pollInterval = 50 * time.Millisecond

// Poll re-checks cond until it reports true or timeout passes. It returns whether cond held and the
// last message cond gave (why it did not hold yet).
func Poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, msg := cond()
		if ok {
			return true, msg
		}
		if !time.Now().Before(deadline) {
			return false, msg
		}
		<-tick.C
	}
}

// WaitFor polls cond until it holds, failing the test with cond's last message after timeout.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	if ok, msg := Poll(timeout, cond); !ok {
		t.Fatalf("timed out after %v: %s", timeout, msg)
	}
}
