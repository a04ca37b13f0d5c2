package broker

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// compatibilityRow matches a table row of docs/compatibility.md: | key | API | versions | ...
var compatibilityRow = regexp.MustCompile(`^\| (\d+) \| (\w+) \| (\d+)(?:-(\d+))? \|`)

// documentedKeys reads the served keys and version ranges from docs/compatibility.md.
func documentedKeys(t *testing.T) map[int16][2]int16 {
	t.Helper()
	data, err := os.ReadFile("../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int16][2]int16{}
	for _, line := range strings.Split(string(data), "\n") {
		m := compatibilityRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key, _ := strconv.Atoi(m[1])
		lo, _ := strconv.Atoi(m[3])
		hi := lo
		if m[4] != "" {
			hi, _ = strconv.Atoi(m[4])
		}
		if name := kmsg.NameForKey(int16(key)); !strings.EqualFold(name, m[2]) {
			t.Errorf("docs/compatibility.md: key %d is named %q, kmsg says %q", key, m[2], name)
		}
		if _, dup := out[int16(key)]; dup {
			t.Errorf("docs/compatibility.md: key %d listed twice", key)
		}
		out[int16(key)] = [2]int16{int16(lo), int16(hi)}
	}
	return out
}

// TestCompatibilityDocMatchesRegistry: docs/compatibility.md lists exactly the registered keys
// and version ranges, which are what ApiVersions advertises.
func TestCompatibilityDocMatchesRegistry(t *testing.T) {
	doc := documentedKeys(t)
	adv := advertisedKeys()
	for _, k := range adv {
		w, ok := doc[k.ApiKey]
		if !ok {
			t.Errorf("%s (key %d, v%d-%d) is served but not in docs/compatibility.md", kmsg.NameForKey(k.ApiKey), k.ApiKey, k.MinVersion, k.MaxVersion)
			continue
		}
		if w != [2]int16{k.MinVersion, k.MaxVersion} {
			t.Errorf("%s (key %d): served v%d-%d, docs/compatibility.md says v%d-%d", kmsg.NameForKey(k.ApiKey), k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
		}
		delete(doc, k.ApiKey)
	}
	for key := range doc {
		t.Errorf("docs/compatibility.md lists key %d (%s), which is not served", key, kmsg.NameForKey(key))
	}
	if len(adv) < 20 {
		t.Fatalf("only %d keys registered: the doc check would be vacuous", len(adv))
	}
}
