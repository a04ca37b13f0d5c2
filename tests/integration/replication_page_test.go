package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// pageState is what the replication page's DOM shows (its data-* attributes,
// docs/replication-page.md).
type pageState struct {
	Polls           int                      `json:"polls"`
	Controller      int32                    `json:"controller"`
	ControllerEpoch int32                    `json:"controllerEpoch"`
	Partitions      map[string]pagePartition `json:"partitions"`
	Brokers         map[string]bool          `json:"brokers"` // id -> reachable
	Events          []string                 `json:"events"`  // kinds, newest first
}

// pagePartition is a partition's card or, for a healthy partition not drawn open, its cell in
// its topic's strip (no replica rows).
type pagePartition struct {
	Leader          int32         `json:"leader"`
	LeaderEpoch     int32         `json:"leaderEpoch"`
	HW              int64         `json:"hw"`
	AR              []int32       `json:"ar"`
	ISR             []int32       `json:"isr"`
	OSR             []int32       `json:"osr"`
	LeaderReachable bool          `json:"leaderReachable"`
	Open            bool          `json:"open"` // drawn as a card
	Replicas        []pageReplica `json:"replicas"`
}

type pageReplica struct {
	Broker int32  `json:"broker"`
	Role   string `json:"role"`
	InISR  bool   `json:"inIsr"`
	LEO    int64  `json:"leo"`
	Behind bool   `json:"behind"` // the LEO bar ends before the HW mark
}

func (p pagePartition) replica(id int32) (pageReplica, bool) {
	for _, r := range p.Replicas {
		if r.Broker == id {
			return r, true
		}
	}
	return pageReplica{}, false
}

// readPageJS reads the page's DOM into a pageState.
const readPageJS = `(() => {
  const ids = (s) => s ? s.split(",").map(Number) : [];
  const c = document.getElementById("controller");
  const out = {polls: Number(document.body.dataset.polls || 0), controller: Number(c.dataset.controller === "" ? -1 : c.dataset.controller),
    controllerEpoch: Number(c.dataset.controllerEpoch || 0), partitions: {}, brokers: {}, events: []};
  const part = (p, open) => ({leader: Number(p.dataset.leader), leaderEpoch: Number(p.dataset.leaderEpoch),
      hw: Number(p.dataset.hw), ar: ids(p.dataset.replicas), isr: ids(p.dataset.isr), osr: ids(p.dataset.osr),
      leaderReachable: p.dataset.leaderReachable === "true", open: open,
      replicas: [...p.querySelectorAll(".replica")].map((r) => ({broker: Number(r.dataset.replica), role: r.dataset.role,
        inIsr: r.dataset.inIsr === "true", leo: Number(r.dataset.leo), behind: r.dataset.behindHw === "true"}))});
  for (const c of document.querySelectorAll(".pcell")) out.partitions[c.dataset.cell] = part(c, false);
  for (const p of document.querySelectorAll(".partition")) out.partitions[p.dataset.partition] = part(p, true);
  for (const b of document.querySelectorAll(".broker")) out.brokers[b.dataset.broker] = b.dataset.reachable === "true";
  for (const e of document.querySelectorAll("#events li[data-kind]")) out.events.push(e.dataset.kind);
  return JSON.stringify(out);
})()`

// chromiumPath finds Debian's chromium. Without it the test skips, except under CI, where it
// fails (scripts/install-deps.sh installs it).
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found on PATH (scripts/install-deps.sh installs Debian's chromium)")
	}
	t.Skip("chromium not found on PATH; run scripts/install-deps.sh")
	return ""
}

// screenshotDir resolves ISRBROKER_SCREENSHOT_DIR: a relative path is relative to the repository
// root (go test runs in the package directory), so ISRBROKER_SCREENSHOT_DIR=docs/images writes
// the README's image. The directory is created.
func screenshotDir(t *testing.T, d string) string {
	if !filepath.IsAbs(d) {
		root, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(root)
			if parent == root {
				t.Fatalf("ISRBROKER_SCREENSHOT_DIR=%s: no go.mod above the test's directory", d)
			}
			root = parent
		}
		d = filepath.Join(root, d)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// The live replication page (docs/replication-page.md) in headless chromium, served by one
// broker for the whole 3-broker cluster under a trickle of produce: it shows every partition
// with its leader and full ISR; after SIGSTOP of a follower it shows that replica leaving the ISR
// within replica.lag.time.max.ms (S5b, S10) plus a few seconds, with its LEO bar behind the HW
// (S6: AR = ISR + OSR); after SIGCONT it shows it back in the ISR; after kill -9 of the leader it
// shows the new leader and the bumped leader epoch (S9, K1). Screenshots of each step go to the
// test's temp dir and, when ISRBROKER_SCREENSHOT_DIR is set, there.
func TestReplicationPage_StopFollowerKillLeader(t *testing.T) {
	chromium := chromiumPath(t)
	const lag = 1500 * time.Millisecond
	// The follower stays stopped well inside the session timeout, so only the leader's
	// ISR-shrink task removes it; the killed leader is replaced after the session timeout.
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 8 * time.Second,
		Overrides: map[string]string{"replica.lag.time.max.ms": fmt.Sprint(lag.Milliseconds()), "auto.leader.rebalance.enable": "false"}})
	const topic, partitions = "page", 3
	assignment := c.CreateTopic(topic, partitions, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := st0.Leader
	var others []int32
	for _, r := range assignment[0] {
		if r != leader {
			others = append(others, r)
		}
	}
	follower, server := others[0], others[1] // stopped; serves the page throughout

	// A steady trickle of produce to every partition.
	cl := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	pctx, pcancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; pctx.Err() == nil; i++ {
			cl.Produce(pctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("v", i))}, nil)
			select {
			case <-pctx.Done():
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { pcancel(); wg.Wait() })

	// Headless chromium on the page of the broker that is neither stopped nor killed.
	shots := []string{t.TempDir()}
	if d := os.Getenv("ISRBROKER_SCREENSHOT_DIR"); d != "" {
		shots = append(shots, screenshotDir(t, d))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1500, 1000))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	url := "http://" + c.Broker(server).MetricsAddr + "/replication"
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("chromium: navigate to %s: %v", url, err)
	}
	read := func() (pageState, error) {
		ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
		defer cancel()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](readPageJS))
		if err != nil {
			return pageState{}, err
		}
		var ps pageState
		err = json.Unmarshal([]byte(s), &ps)
		return ps, err
	}
	waitPage := func(what string, timeout time.Duration, cond func(pageState) (bool, string)) pageState {
		t.Helper()
		var last pageState
		cluster.WaitFor(t, timeout, func() (bool, string) {
			ps, err := read()
			if err != nil {
				return false, fmt.Sprintf("%s: reading the page: %v", what, err)
			}
			last = ps
			ok, msg := cond(ps)
			return ok, what + ": " + msg
		})
		return last
	}
	screenshot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		for _, d := range shots {
			p := filepath.Join(d, name)
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Errorf("screenshot %s: %v", p, err)
			}
		}
		t.Logf("screenshot %s (%d bytes) in %v", name, len(png), shots)
	}
	p0 := topic + "-0"

	// Every partition, with its leader, full ISR and no OSR; the controller from ZooKeeper.
	ctl, ctlEpoch := c.ZK.WaitController(30 * time.Second)
	waitPage("steady state", 30*time.Second, func(ps pageState) (bool, string) {
		if ps.Controller != ctl || ps.ControllerEpoch != ctlEpoch {
			return false, fmt.Sprintf("controller %d epoch %d, want %d epoch %d", ps.Controller, ps.ControllerEpoch, ctl, ctlEpoch)
		}
		for p := int32(0); p < partitions; p++ {
			name := fmt.Sprintf("%s-%d", topic, p)
			pp, ok := ps.Partitions[name]
			if !ok {
				return false, fmt.Sprintf("partition %s not shown (shown: %d)", name, len(ps.Partitions))
			}
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if pp.Leader != st.Leader || pp.LeaderEpoch != st.LeaderEpoch || !cluster.SameMembers(pp.ISR, assignment[p]) || len(pp.OSR) != 0 || len(pp.AR) != 3 {
				return false, fmt.Sprintf("%s shown %+v, ZooKeeper %+v", name, pp, st)
			}
		}
		return true, ""
	})
	screenshot("replication-page-steady.png")

	// SIGSTOP of a follower: it leaves the ISR on the page within lag + a few seconds, its LEO
	// bar behind the HW.
	stoppedAt := time.Now()
	c.Broker(follower).Pause()
	stopped := waitPage("follower stopped", lag*3/2+5*time.Second, func(ps pageState) (bool, string) {
		pp := ps.Partitions[p0]
		r, _ := pp.replica(follower)
		if !pp.LeaderReachable || !pp.Open || slices.Contains(pp.ISR, follower) || !slices.Contains(pp.OSR, follower) || r.InISR || !r.Behind || r.LEO >= pp.HW {
			return false, fmt.Sprintf("%s: ISR %v OSR %v HW %d, broker %d: %+v", p0, pp.ISR, pp.OSR, pp.HW, follower, r)
		}
		return true, ""
	})
	t.Logf("page shows broker %d out of the ISR of %s %v after SIGSTOP (LEO %v, HW %d)", follower, p0,
		time.Since(stoppedAt).Round(time.Millisecond), stopped.Partitions[p0].Replicas, stopped.Partitions[p0].HW)
	if ps, _ := read(); ps.Brokers[cluster.Itoa32(follower)] {
		t.Errorf("the page shows stopped broker %d as reachable", follower)
	}
	if !slices.Contains(stopped.Events, "IsrShrink") {
		t.Errorf("no IsrShrink event on the page: %v", stopped.Events)
	}
	screenshot("replication-page.png")
	if d := time.Since(stoppedAt); d > 7*time.Second {
		t.Fatalf("follower was stopped %v: its session may expire", d)
	}

	// SIGCONT: back in the ISR, and p0 healthy again: folded back into its topic's strip (its
	// card is drawn only while it is unhealthy, docs/replication-page.md "At scale").
	c.Broker(follower).Resume()
	waitPage("follower resumed", 20*time.Second, func(ps pageState) (bool, string) {
		pp := ps.Partitions[p0]
		r, shown := pp.replica(follower)
		if !slices.Contains(pp.ISR, follower) || len(pp.OSR) != 0 || (shown && !r.InISR) || pp.Open {
			return false, fmt.Sprintf("%s: ISR %v OSR %v, drawn open %v, broker %d: %+v", p0, pp.ISR, pp.OSR, pp.Open, follower, r)
		}
		return true, ""
	})

	// kill -9 of the leader: a new leader with a bumped leader epoch.
	before, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Broker(leader).Kill()
	after := waitPage("leader killed", 30*time.Second, func(ps pageState) (bool, string) {
		pp := ps.Partitions[p0]
		if pp.Leader == leader || pp.Leader < 0 || pp.LeaderEpoch <= before.LeaderEpoch || !pp.LeaderReachable {
			return false, fmt.Sprintf("%s: leader %d epoch %d (killed %d at epoch %d)", p0, pp.Leader, pp.LeaderEpoch, leader, before.LeaderEpoch)
		}
		return true, ""
	})
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pp := after.Partitions[p0]; pp.Leader != st.Leader || pp.LeaderEpoch > st.LeaderEpoch {
		t.Errorf("page shows leader %d epoch %d; ZooKeeper has %d epoch %d", pp.Leader, pp.LeaderEpoch, st.Leader, st.LeaderEpoch)
	}
	if ps, _ := read(); ps.Brokers[cluster.Itoa32(leader)] || !slices.Contains(ps.Events, "BecomeLeader") {
		t.Errorf("after kill -9 of broker %d: brokers %v, events %v", leader, ps.Brokers, ps.Events)
	}
	screenshot("replication-page-leader-killed.png")
}
