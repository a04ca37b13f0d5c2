package zkcoord

import (
	"sync"
	"testing"
	"time"
)

// TestQuotaConfigListener: quota entities written through admin (users, clients,
// users/<u>/clients/<c>, <default> ones, names Kafka's Sanitizer escapes) reach OnQuotaConfig
// at the start-up scan and through /config/changes, and a deleted key arrives as an empty
// config (docs/quotas.md).
func TestQuotaConfigListener(t *testing.T) {
	s := startZK(t)
	op := connectT(t, testConfig(t, s.Addr, 9, 1))
	b1 := connectT(t, testConfig(t, s.Addr, 1, 2))

	set := func(user, client, v string) {
		t.Helper()
		if err := op.Admin.AlterQuotaConfig(user, client, func(m map[string]string) {
			if v == "" {
				delete(m, "producer_byte_rate")
			} else {
				m["producer_byte_rate"] = v
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	set("alice", "", "1")
	set("<default>", "<default>", "2")
	var mu sync.Mutex
	got := map[[2]string]string{}
	b1.ConfigListener.OnQuotaConfig(func(user, client string, cfg map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		got[[2]string{user, client}] = cfg["producer_byte_rate"]
	})
	has := func(user, client, v string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			x, ok := got[[2]string{user, client}]
			return ok && x == v
		}
	}
	waitFor(t, 10*time.Second, "start-up scan", func() bool {
		return has("alice", "", "1")() && has("<default>", "<default>", "2")()
	})
	set("bob smith", "app/1", "3")
	waitFor(t, 10*time.Second, "user+client notification", has("bob smith", "app/1", "3"))
	set("", "<default>", "4")
	waitFor(t, 10*time.Second, "client default notification", has("", "<default>", "4"))
	set("alice", "", "")
	waitFor(t, 10*time.Second, "deleted key", has("alice", "", ""))
	if cfg, err := op.Reader.QuotaConfig("bob smith", "app/1"); err != nil || cfg["producer_byte_rate"] != "3" {
		t.Fatalf("QuotaConfig: %v %v", cfg, err)
	}
}
