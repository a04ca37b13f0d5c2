package zkcoord

import (
	"context"

	"github.com/isrbroker/isrbroker/zkcoord/controller"
)

// KIP-455 reassignments through the protocol (AlterPartitionReassignments and
// ListPartitionReassignments): the requests go to this broker's controller, which answers
// ErrNotController unless it is the active one.

// Outcomes of AlterPartitionReassignments per partition.
var (
	ErrNoReassignmentInProgress = controller.ErrNoReassignmentInProgress
	ErrInvalidReassignment      = controller.ErrInvalidReassignment
	ErrUnknownPartition         = controller.ErrUnknownPartition
)

// OngoingReassignment is one partition being reassigned: all replicas, adding, removing.
type OngoingReassignment = controller.OngoingReassignment

func (c *Coordinator) activeController() (*controller.Controller, error) {
	c.mu.Lock()
	ct, closed := c.ctl, c.closed
	c.mu.Unlock()
	if ct == nil || closed {
		return nil, ErrNotController
	}
	return ct, nil
}

// AlterPartitionReassignments starts, replaces or (nil target) cancels reassignments (see
// controller.Controller.AlterPartitionReassignments).
func (c *Coordinator) AlterPartitionReassignments(ctx context.Context, targets map[TopicPartition][]int32) (map[TopicPartition]error, error) {
	ct, err := c.activeController()
	if err != nil {
		return nil, err
	}
	return ct.AlterPartitionReassignments(ctx, targets)
}

// ListPartitionReassignments lists the partitions of tps (nil: all) being reassigned.
func (c *Coordinator) ListPartitionReassignments(ctx context.Context, tps []TopicPartition) (map[TopicPartition]OngoingReassignment, error) {
	ct, err := c.activeController()
	if err != nil {
		return nil, err
	}
	return ct.ListPartitionReassignments(ctx, tps)
}
