package logstore

import (
	"os"
	"testing"
)

// TestMain turns on the epoch cache's invariant checks: a broken invariant panics.
func TestMain(m *testing.M) {
	epochInvariants = true
	os.Exit(m.Run())
}
