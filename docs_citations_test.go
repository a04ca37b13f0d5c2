package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The repository is self-contained: code comments, scripts, scenario scripts and tests cite only
// documents of its own docs/ directory (docs/design.md, "Conventions"). This test reads every .go,
// .sh, .yml/.yaml, Dockerfile and testdata/*.txt file of the tree and fails on
//   - a citation of a reference document that is not in the repository (the patterns are in
//     testdata/citations/outside.txt), or a bare reliability or performance document name
//     without its docs/ prefix;
//   - a docs/X.md whose file does not exist;
//   - a docs/X.md §N whose file has no numbered section "## N." (ranges §N–M check both ends).

// outsideCitationsFile holds the patterns of citations of documents outside the repository,
// and outsideCasesFile lines the checker must reject. They are data, not code, so that no source
// file of the tree names those documents; the walk below skips their directory.
const (
	citationsTestdata    = "testdata/citations"
	outsideCitationsFile = citationsTestdata + "/outside.txt"
	outsideCasesFile     = citationsTestdata + "/cases.txt"
)

// outsideCitations match citations of documents outside the repository, wherever they appear.
var outsideCitations = mustLoadOutsideCitations(outsideCitationsFile)

// mustLoadOutsideCitations reads one regular expression per line (# starts a comment).
func mustLoadOutsideCitations(path string) []*regexp.Regexp {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var out []*regexp.Regexp
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, regexp.MustCompile(line))
	}
	return out
}

var (
	docsCitation = regexp.MustCompile(`docs/([A-Za-z0-9_.-]+\.md)`)
	// sectionRef is one §N or §N–M (also §N-M and §N–§M) after a docs/X.md citation.
	sectionRef = regexp.MustCompile(`§\s*(\d+)(?:\.\d+)?(?:\s*[–-]\s*§?\s*(\d+))?`)
	numberedH2 = regexp.MustCompile(`^##\s+(\d+)\.`)
)

// docIndex answers whether docs/<name> exists and which numbered sections it has.
type docIndex interface {
	exists(name string) bool
	sections(name string) map[int]bool
}

// citationProblems lists the citation problems of one file's text (path is for messages).
func citationProblems(path, text string, docs docIndex) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s:%d", path, i+1)
		for _, re := range outsideCitations {
			if m := re.FindString(line); m != "" {
				out = append(out, fmt.Sprintf("%s: cites a document outside the repository (%q): cite docs/<file>.md instead: %s",
					where, strings.TrimSpace(m), strings.TrimSpace(line)))
			}
		}
		locs := docsCitation.FindAllStringSubmatchIndex(line, -1)
		for j, loc := range locs {
			name := line[loc[2]:loc[3]]
			if !docs.exists(name) {
				out = append(out, fmt.Sprintf("%s: cites docs/%s, which does not exist", where, name))
				continue
			}
			// The section references that belong to this citation: up to the next citation or
			// the end of the parenthesis, clause or line.
			rest := line[loc[1]:]
			if j+1 < len(locs) {
				rest = line[loc[1]:locs[j+1][0]]
			}
			if k := strings.IndexAny(rest, ");:\"`"); k >= 0 {
				rest = rest[:k]
			}
			secs := docs.sections(name)
			for _, m := range sectionRef.FindAllStringSubmatch(rest, -1) {
				nums := []string{m[1]}
				if m[2] != "" {
					nums = append(nums, m[2])
				}
				for _, n := range nums {
					v, _ := strconv.Atoi(n)
					if !secs[v] {
						out = append(out, fmt.Sprintf("%s: cites docs/%s §%d, which has no section \"## %d.\"", where, name, v, v))
					}
				}
			}
		}
	}
	return out
}

// repoDocs is the docIndex of the repository's docs/ directory.
type repoDocs struct {
	dir   string
	cache map[string]map[int]bool
}

func (d *repoDocs) exists(name string) bool {
	st, err := os.Stat(filepath.Join(d.dir, name))
	return err == nil && !st.IsDir()
}

func (d *repoDocs) sections(name string) map[int]bool {
	if s, ok := d.cache[name]; ok {
		return s
	}
	s := map[int]bool{}
	if f, err := os.Open(filepath.Join(d.dir, name)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := numberedH2.FindStringSubmatch(sc.Text()); m != nil {
				v, _ := strconv.Atoi(m[1])
				s[v] = true
			}
		}
		f.Close()
	}
	d.cache[name] = s
	return s
}

// citedFile reports whether the test reads path (slash-separated, relative to the root).
func citedFile(path string) bool {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".go"), strings.HasSuffix(base, ".sh"),
		strings.HasSuffix(base, ".yml"), strings.HasSuffix(base, ".yaml"),
		strings.HasPrefix(base, "Dockerfile"):
		return true
	case strings.HasSuffix(base, ".txt"):
		// Scenario scripts; fuzz corpora under testdata/fuzz are data.
		return strings.Contains("/"+path, "/testdata/") && !strings.Contains("/"+path, "/testdata/fuzz/")
	}
	return false
}

func TestDocsCitationsCheckerCatchesEachKind(t *testing.T) {
	docs := fakeDocs{"kafka-facts.md": {1: true, 2: true, 4: true, 5: true}, "reliability.md": {}, "performance.md": {}, "design.md": {}}
	cases := []struct {
		line string
		bad  int
	}{
		{"// Config (docs/kafka-facts.md §4).", 0},
		{"// (S15–S23 and K1 of docs/requirements.md; docs/kafka-facts.md §4–5)", 1}, // requirements.md is absent here
		{"// (docs/kafka-facts.md §4–5)", 0},
		{"// (docs/kafka-facts.md §1, §2 and §4)", 0},
		{"// docs/kafka-facts.md §2: partitions go offline", 0},
		{"// (docs/kafka-facts.md §3)", 1},
		{"// (docs/kafka-facts.md §2–3)", 1},
		{"// (docs/reliability.md, fault matrix row 8)", 0},
		{"// (docs/reliability.md §6)", 1},
		{"// see docs/nowhere.md", 1},
		{"# default docs/performance.md", 0},
		{"// docs/design.md, \"Conventions\"", 0},
		{"// see README.md", 0},
	}
	b, err := os.ReadFile(outsideCasesFile)
	if err != nil {
		t.Fatal(err)
	}
	outside := 0
	for _, l := range strings.Split(string(b), "\n") {
		n, line, ok := strings.Cut(l, "\t")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		bad, err := strconv.Atoi(n)
		if err != nil {
			t.Fatalf("%s: %q: %v", outsideCasesFile, l, err)
		}
		cases = append(cases, struct {
			line string
			bad  int
		}{line, bad})
		outside++
	}
	if outside < 10 {
		t.Fatalf("%s: only %d cases read", outsideCasesFile, outside)
	}
	for _, c := range cases {
		got := citationProblems("x.go", c.line, docs)
		if len(got) != c.bad {
			t.Errorf("%q: %d problems, want %d: %q", c.line, len(got), c.bad, got)
		}
	}
	if !citedFile("replicamanager/testdata/s04_commit.txt") || citedFile("logstore/testdata/fuzz/FuzzX/abc.txt") ||
		!citedFile("scripts/docker/Dockerfile") || !citedFile("docker-compose.yml") || citedFile("README.md") {
		t.Error("citedFile selects the wrong files")
	}
}

type fakeDocs map[string]map[int]bool

func (f fakeDocs) exists(name string) bool           { _, ok := f[name]; return ok }
func (f fakeDocs) sections(name string) map[int]bool { return f[name] }

func TestDocsCitationsStayInsideTheRepository(t *testing.T) {
	docs := &repoDocs{dir: "docs", cache: map[string]map[int]bool{}}
	byDir := map[string][]string{} // top-level directory ("." for the root) → files
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		path = filepath.ToSlash(path)
		if d.IsDir() {
			if path != "." && strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" {
				return filepath.SkipDir // .git and other tool directories
			}
			return nil
		}
		// The checker's own data and this file's fixtures (docs/X.md, docs/nowhere.md) are skipped.
		if !citedFile(path) || strings.HasPrefix(path, citationsTestdata+"/") || path == "docs_citations_test.go" {
			return nil
		}
		top := "."
		if i := strings.IndexByte(path, '/'); i >= 0 {
			top = path[:i]
		}
		byDir[top] = append(byDir[top], path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byDir["broker"]) == 0 || len(byDir["replicamanager"]) == 0 {
		t.Fatalf("walked the wrong tree: %v", byDir)
	}
	tops := make([]string, 0, len(byDir))
	for top := range byDir {
		tops = append(tops, top)
	}
	sort.Strings(tops)
	for _, top := range tops {
		t.Run(top, func(t *testing.T) {
			for _, path := range byDir[top] {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range citationProblems(path, string(b), docs) {
					t.Error(p)
				}
			}
		})
	}
}
