package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// One spelling per log field (docs/logging.md): this test reads every non-test .go file of the
// module and collects the logrus field keys — the string-literal first argument of
// WithField, the keys of logrus.Fields (and map[string]any) literals given to WithFields —
// and the values of the "component" field. Each must be listed in docs/logging.md, so that a
// new spelling of a concept (hw next to highWatermark, broker next to brokerId) cannot creep in.
// A key that is not a string literal is an error too: it would hide from this check.

type logKeyUse struct {
	key, where string
}

// scanLogKeys returns the field keys and the component names used in the Go files under root.
func scanLogKeys(t *testing.T, root string) (keys, components []logKeyUse, problems []string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			if path != root {
				// A nested module (tests/clients) is not part of this one.
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		lit := func(e ast.Expr) (string, bool) {
			bl, ok := e.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(bl.Value)
			return s, err == nil
		}
		pos := func(n ast.Node) string { return fset.Position(n.Pos()).String() }
		fieldsMap := func(cl *ast.CompositeLit) {
			for _, e := range cl.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				k, ok := lit(kv.Key)
				if !ok {
					problems = append(problems, pos(kv)+": log field key is not a string literal")
					continue
				}
				keys = append(keys, logKeyUse{k, pos(kv)})
				if k == "component" {
					if v, ok := lit(kv.Value); ok {
						components = append(components, logKeyUse{v, pos(kv)})
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				switch {
				case sel.Sel.Name == "WithField" && len(x.Args) == 2:
					k, ok := lit(x.Args[0])
					if !ok {
						problems = append(problems, pos(x)+": WithField key is not a string literal")
						return true
					}
					keys = append(keys, logKeyUse{k, pos(x)})
					if v, ok := lit(x.Args[1]); ok && k == "component" {
						components = append(components, logKeyUse{v, pos(x)})
					}
				case sel.Sel.Name == "WithFields" && len(x.Args) == 1:
					// logrus.Fields literals are seen below; a plain map literal here.
					if cl, ok := x.Args[0].(*ast.CompositeLit); ok {
						if _, isMap := cl.Type.(*ast.MapType); isMap {
							fieldsMap(cl)
						}
					}
				}
			case *ast.CompositeLit:
				if sel, ok := x.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Fields" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "logrus" {
						fieldsMap(x)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, components, problems
}

// documentedLogNames reads the backquoted names of the first cell of each table row of a
// "## " section of docs/logging.md (a row may list several: `from`, `to`).
func documentedLogNames(t *testing.T, doc, section string) map[string]bool {
	t.Helper()
	firstCell := regexp.MustCompile(`^\|([^|]*)\|`)
	quoted := regexp.MustCompile("`([^`]+)`")
	names := map[string]bool{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == section
			continue
		}
		if m := firstCell.FindStringSubmatch(line); in && m != nil {
			for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
				names[q[1]] = true
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("docs/logging.md: no table rows in section %q", section)
	}
	return names
}

func TestLogFieldKeysAreDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("docs", "logging.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	fields := documentedLogNames(t, doc, "Fields")
	comps := documentedLogNames(t, doc, "Components")

	keys, components, problems := scanLogKeys(t, ".")
	if len(keys) < 100 {
		t.Fatalf("found only %d log field keys: the scan is broken", len(keys))
	}
	for _, p := range problems {
		t.Error(p)
	}
	used := map[string]bool{}
	for _, k := range keys {
		used[k.key] = true
		if !fields[k.key] {
			t.Errorf("%s: log field %q is not listed in docs/logging.md (\"Fields\"): use the documented spelling or add it", k.where, k.key)
		}
	}
	for _, c := range components {
		if !comps[c.key] {
			t.Errorf("%s: component %q is not listed in docs/logging.md (\"Components\")", c.where, c.key)
		}
	}
	// A documented key no code logs is reported, not failed: branches merged in any order may
	// document a key before its code arrives. The keys the formatter and logrus add themselves
	// are documented without a WithField.
	builtin := map[string]bool{"time": true, "level": true, "msg": true, "error": true}
	var stale []string
	for k := range fields {
		if !used[k] && !builtin[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Logf("docs/logging.md lists fields no code logs: %v", stale)
	}
}

// The scan must see what it claims to: a file with each form of key, and a key that hides in
// a variable.
func TestScanLogKeysFindsEveryForm(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import "github.com/sirupsen/logrus"

func f(l logrus.FieldLogger, k string) {
	l.WithField("hw", 1).WithFields(logrus.Fields{"leo": 2, "component": "fetcher"}).Info("x")
	l.WithFields(map[string]any{"truncateTo": 3}).Info("y")
	l.WithField(k, 4).Info("z")
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, comps, problems := scanLogKeys(t, dir)
	var got []string
	for _, k := range keys {
		got = append(got, k.key)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "component,hw,leo,truncateTo" {
		t.Errorf("keys %v", got)
	}
	if len(comps) != 1 || comps[0].key != "fetcher" {
		t.Errorf("components %v", comps)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "not a string literal") {
		t.Errorf("problems %v", problems)
	}
}
