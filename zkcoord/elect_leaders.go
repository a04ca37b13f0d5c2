package zkcoord

import (
	"context"
	"strconv"
	"strings"

	"github.com/isrbroker/isrbroker/zkcoord/controller"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Leader elections requested by an admin client (ElectLeaders, KIP-460) and the unclean
// election that follows unclean.leader.election.enable turned on dynamically: the
// coordinator's entry points into the controller (zkcoord/controller/elect_leaders.go).

// Election results of ElectLeaders, mapped to Kafka error codes by the broker.
type ElectionResult = controller.ElectionResult

const (
	ElectionOK                = controller.ElectionOK
	ElectionNotNeeded         = controller.ElectionNotNeeded
	ElectionPreferredNotAvail = controller.ElectionPreferredNotAvail
	ElectionEligibleNotAvail  = controller.ElectionEligibleNotAvail
	ElectionTopicBeingDeleted = controller.ElectionTopicBeingDeleted
)

// ElectLeaders runs a preferred (unclean false) or unclean election for partitions (nil:
// every partition) on this broker's controller. ErrNotController when it is not the active
// controller.
func (c *Coordinator) ElectLeaders(ctx context.Context, partitions []TopicPartition, unclean bool) (map[TopicPartition]ElectionResult, error) {
	c.mu.Lock()
	ct, closed := c.ctl, c.closed
	c.mu.Unlock()
	if ct == nil || closed {
		return nil, ErrNotController
	}
	return ct.ElectLeaders(ctx, partitions, unclean)
}

// watchUncleanEnable feeds the dynamic config listener's unclean.leader.election.enable=true
// into the controller (Kafka's TopicConfigHandler → enableTopicUncleanLeaderElection, and
// the dynamic broker config's enableDefaultUncleanLeaderElection): a topic entity triggers
// the election of that topic's offline partitions, this broker's or the default broker
// entity every topic's. Only the active controller acts on it; the election re-reads the
// configs from ZooKeeper.
func (c *Coordinator) watchUncleanEnable(ct *controller.Controller) {
	c.ConfigListener.OnDynamicConfig(func(entity string, cfg map[string]string) {
		v, ok := cfg["unclean.leader.election.enable"]
		if !ok {
			return
		}
		if on, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil || !on {
			return
		}
		kind, name, _ := strings.Cut(entity, "/")
		switch {
		case kind == "topics" && zkdata.ValidTopicName(name):
			ct.EnableUncleanElection(name)
		case kind == "brokers":
			ct.EnableUncleanElection("")
		}
	})
}
