package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/isrbroker/isrbroker/broker/config"
)

// composeDoc is the little of YAML the compose files use, read without a YAML library: nested
// mappings by indentation, scalar values, lists of scalars, anchors (&a) and merge keys
// (<<: *a), flow lists ([a, b]). Values are keyed by their dotted path ("services.broker1.environment.KAFKA_BROKER_ID").
type composeDoc struct {
	values  map[string]string   // path -> scalar
	lists   map[string][]string // path -> list items
	anchors map[string]string   // anchor -> path
	merges  map[string][]string // path -> the anchors merged into it, or aliased by it
}

func readCompose(t *testing.T, files ...string) *composeDoc {
	t.Helper()
	d := &composeDoc{values: map[string]string{}, lists: map[string][]string{}, anchors: map[string]string{}, merges: map[string][]string{}}
	keyLine := regexp.MustCompile(`^( *)([A-Za-z0-9_.<-]+):(?: (.*))?$`)
	itemLine := regexp.MustCompile(`^( *)- (.*)$`)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		type level struct {
			indent int
			key    string
		}
		var stack []level
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			line := sc.Text()
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			path := func(indent int) string {
				for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
					stack = stack[:len(stack)-1]
				}
				var parts []string
				for _, l := range stack {
					parts = append(parts, l.key)
				}
				return strings.Join(parts, ".")
			}
			if m := itemLine.FindStringSubmatch(line); m != nil {
				p := path(len(m[1]))
				d.lists[p] = append(d.lists[p], unquote(m[2]))
				continue
			}
			m := keyLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s: line not understood: %q", f, line)
			}
			indent, key, val := len(m[1]), m[2], strings.TrimSpace(m[3])
			parent := path(indent)
			full := strings.TrimPrefix(parent+"."+key, ".")
			switch {
			case key == "<<":
				d.merges[parent] = append(d.merges[parent], strings.TrimPrefix(val, "*"))
			case strings.HasPrefix(val, "&"):
				d.anchors[val[1:]] = full
				stack = append(stack, level{indent, key})
			case strings.HasPrefix(val, "*"):
				d.merges[full] = append(d.merges[full], val[1:])
			case strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]"):
				for _, it := range strings.Split(val[1:len(val)-1], ",") {
					d.lists[full] = append(d.lists[full], unquote(strings.TrimSpace(it)))
				}
			case val == "":
				stack = append(stack, level{indent, key})
			default:
				d.values[full] = unquote(val)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// mapping returns the scalar entries directly under path, merged anchors first, with every
// ${VAR:-default} replaced by its default.
func (d *composeDoc) mapping(path string) map[string]string {
	out := map[string]string{}
	for _, a := range d.merges[path] {
		for k, v := range d.mapping(d.anchors[a]) {
			out[k] = v
		}
	}
	for p, v := range d.values {
		if k, ok := strings.CutPrefix(p, path+"."); ok && !strings.Contains(k, ".") {
			out[k] = withDefaults(v)
		}
	}
	return out
}

var composeVar = regexp.MustCompile(`\$\{[A-Z0-9_]+:-([^}]*)\}`)

func withDefaults(s string) string { return composeVar.ReplaceAllString(s, "$1") }

// environ is the container environment of a service ("NAME=value"), as the broker reads it.
func (d *composeDoc) environ(service string) []string {
	var env []string
	for k, v := range d.mapping("services." + service + ".environment") {
		env = append(env, k+"="+v)
	}
	return env
}

// TestComposeBrokerConfig loads scripts/docker/server.properties with the KAFKA_* environment
// docker-compose.yml gives each broker, the way the broker in the image does (LoadAll), so a
// config change that breaks the compose cluster fails here and not only in
// scripts/compose-test.sh.
func TestComposeBrokerConfig(t *testing.T) {
	d := readCompose(t, "docker-compose.yml")
	for id := 1; id <= 3; id++ {
		svc := fmt.Sprintf("broker%d", id)
		env := d.environ(svc)
		cfg, report, err := config.LoadAll(config.Sources{Path: "scripts/docker/server.properties", Environ: env})
		if err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		for _, w := range report.Warnings {
			t.Logf("broker %d: warning: %s", id, w)
		}
		if len(report.FromEnv) < 3 {
			t.Errorf("broker %d: settings from the environment %v, want at least broker.id, advertised.listeners and metrics.listen", id, report.FromEnv)
		}
		if cfg.BrokerID != int32(id) {
			t.Errorf("broker.id = %d, want %d", cfg.BrokerID, id)
		}
		if len(cfg.Listeners) != 2 || cfg.Listeners[0].Host != "0.0.0.0" || cfg.Listeners[0].Port != 19092 || cfg.Listeners[1].Port != 9092 {
			t.Errorf("broker %d: listeners = %v, want INTERNAL://0.0.0.0:19092,EXTERNAL://0.0.0.0:9092", id, cfg.Listeners)
		}
		ib, ok := cfg.InterBrokerListener()
		if !ok || ib.Name != "INTERNAL" || ib.Host != svc || ib.Port != 19092 {
			t.Errorf("broker %d: inter-broker listener = %v (%v), want INTERNAL://broker%d:19092", id, ib, ok, id)
		}
		if len(cfg.AdvertisedListeners) != 2 || cfg.AdvertisedListeners[1].String() != fmt.Sprintf("EXTERNAL://127.0.0.1:%d", 9091+id) {
			t.Errorf("broker %d: advertised.listeners = %v, want EXTERNAL://127.0.0.1:%d second", id, cfg.AdvertisedListeners, 9091+id)
		}
		// Metrics and the replication page are on; the page gathers the other brokers at
		// their container names.
		if cfg.MetricsListen != "0.0.0.0:9101" {
			t.Errorf("broker %d: metrics.listen %q, want 0.0.0.0:9101", id, cfg.MetricsListen)
		}
		if got, want := cfg.MetricsAdvertisedAddress(0), svc+":9101"; got != want {
			t.Errorf("broker %d: replication page address %q, want %q", id, got, want)
		}
		if len(cfg.LogDirs) != 1 || cfg.LogDirs[0] != "/var/lib/isrbroker" || cfg.ZookeeperConnect != "zookeeper:2181" {
			t.Errorf("broker %d: log.dirs %v, zookeeper.connect %q", id, cfg.LogDirs, cfg.ZookeeperConnect)
		}
		// Published: the EXTERNAL listener and the metrics port, on 127.0.0.1 by default.
		ports := d.lists["services."+svc+".ports"]
		for _, want := range []string{
			fmt.Sprintf("${ISRBROKER_BIND_ADDRESS:-127.0.0.1}:${ISRBROKER_BROKER%d_PORT:-%d}:9092", id, 9091+id),
			fmt.Sprintf("${ISRBROKER_BIND_ADDRESS:-127.0.0.1}:${ISRBROKER_BROKER%d_METRICS_PORT:-%d}:9101", id, 9100+id),
		} {
			if !contains(ports, want) {
				t.Errorf("broker %d: ports %q lack %q", id, ports, want)
			}
		}
		hc := d.lists["services."+svc+".healthcheck.test"]
		if !contains(hc, "isrbroker") || !contains(hc, fmt.Sprintf("--broker-id=%d", id)) {
			t.Errorf("broker %d: healthcheck %q", id, hc)
		}
	}
	// Every published port binds ISRBROKER_BIND_ADDRESS, 127.0.0.1 by default.
	for p, items := range d.lists {
		if strings.HasSuffix(p, ".ports") {
			for _, it := range items {
				if !strings.HasPrefix(it, "${ISRBROKER_BIND_ADDRESS:-127.0.0.1}:") {
					t.Errorf("%s: %q is not bound to ${ISRBROKER_BIND_ADDRESS:-127.0.0.1}", p, it)
				}
			}
		}
	}
}

// TestComposeEnsemble checks docker-compose.ensemble.yml over docker-compose.yml: three
// ZooKeeper members with distinct ids and one server list naming them all, and brokers whose
// zookeeper.connect lists the three and that wait for all of them.
func TestComposeEnsemble(t *testing.T) {
	d := readCompose(t, "docker-compose.yml", "docker-compose.ensemble.yml")
	members := map[string]string{"zookeeper": "1", "zookeeper2": "2", "zookeeper3": "3"}
	var servers string
	for svc, id := range members {
		env := d.mapping("services." + svc + ".environment")
		if env["ZOO_MY_ID"] != id {
			t.Errorf("%s: ZOO_MY_ID %q, want %s", svc, env["ZOO_MY_ID"], id)
		}
		if servers == "" {
			servers = env["ZOO_SERVERS"]
		} else if env["ZOO_SERVERS"] != servers {
			t.Errorf("%s: ZOO_SERVERS %q differs from %q", svc, env["ZOO_SERVERS"], servers)
		}
	}
	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf("server.%d=zookeeper%d:2888:3888;2181", i, i)
		if !strings.Contains(servers, want) {
			t.Errorf("ZOO_SERVERS %q lacks %q", servers, want)
		}
	}
	if got := d.lists["services.zookeeper.networks.default.aliases"]; !contains(got, "zookeeper1") {
		t.Errorf("service zookeeper is not reachable as zookeeper1: aliases %q", got)
	}
	for id := 1; id <= 3; id++ {
		svc := fmt.Sprintf("broker%d", id)
		// The ensemble file's environment (an alias) merges into the base file's.
		cfg, _, err := config.LoadAll(config.Sources{Path: "scripts/docker/server.properties", Environ: d.environ(svc)})
		if err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		if want := []string{"zookeeper1:2181", "zookeeper2:2181", "zookeeper3:2181"}; strings.Join(cfg.ZookeeperServers, ",") != strings.Join(want, ",") {
			t.Errorf("broker %d: zookeeper servers %q, want %q", id, cfg.ZookeeperServers, want)
		}
		deps := d.merges["services."+svc+".depends_on"]
		if len(deps) != 1 {
			t.Fatalf("broker %d: depends_on %q", id, deps)
		}
		for member := range members {
			if d.values[d.anchors[deps[0]]+"."+member+".condition"] != "service_healthy" {
				t.Errorf("broker %d does not wait for %s to be healthy", id, member)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
