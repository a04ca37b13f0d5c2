package replview

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// scaleState is what the page's DOM shows at scale (its data-* attributes,
// docs/replication-page.md, "At scale").
type scaleState struct {
	Polls    int               `json:"polls"`
	Summary  map[string]string `json:"summary"`  // #summary's data-* attributes
	Topics   []scaleTopic      `json:"topics"`   // in page order
	Cards    []string          `json:"cards"`    // .partition cards, "topic-partition", in page order
	Cells    int               `json:"cells"`    // strip cells
	Rows     map[string]int    `json:"rows"`     // card -> its replica rows
	FetchLag map[string]string `json:"fetchLag"` // broker -> the summary's fetcher lag
}

type scaleTopic struct {
	Name   string `json:"name"`
	Folded bool   `json:"folded"`
	Cells  int    `json:"cells"`
}

const readScaleJS = `(() => {
  const out = {polls: Number(document.body.dataset.polls || 0), summary: {...document.getElementById("summary").dataset},
    topics: [], cards: [], cells: document.querySelectorAll(".pcell").length, rows: {}, fetchLag: {}};
  for (const t of document.querySelectorAll(".topic")) out.topics.push({name: t.dataset.topic, folded: t.dataset.folded === "true",
    cells: t.querySelectorAll(".pcell").length});
  for (const c of document.querySelectorAll(".partition")) {
    out.cards.push(c.dataset.partition);
    out.rows[c.dataset.partition] = c.querySelectorAll(".replica").length;
  }
  for (const td of document.querySelectorAll("[data-fetch-lag-broker]")) out.fetchLag[td.dataset.fetchLagBroker] = td.dataset.fetchLag;
  return JSON.stringify(out);
})()`

// The page over the synthetic 10,000-partition, 3-broker cluster (synth_test.go, brokers 2 and 3
// over HTTP) in headless chromium: the summary's counts and fetcher lags, the user's topics
// before __consumer_offsets, which is folded until clicked, only the unhealthy partitions drawn as
// cards (a healthy one opens on a click on its cell, with its replica states from the next
// poll), and the filter narrowing the topics. With ISRBROKER_SCREENSHOT_DIR set (a relative
// path is relative to the repository root: docs/images for docs/replication-page.md) it writes
// replication-page-10k.png there. Not in -short (it starts chromium); without chromium it skips,
// unless CI is set.
func TestReplicationPageAt10kPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts headless chromium: not in -short")
	}
	chromium := chromiumPath(t)
	v, want := synthView(t)
	srv := httptest.NewServer(v)
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1500, 1000))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/replication")); err != nil {
		t.Fatalf("chromium: navigate: %v", err)
	}
	eval := func(js string) (string, error) {
		ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		return chromedp.Run(ctx, chromedp.Evaluate[string](js))
	}
	read := func() scaleState {
		t.Helper()
		s, err := eval(readScaleJS)
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		var st scaleState
		if err := json.Unmarshal([]byte(s), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// waitPage polls the DOM until cond holds (each poll of the page takes a while under -race).
	waitPage := func(what string, cond func(scaleState) string) scaleState {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			st := read()
			msg := cond(st)
			if msg == "" {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, msg)
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-bctx.Done():
				t.Fatal(bctx.Err())
			}
		}
	}
	do := func(js string) {
		t.Helper()
		if _, err := eval("(() => { " + js + "; return \"\"; })()"); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}

	userTopics := []string{"audit", "clicks", "inventory", "orders", "payments"}
	var userUnhealthy []string
	for _, name := range want.unhealthy {
		if !IsInternalTopic(name) {
			userUnhealthy = append(userUnhealthy, name)
		}
	}
	summary := map[string]string{
		"partitions": fmt.Sprint(want.partitions), "underReplicated": fmt.Sprint(want.underReplicated),
		"underMinIsr": fmt.Sprint(want.underMinISR), "offline": fmt.Sprint(want.offline), "leaderNotPreferred": fmt.Sprint(want.notPreferred),
	}
	st := waitPage("first draw", func(st scaleState) string {
		if st.Summary["partitions"] != summary["partitions"] {
			return fmt.Sprintf("summary %v", st.Summary)
		}
		return ""
	})
	for k, w := range summary {
		if st.Summary[k] != w {
			t.Errorf("summary %s = %q, want %q", k, st.Summary[k], w)
		}
	}
	for id, lag := range want.fetchLag {
		if got := st.FetchLag[fmt.Sprint(id)]; got != fmt.Sprint(lag) {
			t.Errorf("broker %d fetcher lag %q, want %d", id, got, lag)
		}
	}
	var order []string
	for _, tp := range st.Topics {
		order = append(order, tp.Name)
	}
	if wantOrder := append(slices.Clone(userTopics), "__consumer_offsets"); !slices.Equal(order, wantOrder) {
		t.Errorf("topics in the order %v, want %v", order, wantOrder)
	}
	if co := st.Topics[len(st.Topics)-1]; !co.Folded || co.Cells != 0 {
		t.Errorf("__consumer_offsets: folded %v with %d cells, want folded", co.Folded, co.Cells)
	}
	if !slices.Equal(st.Cards, userUnhealthy) {
		t.Errorf("cards %v, want only the unhealthy partitions of the user's topics %v", st.Cards, userUnhealthy)
	}
	if st.Cells != want.partitions-50 {
		t.Errorf("%d strip cells, want %d (every partition of the unfolded topics)", st.Cells, want.partitions-50)
	}
	for _, c := range st.Cards {
		if st.Rows[c] != 3 {
			t.Errorf("card %s has %d replica rows, want 3", c, st.Rows[c])
		}
	}
	screenshot(t, bctx, "replication-page-10k.png")
	// How long one redraw of the 10,000 partitions takes (logged: docs/replication-page.md).
	if ms, err := eval(`(() => { const t0 = performance.now(); render(lastView); return (performance.now() - t0).toFixed(0); })()`); err != nil {
		t.Errorf("timing a redraw: %v", err)
	} else {
		t.Logf("one redraw of the page: %s ms", ms)
	}

	// One click opens __consumer_offsets: its 50 cells and its unhealthy partition's card.
	do(`document.querySelector('[data-fold="__consumer_offsets"]').click()`)
	st = read()
	if co := st.Topics[len(st.Topics)-1]; co.Folded || co.Cells != 50 || !slices.Equal(st.Cards, want.unhealthy) {
		t.Errorf("after a click: __consumer_offsets %+v, cards %v, want %v", co, st.Cards, want.unhealthy)
	}

	// The filter narrows the topics (and the cards) as it is typed.
	do(`const f = document.getElementById("filter"); f.value = "ORD"; f.dispatchEvent(new Event("input"))`)
	st = read()
	var orders []string
	for _, c := range userUnhealthy {
		if len(c) > 7 && c[:7] == "orders-" {
			orders = append(orders, c)
		}
	}
	if len(st.Topics) != 1 || st.Topics[0].Name != "orders" || st.Topics[0].Cells != 2500 || !slices.Equal(st.Cards, orders) {
		t.Errorf("filter ORD: topics %+v, cards %v, want orders with %v", st.Topics, st.Cards, orders)
	}
	do(`const f = document.getElementById("filter"); f.value = ""; f.dispatchEvent(new Event("input"))`)

	// A click on a healthy partition's cell opens its card; its replica states come with the
	// next poll (cluster.json?brief=1&open=audit-3).
	do(`document.querySelector('[data-cell="audit-3"]').click()`)
	waitPage("healthy card opened", func(st scaleState) string {
		if !slices.Contains(st.Cards, "audit-3") || st.Rows["audit-3"] != 3 {
			return fmt.Sprintf("cards %v, audit-3 rows %d", st.Cards, st.Rows["audit-3"])
		}
		return ""
	})
}

// screenshot saves the page in the test's temp dir and, with ISRBROKER_SCREENSHOT_DIR, there.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dirs := []string{t.TempDir()}
	if d := os.Getenv("ISRBROKER_SCREENSHOT_DIR"); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join("..", "..", d) // this package is broker/replview
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s (%d bytes) in %v", name, len(png), dirs)
}

// chromiumPath finds Debian's chromium (scripts/install-deps.sh installs it). Without it the test
// skips, except under CI, where it fails.
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
