package config

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the configdef table")

// docs/configuration.md is generated from the configdef table; this test fails when the file
// is stale. `go test ./broker/config -run TestConfigurationDoc -update` rewrites it.
func TestConfigurationDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	want := configdef.Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale: run go test ./broker/config -run TestConfigurationDoc -update", path)
	}
}
