package broker

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// compatibilityRow matches a table row of docs/compatibility.md and of the README's
// "Compatibility" section: | key | API | versions | ...
var compatibilityRow = regexp.MustCompile(`^\| (\d+) \| (\w+) \| (\d+)(?:-(\d+))? \|`)

// docSection returns the lines of the markdown file path, or with a non-empty heading only those
// of its "## heading" section (up to the next "## " heading); the test fails when it is missing.
func docSection(t *testing.T, path, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if heading == "" {
		return lines
	}
	var out []string
	in := false
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			if in {
				break
			}
			in = strings.TrimSpace(strings.TrimPrefix(l, "## ")) == heading
			continue
		}
		if in {
			out = append(out, l)
		}
	}
	if !in {
		t.Fatalf("%s: no section \"## %s\"", path, heading)
	}
	return out
}

// documentedKeys reads the served keys and version ranges from the table rows of lines
// (named doc in messages).
func documentedKeys(t *testing.T, doc string, lines []string) map[int16][2]int16 {
	t.Helper()
	out := map[int16][2]int16{}
	for _, line := range lines {
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
			t.Errorf("%s: key %d is named %q, kmsg says %q", doc, key, m[2], name)
		}
		if _, dup := out[int16(key)]; dup {
			t.Errorf("%s: key %d listed twice", doc, key)
		}
		out[int16(key)] = [2]int16{int16(lo), int16(hi)}
	}
	return out
}

// TestCompatibilityDocMatchesRegistry: docs/compatibility.md and the README's "Compatibility"
// table list exactly the registered keys and version ranges, which are what ApiVersions
// advertises.
func TestCompatibilityDocMatchesRegistry(t *testing.T) {
	for _, d := range []struct{ name, path, heading string }{
		{"docs/compatibility.md", "../docs/compatibility.md", ""},
		{"README.md (Compatibility)", "../README.md", "Compatibility"},
	} {
		t.Run(d.name, func(t *testing.T) {
			compareWithRegistry(t, d.name, documentedKeys(t, d.name, docSection(t, d.path, d.heading)))
		})
	}
}

func compareWithRegistry(t *testing.T, name string, doc map[int16][2]int16) {
	adv := advertisedKeys()
	for _, k := range adv {
		w, ok := doc[k.ApiKey]
		if !ok {
			t.Errorf("%s (key %d, v%d-%d) is served but not in %s", kmsg.NameForKey(k.ApiKey), k.ApiKey, k.MinVersion, k.MaxVersion, name)
			continue
		}
		if w != [2]int16{k.MinVersion, k.MaxVersion} {
			t.Errorf("%s (key %d): served v%d-%d, %s says v%d-%d", kmsg.NameForKey(k.ApiKey), k.ApiKey, k.MinVersion, k.MaxVersion, name, w[0], w[1])
		}
		delete(doc, k.ApiKey)
	}
	for key := range doc {
		t.Errorf("%s lists key %d (%s), which is not served", name, key, kmsg.NameForKey(key))
	}
	if len(adv) < 20 {
		t.Fatalf("only %d keys registered: the doc check would be vacuous", len(adv))
	}
}
