package replicamanager

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"
)

// docs/logging.md, "Rate-limited warnings": an acks=all produce rejected for an ISR below
// min.insync.replicas (K2) is answered NOT_ENOUGH_REPLICAS every time but logged once per 10 s
// per partition; the next line after the interval counts the dropped ones.
func TestK2_MinIsrRejectionWarningIsRateLimited(t *testing.T) {
	e := newEnv(t, 1, 2)
	hook := test.NewLocal(e.rm.log.Logger)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2, 3}, []int32{1})
	const msg = "rejecting acks=all produce: ISR below min.insync.replicas"
	count := func() (n int, last map[string]any) {
		for _, en := range hook.AllEntries() {
			if en.Message == msg {
				n++
				last = en.Data
			}
		}
		return n, last
	}
	for i := 0; i < 5; i++ {
		if r := waitResult(t, e.produce(t, -1, 1, time.Second), time.Second); r.ErrorCode != kerr.NotEnoughReplicas.Code {
			t.Fatalf("produce %d: error %d, want NOT_ENOUGH_REPLICAS", i, r.ErrorCode)
		}
	}
	if n, last := count(); n != 1 || last["topic"] != "t" || last["minIsr"] != 2 {
		t.Fatalf("5 rejections: %d lines (last %v), want 1 with topic and minIsr", n, last)
	}
	e.clock.Advance(10 * time.Second)
	waitResult(t, e.produce(t, -1, 1, time.Second), time.Second)
	if n, last := count(); n != 2 || last["suppressed"] != int64(4) {
		t.Fatalf("after 10 s: %d lines, last %v; want 2 lines, the second with suppressed=4", n, last)
	}
}
