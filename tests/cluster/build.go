package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds `go build` of the broker; a cold build on a shared 2-core box takes a minute.
const buildTimeout = 5 * time.Minute

var build struct {
	once sync.Once
	path string // the binary
	dir  string // temp dir holding it, removed by Main
	err  error
}

// modulePath is the broker's Go module.
const modulePath = "github.com/isrbroker/isrbroker"

// ModuleRoot walks up from the working directory to the directory whose go.mod declares the
// broker's module (nested test modules such as tests/clients have their own go.mod).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(data, modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cluster: no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func declaresModule(gomod []byte, path string) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}

// Binary returns the path of the isrbroker binary, building it once per test process
// (`go build -o <tmp>/isrbroker <module root>`). ISRBROKER_BIN names a prebuilt binary instead;
// ISRBROKER_RACE=1 builds with the race detector. A failed build fails every test that asks.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if p := os.Getenv("ISRBROKER_BIN"); p != "" {
			build.path, build.err = filepath.Abs(p)
			return
		}
		root, err := ModuleRoot()
		if err != nil {
			build.err = err
			return
		}
		dir, err := os.MkdirTemp("", "isrbroker-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.dir = dir
		out := filepath.Join(dir, "isrbroker")
		args := []string{"build", "-o", out}
		if os.Getenv("ISRBROKER_RACE") == "1" {
			args = append(args, "-race")
		}
		args = append(args, ".")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		start := time.Now()
		if err := cmd.Run(); err != nil {
			build.err = fmt.Errorf("cluster: go build of isrbroker in %s failed: %v\n%s", root, err, buf.String())
			return
		}
		build.path = out
		fmt.Fprintf(os.Stderr, "cluster: built isrbroker in %v\n", time.Since(start).Round(time.Millisecond))
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// Main runs a test package's tests (call it from TestMain) and removes the binary built for
// them afterwards.
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	os.Exit(code)
}
