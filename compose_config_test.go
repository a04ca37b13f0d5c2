package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/isrbroker/isrbroker/broker/config"
)

// TestComposeBrokerConfig loads scripts/docker/server.properties with the per-broker
// overrides docker-compose.yml passes, the way the broker image does, so a config change
// that breaks the compose cluster fails here and not only in scripts/compose-test.sh.
func TestComposeBrokerConfig(t *testing.T) {
	compose, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 3; id++ {
		adv := fmt.Sprintf("INTERNAL://broker%d:19092,EXTERNAL://127.0.0.1:%d", id, 9091+id)
		overrides := []string{fmt.Sprintf("broker.id=%d", id), "advertised.listeners=" + adv}
		// The compose file must pass exactly these overrides (with its default variables).
		for _, want := range []string{
			fmt.Sprintf("--override=broker.id=%d", id),
			fmt.Sprintf("--override=advertised.listeners=INTERNAL://broker%d:19092,EXTERNAL://${ISRBROKER_ADVERTISED_HOST:-127.0.0.1}:${ISRBROKER_BROKER%d_PORT:-%d}", id, id, 9091+id),
			fmt.Sprintf("--broker-id=%d", id),
		} {
			if !strings.Contains(string(compose), want) {
				t.Errorf("docker-compose.yml lacks %q", want)
			}
		}
		cfg, warnings, err := config.Load("scripts/docker/server.properties", overrides)
		if err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		for _, w := range warnings {
			t.Logf("broker %d: warning: %s", id, w)
		}
		if cfg.BrokerID != int32(id) {
			t.Errorf("broker.id = %d, want %d", cfg.BrokerID, id)
		}
		if len(cfg.Listeners) != 2 || cfg.Listeners[0].Host != "0.0.0.0" || cfg.Listeners[0].Port != 19092 || cfg.Listeners[1].Port != 9092 {
			t.Errorf("broker %d: listeners = %v, want INTERNAL://0.0.0.0:19092,EXTERNAL://0.0.0.0:9092", id, cfg.Listeners)
		}
		ib, ok := cfg.InterBrokerListener()
		if !ok || ib.Name != "INTERNAL" || ib.Host != fmt.Sprintf("broker%d", id) || ib.Port != 19092 {
			t.Errorf("broker %d: inter-broker listener = %v (%v), want INTERNAL://broker%d:19092", id, ib, ok, id)
		}
		if len(cfg.AdvertisedListeners) != 2 || cfg.AdvertisedListeners[1].String() != fmt.Sprintf("EXTERNAL://127.0.0.1:%d", 9091+id) {
			t.Errorf("broker %d: advertised.listeners = %v, want %s", id, cfg.AdvertisedListeners, adv)
		}
		// The replication page gathers the other brokers at their container names.
		if got, want := cfg.MetricsAdvertisedAddress(0), fmt.Sprintf("broker%d:9101", id); got != want {
			t.Errorf("broker %d: replication page address %q, want %q", id, got, want)
		}
		if want := fmt.Sprintf(`"127.0.0.1:${ISRBROKER_BROKER%d_METRICS_PORT:-%d}:9101"`, id, 9100+id); !strings.Contains(string(compose), want) {
			t.Errorf("docker-compose.yml does not publish broker %d's metrics port: %s", id, want)
		}
		if len(cfg.LogDirs) != 1 || cfg.LogDirs[0] != "/var/lib/isrbroker" || cfg.ZookeeperConnect != "zookeeper:2181" {
			t.Errorf("broker %d: log.dirs %v, zookeeper.connect %q", id, cfg.LogDirs, cfg.ZookeeperConnect)
		}
	}
}
