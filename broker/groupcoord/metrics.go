package groupcoord

import "github.com/rcrowley/go-metrics"

// Metric names (Kafka 2.4: GroupMetadataManager's yammer gauges, and the
// "group-coordinator-metrics" sensors OffsetCommits, OffsetExpired, OffsetDeletions and
// CompletedRebalances, each a meter of a count and a rate).
const (
	MetricNumGroups                    = "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups"
	MetricNumOffsets                   = "kafka.coordinator.group:type=GroupMetadataManager,name=NumOffsets"
	MetricNumGroupsStable              = "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsStable"
	MetricNumGroupsPreparingRebalance  = "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsPreparingRebalance"
	MetricNumGroupsCompletingRebalance = "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsCompletingRebalance"
	MetricNumGroupsEmpty               = "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsEmpty"
	MetricNumGroupsDead                = "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsDead"
	MetricOffsetCommits                = "kafka.server:type=group-coordinator-metrics,name=OffsetCommits"
	MetricOffsetExpired                = "kafka.server:type=group-coordinator-metrics,name=OffsetExpired"
	MetricOffsetDeletions              = "kafka.server:type=group-coordinator-metrics,name=OffsetDeletions"
	MetricCompletedRebalances          = "kafka.server:type=group-coordinator-metrics,name=CompletedRebalances"
)

type coordMetrics struct {
	offsetCommits       metrics.Meter
	offsetExpired       metrics.Meter
	offsetDeletions     metrics.Meter
	completedRebalances metrics.Meter
}

func newCoordMetrics(gm *groupMetadataManager, reg metrics.Registry) *coordMetrics {
	countState := func(s groupState) func() int64 {
		return func() int64 {
			var n int64
			for _, g := range gm.allGroups() {
				g.mu.Lock()
				if g.state == s {
					n++
				}
				g.mu.Unlock()
			}
			return n
		}
	}
	gauges := map[string]func() int64{
		MetricNumGroups: func() int64 { return int64(len(gm.allGroups())) },
		MetricNumOffsets: func() int64 {
			var n int64
			for _, g := range gm.allGroups() {
				g.mu.Lock()
				n += int64(len(g.offsets.committed))
				g.mu.Unlock()
			}
			return n
		},
		MetricNumGroupsStable:              countState(stateStable),
		MetricNumGroupsPreparingRebalance:  countState(statePreparingRebalance),
		MetricNumGroupsCompletingRebalance: countState(stateCompletingRebalance),
		MetricNumGroupsEmpty:               countState(stateEmpty),
		MetricNumGroupsDead:                countState(stateDead),
	}
	for name, f := range gauges {
		reg.Unregister(name)
		_ = reg.Register(name, metrics.NewFunctionalGauge(f))
	}
	return &coordMetrics{
		offsetCommits:       metrics.GetOrRegisterMeter(MetricOffsetCommits, reg),
		offsetExpired:       metrics.GetOrRegisterMeter(MetricOffsetExpired, reg),
		offsetDeletions:     metrics.GetOrRegisterMeter(MetricOffsetDeletions, reg),
		completedRebalances: metrics.GetOrRegisterMeter(MetricCompletedRebalances, reg),
	}
}
