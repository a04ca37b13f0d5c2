package faults

import (
	"testing"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

func TestMain(m *testing.M) { cluster.Main(m) }
