package broker

import (
	rm "github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// The real implementations satisfy the consumer-side interfaces main.go wires in.
var (
	_ Replicas = (*rm.Requests)(nil)
	_ Admin    = (*zkcoord.Coordinator)(nil)
)
