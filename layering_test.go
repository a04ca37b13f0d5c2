package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const modulePath = "github.com/isrbroker/isrbroker"

// TestImportGraphLayering checks the layering of docs/design.md ("Layering") on the import graph
// of the module's packages as built (test files are not part of it), read with `go list -json`:
//   - no package outside broker/ and the root package imports a package under broker/ (the
//     Kafka-protocol helpers the lower layers share live in logstore/kproto);
//   - the bottom layer (logstore/configdef, logstore/kproto, logstore/ratelog, replicamanager/replica) imports
//     nothing of the repository;
//   - the fetcher never touches ZooKeeper: nothing under zkcoord/.
func TestImportGraphLayering(t *testing.T) {
	graph := moduleImportGraph(t)
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages of %s, expected the whole module", len(graph), modulePath)
	}
	under := func(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }
	bottom := map[string]bool{"logstore/configdef": true, "logstore/kproto": true, "logstore/ratelog": true, "replicamanager/replica": true}
	var violations []string
	for _, pkg := range sortedKeys(graph) {
		for _, imp := range graph[pkg] {
			switch {
			case pkg != "" && !under(pkg, "broker") && under(imp, "broker"):
				violations = append(violations, pkg+" imports "+imp+": nothing outside broker/ and the root imports broker/")
			case bottom[pkg]:
				violations = append(violations, pkg+" imports "+imp+": the bottom layer imports nothing of the repository")
			case under(pkg, "fetcher") && under(imp, "zkcoord"):
				violations = append(violations, pkg+" imports "+imp+": the fetcher never touches ZooKeeper")
			}
		}
	}
	for _, v := range violations {
		t.Error(v)
	}
	for pkg := range bottom {
		if _, ok := graph[pkg]; !ok {
			t.Errorf("bottom-layer package %s not found", pkg)
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
