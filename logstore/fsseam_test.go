package logstore

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// The file-system seam must not drift (fs.go): a non-test file of the package that calls
// package os's file functions directly, holds an *os.File outside the raw-descriptor paths,
// reaches under a File for its descriptor outside them, or makes a system call outside them
// would bypass the error injection of the fault tests (fsfault_test.go).

// osFileCalls are package os's functions that touch the file system.
var osFileCalls = map[string]bool{
	"Open": true, "OpenFile": true, "Create": true, "CreateTemp": true, "NewFile": true,
	"Rename": true, "Remove": true, "RemoveAll": true, "Truncate": true, "Link": true, "Symlink": true,
	"Readlink": true, "ReadDir": true, "ReadFile": true, "WriteFile": true, "Mkdir": true,
	"MkdirAll": true, "MkdirTemp": true, "Stat": true, "Lstat": true, "Chtimes": true,
	"Chmod": true, "Chown": true, "Lchown": true, "Chdir": true, "DirFS": true, "CopyFS": true,
}

// Files that may hold an *os.File: the seam itself, and the paths that need a descriptor
// (direct I/O, sync_file_range) and logstore/record's regions, which are handed the
// descriptors they send from (and open, rename or remove nothing). Files that may take a File's descriptor: those, plus the
// sendfile regions of the read path. Files that may make system calls: the two raw paths.
var (
	seamOSFileAllowed  = map[string]bool{"fs.go": true, "directio.go": true, "directio_linux.go": true, "directio_other.go": true, "writeback.go": true, "writeback_linux.go": true, "writeback_other.go": true, "record/fileregion.go": true}
	seamDescAllowed    = map[string]bool{"fs.go": true, "regions.go": true, "writeback.go": true}
	seamSyscallAllowed = map[string]bool{"directio_linux.go": true, "writeback_linux.go": true}
)

// seamViolations lists the bypasses of the seam in one file's source.
func seamViolations(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	base := filepath.ToSlash(filepath.Clean(name)) // relative to logstore/
	if base == "fs.go" {
		return nil, nil
	}
	var out []string
	add := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	for _, imp := range f.Imports {
		if p := strings.Trim(imp.Path.Value, `"`); p == "io/ioutil" {
			add(imp, "imports io/ioutil")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok {
				switch {
				case id.Name == "os" && osFileCalls[sel.Sel.Name]:
					add(x, "calls os."+sel.Sel.Name+" (use the FS of fs.go)")
				case (id.Name == "syscall" || id.Name == "unix") && !seamSyscallAllowed[base]:
					add(x, "calls "+id.Name+"."+sel.Sel.Name+" outside the raw-descriptor paths")
				case id.Name == "filepath" && (sel.Sel.Name == "Walk" || sel.Sel.Name == "WalkDir" || sel.Sel.Name == "Glob"):
					add(x, "calls filepath."+sel.Sel.Name+" (use FS.ReadDir)")
				}
			}
			if sel.Sel.Name == "OSFile" && len(x.Args) == 0 && !seamDescAllowed[base] {
				add(x, "takes a File's descriptor outside the sendfile and writeback paths")
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "os" && x.Sel.Name == "File" && !seamOSFileAllowed[base] {
				add(x, "uses *os.File (use File of fs.go)")
			}
		}
		return true
	})
	return out, nil
}

func TestFSSeamNoDirectFileCalls(t *testing.T) {
	var found []string
	for _, dir := range []string{".", "record"} {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			v, err := seamViolations(token.NewFileSet(), name, src)
			if err != nil {
				t.Fatal(err)
			}
			found = append(found, v...)
		}
	}
	sort.Strings(found)
	for _, v := range found {
		t.Error(v)
	}
}

// The scan finds each kind of bypass (so TestFSSeamNoDirectFileCalls can fail).
func TestFSSeamScanFindsBypasses(t *testing.T) {
	src := `package logstore
import ("os"; "syscall"; "path/filepath")
func a() { os.Rename("a", "b"); os.Remove("x"); _, _ = os.ReadFile("f") }
func b(f *os.File) { syscall.Fsync(0); filepath.WalkDir(".", nil) }
func c(f File) { f.OSFile().Sync() }
`
	v, err := seamViolations(token.NewFileSet(), "segment.go", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"os.Rename", "os.Remove", "os.ReadFile", "*os.File", "syscall.Fsync", "filepath.WalkDir", "descriptor"} {
		hit := false
		for _, s := range v {
			hit = hit || strings.Contains(s, want)
		}
		if !hit {
			t.Errorf("the scan misses %s: %q", want, v)
		}
	}
	if v, _ := seamViolations(token.NewFileSet(), "fs.go", src); len(v) != 0 {
		t.Errorf("fs.go is the seam itself, got %q", v)
	}
}

// Open keeps the OS FS: production runs the calls it always ran.
func TestFSSeamDefaultIsOS(t *testing.T) {
	lg, _ := testLogger()
	m, err := Open([]string{filepath.Join(t.TempDir(), "d0")}, 1, testConfig(), lg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.fs.(osFS); !ok {
		t.Fatalf("the Manager's FS is %T", m.fs)
	}
	l.mu.RLock()
	f := l.segs.active().f
	l.mu.RUnlock()
	if _, ok := l.fs.(osFS); !ok || directOSFile(f) == nil {
		t.Fatalf("the log's FS is %T, its segment file %T", l.fs, f)
	}
}

// The error FS fails exactly the k-th call of the kind whose path has the suffix.
func TestFaultFSFailsTheKthMatchingCall(t *testing.T) {
	dir := t.TempDir()
	f := newFaultFS()
	f.arm(faultRule{op: opWrite, suffix: ".log", k: 2, errno: syscall.ENOSPC})
	for _, name := range []string{"a.index", "a.log", "b.index", "b.log", "c.log"} {
		err := writeFileFS(f, filepath.Join(dir, name), []byte("0123456789"), 0o644)
		if failed := err != nil; failed != (name == "b.log") {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("%s: %v, want ENOSPC", name, err)
		}
	}
	counts := f.disarm()
	if counts[opWrite] != 5 || counts[opCreate] != 5 || counts[opClose] != 5 {
		t.Errorf("counts %v", counts)
	}
	if c, _, ok := f.firedCall(); !ok || filepath.Base(c.path) != "b.log" || c.op != opWrite {
		t.Errorf("fired %v %v", c, ok)
	}
	// the failed write wrote half its bytes, as a full disk may
	if b, err := os.ReadFile(filepath.Join(dir, "b.log")); err != nil || string(b) != "01234" {
		t.Errorf("b.log holds %q (%v)", b, err)
	}
}
