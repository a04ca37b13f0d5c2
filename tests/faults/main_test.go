package faults

import (
	"fmt"
	"testing"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// TestMain prints the run's parameters in one line that scripts/faults.sh copies into
// docs/reliability.md, so the table never states parameters the run did not use.
func TestMain(m *testing.M) {
	fmt.Printf("faults-parameters: zookeeper.session.timeout.ms=%d replica.lag.time.max.ms=%d min.insync.replicas=%s partitions=%d replication=%d producer_rate=%d/s\n",
		sessionTimeout.Milliseconds(), replicaLagMax.Milliseconds(), minISR, topicPartitions, replication, producerRate)
	cluster.Main(m)
}
