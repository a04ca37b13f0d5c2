package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/zkcoord"
)

// adminErrorCode maps an error of Admin (zkcoord's sentinels) to the Kafka code answered
// in CreateTopics/DeleteTopics/Metadata, with a message for the versions that carry one.
func adminErrorCode(err error) (int16, string) {
	if err == nil {
		return 0, ""
	}
	var ke *kerr.Error
	switch {
	case errors.Is(err, zkcoord.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code, err.Error()
	case errors.Is(err, zkcoord.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, err.Error()
	case errors.Is(err, zkcoord.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code, err.Error()
	case errors.Is(err, zkcoord.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code, err.Error()
	case errors.Is(err, zkcoord.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code, err.Error()
	case errors.Is(err, zkcoord.ErrReassignmentInProgress):
		return kerr.ReassignmentInProgress.Code, err.Error()
	case errors.Is(err, zkcoord.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code, err.Error()
	case errors.Is(err, zkcoord.ErrTopicDeletionDisabled):
		return kerr.TopicDeletionDisabled.Code, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code, err.Error()
	case errors.As(err, &ke):
		return ke.Code, err.Error()
	}
	return kerr.UnknownServerError.Code, err.Error()
}
