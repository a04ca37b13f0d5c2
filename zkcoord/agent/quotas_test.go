package agent

import (
	"sync"
	"testing"

	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// writeQuota writes a quota entity's config znode (its parents first) and the notification.
func writeQuota(t *testing.T, conn zkclient.Conn, user, client string, cfg map[string]string) {
	t.Helper()
	if err := zkclient.CreateRecursive(conn, zkdata.QuotaConfigPath(user, client)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(zkdata.QuotaConfigPath(user, client), zkdata.EncodeConfig(cfg), -1); err != nil {
		t.Fatal(err)
	}
	notify(t, conn, zkdata.QuotaEntity(user, client))
}

// TestQuotaEntitiesDelivered: OnQuotaConfig gets every quota entity at the start-up scan (the
// user parent of a user+client entity with its empty data too) and each notified one after,
// desanitized; SCRAM users still reach OnUserConfig.
func TestQuotaEntitiesDelivered(t *testing.T) {
	srv, admin := setup(t)
	writeQuota(t, admin, "CN=x,O=y", "app", map[string]string{"producer_byte_rate": "1"})
	writeQuota(t, admin, "", zkdata.DefaultBrokerEntity, map[string]string{"consumer_byte_rate": "2"})

	conn := srv.Connect(nil)
	l := NewConfigListener(conn, 1, testLog())
	defer func() { conn.Close(); l.Close() }()
	var mu sync.Mutex
	got := map[[2]string]map[string]string{}
	l.OnQuotaConfig(func(user, client string, cfg map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		got[[2]string{user, client}] = cfg
	})
	var users []string
	l.OnUserConfig(func(user string, _ map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		users = append(users, user)
	})
	has := func(user, client, key, v string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			cfg, ok := got[[2]string{user, client}]
			return ok && cfg[key] == v
		}
	}
	waitFor(t, "start-up scan", func() bool {
		return has("CN=x,O=y", "app", "producer_byte_rate", "1")() && has("", "<default>", "consumer_byte_rate", "2")() &&
			has("CN=x,O=y", "", "producer_byte_rate", "")()
	})
	writeQuota(t, admin, "<default>", "", map[string]string{"request_percentage": "5"})
	waitFor(t, "users/<default> notification", has("<default>", "", "request_percentage", "5"))
	writeQuota(t, admin, "CN=x,O=y", "app", map[string]string{})
	waitFor(t, "cleared entity", func() bool {
		mu.Lock()
		defer mu.Unlock()
		cfg, ok := got[[2]string{"CN=x,O=y", "app"}]
		return ok && len(cfg) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, u := range users {
		if u == "<default>" {
			t.Error("the <default> user reached the credential callbacks")
		}
	}
}
