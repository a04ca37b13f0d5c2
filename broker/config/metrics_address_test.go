package config

import "testing"

// TestMetricsAdvertisedAddress: the page address published for peers (docs/replication-page.md)
// is metrics.advertised.listen when set, else metrics.listen with a wildcard host replaced by
// the first advertised listener's host (docker-compose: the container's name).
func TestMetricsAdvertisedAddress(t *testing.T) {
	base := func(kv ...string) *Config {
		t.Helper()
		p := map[string]string{"broker.id": "1", "log.dirs": "/d", "zookeeper.connect": "zk:2181",
			"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://broker1:9092"}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		c, _, err := Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		c     *Config
		bound int
		want  string
	}{
		{"off", base(), 0, ""},
		{"explicit host", base("metrics.listen", "127.0.0.1:9101"), 0, "127.0.0.1:9101"},
		{"wildcard", base("metrics.listen", "0.0.0.0:9101"), 0, "broker1:9101"},
		{"empty host", base("metrics.listen", ":9101"), 0, "broker1:9101"},
		{"bound port", base("metrics.listen", "127.0.0.1:0"), 40001, "127.0.0.1:40001"},
		{"override", base("metrics.listen", "0.0.0.0:9101", "metrics.advertised.listen", "localhost:19101"), 0, "localhost:19101"},
	} {
		if got := tc.c.MetricsAdvertisedAddress(tc.bound); got != tc.want {
			t.Errorf("%s: MetricsAdvertisedAddress = %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, _, err := Parse(map[string]string{"broker.id": "1", "log.dirs": "/d", "zookeeper.connect": "zk:2181",
		"metrics.advertised.listen": "nope"}); err == nil {
		t.Error("metrics.advertised.listen=nope accepted")
	}
}
