package faults

import (
	"os"
	"testing"
)

// fullMatrix gates the full fault matrix of docs/reliability.md: those scenarios
// are long and only run from scripts/faults.sh, never in the README test command.
func fullMatrix(t *testing.T) {
	t.Helper()
	if os.Getenv("ISRBROKER_FAULTS_FULL") != "1" {
		t.Skip("full fault matrix: set ISRBROKER_FAULTS_FULL=1 (scripts/faults.sh)")
	}
}
