package integration

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// sortedCopy returns ids sorted ascending.
func sortedCopy(ids []int32) []int32 {
	out := append([]int32(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// waitFullISR waits until every partition of topic has all its replicas in the ISR (state znode).
func waitFullISR(t *testing.T, c *cluster.Cluster, topic string, assignment map[int32][]int32, timeout time.Duration) {
	t.Helper()
	cluster.WaitFor(t, timeout, func() (bool, string) {
		for p, replicas := range assignment {
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if !reflect.DeepEqual(sortedCopy(st.ISR), sortedCopy(replicas)) {
				return false, fmt.Sprintf("%s-%d isr %v, replicas %v", topic, p, st.ISR, replicas)
			}
		}
		return true, ""
	})
}
