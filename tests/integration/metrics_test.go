package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// activeControllerCount is kafka.controller:type=KafkaController,name=ActiveControllerCount in
// the metrics endpoint's Prometheus naming.
const activeControllerCount = "kafka_controller_kafkacontroller_activecontrollercount"

// The metrics endpoint (metrics.listen) of every broker answers in Prometheus text, and
// ActiveControllerCount sums to exactly 1 across the cluster, on the broker in /controller
// (docs/kafka-facts.md §9).
func TestMetricsEndpoint_ActiveControllerCountSumsToOne(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	ctrl, _ := c.ZK.WaitController(30 * time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		sum := 0.0
		for _, id := range c.IDs() {
			text, err := c.Broker(id).Metrics()
			if err != nil {
				return false, fmt.Sprintf("broker %d metrics: %v", id, err)
			}
			vs := cluster.MetricSamples(text, activeControllerCount)
			if len(vs) != 1 {
				return false, fmt.Sprintf("broker %d: %d samples of %s", id, len(vs), activeControllerCount)
			}
			if want := map[bool]float64{true: 1, false: 0}[id == ctrl]; vs[0] != want {
				return false, fmt.Sprintf("broker %d: %s = %v, want %v (controller is %d)", id, activeControllerCount, vs[0], want, ctrl)
			}
			sum += vs[0]
		}
		return sum == 1, fmt.Sprintf("sum of %s = %v", activeControllerCount, sum)
	})
}
