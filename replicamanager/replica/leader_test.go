package replica

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestMain(m *testing.M) {
	Invariants = true
	os.Exit(m.Run())
}

// The core is pure: no locks, no logging, no I/O, no clock of its own.
func TestPackageIsPure(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			switch p := strings.Trim(imp.Path.Value, `"`); p {
			case "fmt", "slices", "time":
			default:
				t.Errorf("%s imports %s: the core imports only fmt, slices and time", f, p)
			}
		}
		for _, banned := range []string{"time.Now", "time.Since", "time.Sleep", "time.After"} {
			if strings.Contains(string(src), banned) {
				t.Errorf("%s uses %s: the core takes now from its caller", f, banned)
			}
		}
	}
}

// S5, S12 (Kafka's Replica.updateFetchState): lastCaughtUpTime follows the fetches that reach the leader's
// LEO now or as of the previous fetch.
func TestS5_S12_UpdateFollowerLastCaughtUp(t *testing.T) {
	l := NewLeader(1, 1, 0, []int32{1, 2}, []int32{1, 2}, 10*time.Second, t0)
	if !l.UpdateFollower(2, 0, 0, 100, t0.Add(time.Second)) {
		t.Fatal("assigned follower refused")
	}
	if p, _ := l.Progress(2); !p.LastCaughtUpTime.Equal(t0) || p.LEO != 0 {
		t.Fatalf("behind the LEO: %+v, want caught up at t0 (makeLeader) and LEO 0", p)
	}
	// reaches the LEO of its previous fetch (100) while 50 more arrived: caught up as of then
	l.UpdateFollower(2, 100, 0, 150, t0.Add(5*time.Second))
	if p, _ := l.Progress(2); !p.LastCaughtUpTime.Equal(t0.Add(time.Second)) {
		t.Fatalf("reached the previous fetch's LEO: %+v", p)
	}
	l.UpdateFollower(2, 150, 0, 150, t0.Add(9*time.Second))
	if p, _ := l.Progress(2); !p.LastCaughtUpTime.Equal(t0.Add(9 * time.Second)) {
		t.Fatalf("at the LEO: %+v", p)
	}
	if l.UpdateFollower(3, 0, 0, 0, t0) || l.UpdateFollower(1, 0, 0, 0, t0) {
		t.Fatal("a replica that is not an assigned follower was recorded")
	}
}

// S7, K4 (KAFKA-4485): the HW is the smallest LEO of the ISR and of followers caught up within
// the lag time; a pending ISR change's members count too; AdvanceHW never lowers it.
func TestS7_K4_HighWatermark(t *testing.T) {
	l := NewLeader(1, 1, 0, []int32{1, 2, 3}, []int32{1, 2}, 10*time.Second, t0)
	if hw := l.HighWatermark(10, t0); hw != -1 {
		t.Fatalf("ISR follower 2 has not fetched: HW candidate %d, want -1", hw)
	}
	l.UpdateFollower(2, 10, 0, 10, t0)
	l.UpdateFollower(3, 4, 0, 10, t0)
	if hw := l.HighWatermark(10, t0); hw != 10 {
		t.Fatalf("3 is neither in the ISR nor caught up: HW %d, want 10", hw)
	}
	l.UpdateFollower(3, 10, 0, 10, t0.Add(time.Second))
	if hw := l.HighWatermark(12, t0.Add(2*time.Second)); hw != 10 {
		t.Fatalf("caught-up 3 and ISR 2 at 10: HW %d, want 10", hw)
	}
	l.SetPending([]int32{1, 2, 3})
	l.UpdateFollower(3, 10, 0, 12, t0.Add(20*time.Second))
	l.UpdateFollower(2, 12, 0, 12, t0.Add(20*time.Second))
	if hw := l.HighWatermark(12, t0.Add(20*time.Second)); hw != 10 {
		t.Fatalf("pending member 3 at 10: HW %d, want 10", hw)
	}
	if hw, moved := AdvanceHW(10, 7); hw != 10 || moved {
		t.Fatal("the HW went down")
	}
}

// K4 (KAFKA-7128): a follower joins once its LEO reaches the HW and the epoch's start offset.
func TestK4_ExpandCandidate(t *testing.T) {
	l := NewLeader(1, 2, 5, []int32{1, 2, 3}, []int32{1, 2}, 10*time.Second, t0)
	l.UpdateFollower(3, 3, 0, 5, t0)
	if l.ExpandCandidate(3, 3) {
		t.Fatal("LEO 3 at the HW but below the epoch start 5 joined")
	}
	l.UpdateFollower(3, 5, 0, 5, t0)
	if !l.ExpandCandidate(3, 3) || l.ExpandCandidate(2, 0) {
		t.Fatal("expansion candidates wrong")
	}
	if got := l.With(3); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("With(3) = %v", got)
	}
}

// S10, S11: out of sync = behind the leader's LEO and not caught up for longer than the lag.
func TestS10_S11_OutOfSync(t *testing.T) {
	l := NewLeader(1, 1, 0, []int32{1, 2, 3}, []int32{1, 2, 3}, 10*time.Second, t0)
	l.UpdateFollower(2, 8, 0, 8, t0.Add(5*time.Second))
	if out := l.OutOfSync(8, t0.Add(11*time.Second)); !slices.Equal(out, []int32{3}) {
		t.Fatalf("OutOfSync = %v, want [3]", out)
	}
	if out := l.OutOfSync(9, t0.Add(16*time.Second)); !slices.Equal(out, []int32{2, 3}) {
		t.Fatalf("OutOfSync = %v, want [2 3]", out)
	}
	if got := l.Without([]int32{2, 3}); !slices.Equal(got, []int32{1}) {
		t.Fatalf("Without = %v", got)
	}
}

// A broken invariant panics while Invariants is set.
func TestInvariantsPanic(t *testing.T) {
	cases := map[string]func(){
		"leader not in the ISR": func() { NewLeader(1, 1, 0, []int32{1, 2}, []int32{2}, time.Second, t0) },
		"ISR outside the AR":    func() { NewLeader(1, 1, 0, []int32{1, 2}, []int32{1, 3}, time.Second, t0) },
		"pending without the leader": func() {
			NewLeader(1, 1, 0, []int32{1, 2}, []int32{1, 2}, time.Second, t0).SetPending([]int32{2})
		},
	}
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// ISRShared is the ISR without a copy, and a slice it handed out stays as it was when the ISR
// changes (ApplyISR and Update assign new slices): a partition view taken on a fetch may keep it.
func TestISRSharedStaysAsHandedOut(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLeader(1, 5, 0, []int32{1, 2, 3}, []int32{1, 2, 3}, 10*time.Second, now)
	shared := l.ISRShared()
	if !slices.Equal(shared, []int32{1, 2, 3}) || !slices.Equal(shared, l.ISR()) {
		t.Fatalf("ISRShared %v, ISR %v", shared, l.ISR())
	}
	l.ApplyISR([]int32{1, 3})
	l.Update([]int32{1, 2, 3}, []int32{3, 1})
	if !slices.Equal(shared, []int32{1, 2, 3}) {
		t.Fatalf("a slice handed out before the ISR changed now reads %v", shared)
	}
	if got := l.ISRShared(); !slices.Equal(got, []int32{3, 1}) {
		t.Fatalf("ISRShared after Update = %v, want [3 1]", got)
	}
}
