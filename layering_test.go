package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const modulePath = "github.com/isrbroker/isrbroker"

// leaves are the named shared leaf packages any layer may import (docs/design.md, "Layering"):
// each imports nothing of the repository but other leaves. They are named one by one, as
// Kafka's import-control.xml names its allowed packages, so a new shared package is a
// decision written here, not a folder that happens to sit low in the tree.
var leaves = []string{
	"logstore/record",         // TopicPartition, v2 batch framing, file regions
	"broker/kproto",           // the wire helpers: frames, request headers, a client connection, sendfile
	"broker/ratelog",          // the rate limit of repeated request-path warnings
	"broker/config/configdef", // the one table of config keys
	"broker/decaysample",      // the request histograms' reservoir
	"replicamanager/replica",  // the pure replication core
	"replicamanager/replevents",
	"broker/coordinator",           // what the group and transaction coordinators share: clock, handler registry
	"broker/security/acl",          // Kafka's ACL model and the AclAuthorizer decision
	"broker/security/jaas",         // JAAS config text and Kafka's login-module options (docs/sasl.md)
	"broker/security/sasl",         // the server side of the SASL mechanisms (docs/sasl.md)
	"broker/security/sslprincipal", // the SSL principal: Java's RFC 2253 DN text, ssl.principal.mapping.rules
	"broker/security/tlsconf",      // crypto/tls configs from Kafka's ssl.* keys, live keystore reload (imports sslprincipal)
}

// importRules is the allow-list: for a package (the rule with the longest matching path prefix;
// "" is the root package main only), the packages it may import besides the leaves, each
// naming a package and its sub-packages. A package no rule matches is itself a violation:
// every folder has its place in the layers.
var importRules = map[string][]string{
	"":                         {"*"},
	"logstore":                 {"logstore"},
	"fetcher":                  {"logstore"},
	"replicamanager":           {"replicamanager", "fetcher", "logstore"},
	"zkcoord":                  {"zkcoord"},
	"zkcoord/zkdata":           {},
	"zkcoord/zkclient":         {},
	"broker":                   {"broker/config", "broker/groupcoord", "broker/fetchsession", "broker/clientquota", "replicamanager", "zkcoord", "logstore"},
	"broker/fetchsession":      {}, // the incremental fetch session cache (KIP-227): leaves only
	"broker/clientquota":       {}, // Kafka's client quotas (docs/quotas.md): leaves only
	"broker/config":            {},
	"broker/groupcoord":        {"replicamanager", "zkcoord", "logstore"},
	"broker/txncoord":          {"replicamanager"}, // the transaction coordinator: not wired yet
	"broker/replview":          {"fetcher", "replicamanager", "zkcoord"},
	"broker/metricsexport":     {},
	"broker/tools":             {"broker/tools", "zkcoord/admin", "zkcoord/zkclient", "zkcoord/zkdata", "logstore"},
	"broker/kproto/kprototest": {},
	"tests":                    {"*"},
}

// layeringViolations checks graph (package → the module's packages it imports, paths relative
// to the module) against importRules and leaves, and the two edges docs/design.md forbids by
// name: the fetcher never touches ZooKeeper (no zkcoord/), and only main imports broker/tools/.
func layeringViolations(graph map[string][]string) []string {
	under := func(pkg, dir string) bool {
		return dir == "*" || pkg == dir || (dir != "" && strings.HasPrefix(pkg, dir+"/"))
	}
	isLeaf := func(pkg string) bool {
		for _, l := range leaves {
			if pkg == l {
				return true
			}
		}
		return false
	}
	rule := func(pkg string) (string, bool) {
		best, found := "", false
		for prefix := range importRules {
			if (prefix == "" && pkg == "") || (prefix != "" && under(pkg, prefix)) {
				if !found || len(prefix) > len(best) {
					best, found = prefix, true
				}
			}
		}
		return best, found
	}
	var out []string
	for _, pkg := range sortedKeys(graph) {
		r, ok := rule(pkg)
		if !ok && !isLeaf(pkg) {
			out = append(out, fmt.Sprintf("%s: no import rule names it (add it to importRules in layering_test.go and docs/design.md)", pkg))
			continue
		}
		for _, imp := range graph[pkg] {
			switch {
			case pkg != "" && under(imp, "broker/tools") && !under(pkg, "broker/tools"):
				out = append(out, pkg+" imports "+imp+": only main imports broker/tools/")
			case under(pkg, "fetcher") && under(imp, "zkcoord"):
				out = append(out, pkg+" imports "+imp+": the fetcher never touches ZooKeeper")
			case isLeaf(pkg):
				if !isLeaf(imp) {
					out = append(out, pkg+" imports "+imp+": a shared leaf imports only other leaves")
				}
			case isLeaf(imp):
			default:
				allowed := false
				for _, a := range importRules[r] {
					if under(imp, a) {
						allowed = true
						break
					}
				}
				if !allowed {
					out = append(out, fmt.Sprintf("%s imports %s: not in its allow-list (rule %q: %v)", pkg, imp, r, importRules[r]))
				}
			}
		}
	}
	return out
}

// TestImportGraphLayering checks the layering of docs/design.md ("Layering") on the import graph
// of the module's packages as built (test files are not part of it), read with `go list -json`.
func TestImportGraphLayering(t *testing.T) {
	graph := moduleImportGraph(t)
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages of %s, expected the whole module", len(graph), modulePath)
	}
	for _, v := range layeringViolations(graph) {
		t.Error(v)
	}
	for _, l := range leaves {
		if _, ok := graph[l]; !ok {
			t.Errorf("shared leaf %s not found", l)
		}
	}
}

// TestLayeringRulesCatchViolations feeds the checker planted graphs: each edge below crosses the
// layers and must be reported, and the allowed graph beside them must pass.
func TestLayeringRulesCatchViolations(t *testing.T) {
	allowed := map[string][]string{
		"":                {"broker", "broker/tools/admintool"},
		"broker":          {"replicamanager", "broker/kproto"},
		"fetcher":         {"logstore", "broker/kproto"},
		"logstore":        {"logstore/record", "broker/config/configdef"},
		"logstore/record": nil,
		"broker/kproto":   {"logstore/record"},
		"zkcoord/zkdata":  {"logstore/record"},
	}
	if v := layeringViolations(allowed); len(v) != 0 {
		t.Fatalf("allowed graph reported: %v", v)
	}
	for _, c := range []struct{ pkg, imp string }{
		{"fetcher", "zkcoord"},                   // the fetcher never touches ZooKeeper
		{"broker", "broker/tools/admintool"},     // only main imports the tools
		{"logstore", "replicamanager"},           // a lower layer importing upwards
		{"logstore/record", "logstore"},          // a leaf importing a non-leaf
		{"zkcoord/zkdata", "logstore"},           // the data model pulling in the storage engine
		{"replicamanager", "broker"},             // nothing below broker imports it
		{"newfolder", "logstore"},                // a package no rule places
		{"broker/groupcoord", "broker/replview"}, // a sibling outside the allow-list
	} {
		g := map[string][]string{c.pkg: {c.imp}}
		if v := layeringViolations(g); len(v) == 0 {
			t.Errorf("%s importing %s was not reported", c.pkg, c.imp)
		}
	}
}

// moduleImportGraph returns, for each package of the module (path relative to the module, ""
// for the root), the packages of the module it imports (non-test files).
func moduleImportGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	rel := func(p string) (string, bool) {
		if p == modulePath {
			return "", true
		}
		r, ok := strings.CutPrefix(p, modulePath+"/")
		return r, ok
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkg, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		graph[pkg] = nil
		for _, imp := range p.Imports {
			if r, ok := rel(imp); ok {
				graph[pkg] = append(graph[pkg], r)
			}
		}
	}
	return graph
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
