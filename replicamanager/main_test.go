package replicamanager

import (
	"os"
	"testing"

	"github.com/isrbroker/isrbroker/replicamanager/replica"
)

// TestMain turns on the replication core's invariant checks: a broken invariant panics.
func TestMain(m *testing.M) {
	replica.Invariants = true
	os.Exit(m.Run())
}
