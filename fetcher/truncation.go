package fetcher

// This file is the fetcher's pure decision core: what a follower does with a leader's
// OffsetForLeaderEpoch answer (K1, KIP-101, KIP-279) and with OFFSET_OUT_OF_RANGE (S19–S21).
// Nothing here locks, logs, reads a clock or touches a log: the fetcher thread gathers the inputs,
// asks these functions and carries out the answer. The replica manager's scenario scripts
// (replicamanager/testdata) drive the same functions.

// EpochEndOffset is one (leader epoch, end offset) pair as OffsetForLeaderEpoch answers it:
// the largest epoch <= the requested one and the start offset of the next larger epoch (the LEO
// for the latest one). -1 stands for "undefined" in either field.
type EpochEndOffset struct {
	LeaderEpoch int32
	EndOffset   int64
}

// TruncationAction is what the fetcher does after truncating.
type TruncationAction int8

const (
	// TruncateAndFetch: truncate to Offset, then fetch from the new LEO (truncation is complete).
	TruncateAndFetch TruncationAction = iota
	// TruncateAndAskAgain: truncate to Offset, then send OffsetForLeaderEpoch again with the
	// latest epoch left in the local cache (KIP-279: the follower did not know the leader's
	// epoch). Truncating to an offset at or above the LEO still drops the epoch entries that
	// start at or above the LEO (KAFKA-10706), so the next question asks an older epoch.
	TruncateAndAskAgain
	// BackOff: change nothing and retry after replica.fetch.backoff.ms.
	BackOff
)

func (a TruncationAction) String() string {
	switch a {
	case TruncateAndFetch:
		return "truncate-and-fetch"
	case TruncateAndAskAgain:
		return "truncate-and-ask-again"
	default:
		return "back-off"
	}
}

// TruncationInput is what PlanTruncation decides from.
type TruncationInput struct {
	// AskedEpoch is the local latest epoch sent in the OffsetForLeaderEpoch request.
	AskedEpoch int32
	// Leader is the leader's answer (its largest epoch <= AskedEpoch and that epoch's end).
	Leader EpochEndOffset
	// Local is the follower's own answer for Leader.LeaderEpoch (its largest epoch <= the
	// leader's and that epoch's end), or {-1, -1}.
	Local EpochEndOffset
	// LEO is the follower's log end offset.
	LEO int64
	// InitOffset is the initial fetch offset (the local HW when the fetcher was added).
	InitOffset int64
}

// TruncationPlan is PlanTruncation's answer.
type TruncationPlan struct {
	Offset int64
	Action TruncationAction
}

// PlanTruncation is Kafka 2.4's AbstractFetcherThread.getOffsetTruncationState:
//   - the leader knows no end offset: truncate to the initial offset (the HW);
//   - the leader's epoch is undefined: truncate to min(leader end, LEO);
//   - the follower has no epoch <= the leader's: min(leader end, LEO);
//   - the follower does not know the leader's epoch (KIP-279): truncate to the end of its
//     largest smaller epoch and ask again;
//   - otherwise min(leader end, own end for that epoch, LEO), and fetching starts.
//
// Invariant of the answer: Offset <= LEO except in the first case, where the truncation to an
// offset above the LEO changes nothing but the epoch cache's tail. The ask-again answer is
// always followed by a question about a strictly older epoch once the truncation dropped the
// entries at or above Offset, so the exchange ends; a leader answering an epoch at or above the
// one asked (a broken leader) gets BackOff instead of a loop.
func PlanTruncation(in TruncationInput) TruncationPlan {
	switch {
	case in.Leader.EndOffset < 0:
		return TruncationPlan{Offset: in.InitOffset, Action: TruncateAndFetch}
	case in.Leader.LeaderEpoch < 0:
		return TruncationPlan{Offset: min(in.Leader.EndOffset, in.LEO), Action: TruncateAndFetch}
	case in.Local.LeaderEpoch < 0 || in.Local.EndOffset < 0:
		return TruncationPlan{Offset: min(in.Leader.EndOffset, in.LEO), Action: TruncateAndFetch}
	case in.Local.LeaderEpoch != in.Leader.LeaderEpoch:
		if in.Leader.LeaderEpoch >= in.AskedEpoch {
			// A leader answers the largest epoch <= the one asked; one the follower lacks
			// cannot be the asked (latest local) epoch. Asking again would loop.
			return TruncationPlan{Offset: in.LEO, Action: BackOff}
		}
		// Even when this is the LEO (the follower led an epoch and wrote nothing in it), the
		// truncation drops the epoch entries from Offset on, so the next question asks an
		// older epoch (KAFKA-10706).
		return TruncationPlan{Offset: min(in.Local.EndOffset, in.LEO), Action: TruncateAndAskAgain}
	default:
		return TruncationPlan{Offset: min(in.Local.EndOffset, in.Leader.EndOffset, in.LEO), Action: TruncateAndFetch}
	}
}

// OutOfRangeAction is what a follower does after OFFSET_OUT_OF_RANGE.
type OutOfRangeAction int8

const (
	// TruncateToLeaderLEO (S19): the leader's LEO is below ours (only after an unclean
	// election): truncate to it and fetch from there.
	TruncateToLeaderLEO OutOfRangeAction = iota
	// AskLogStart: the leader's LEO is not below ours; its log start decides (ListOffsets
	// EARLIEST, then PlanOutOfRangeEarliest).
	AskLogStart
	// StartAtLeaderLogStart (S20): the leader no longer has what follows our LEO: empty the log
	// and start at the leader's log start.
	StartAtLeaderLogStart
	// RefetchFromLEO (S21): the leader's LEO grew past ours meanwhile: keep the log, refetch.
	RefetchFromLEO
)

func (a OutOfRangeAction) String() string {
	return [...]string{"truncate-to-leader-leo", "ask-log-start", "start-at-leader-log-start", "refetch-from-leo"}[a]
}

// PlanOutOfRangeLatest decides from the leader's LEO (ListOffsets LATEST) and the local LEO.
// It never asks the process to exit (KAFKA-7414).
func PlanOutOfRangeLatest(leaderLEO, localLEO int64) OutOfRangeAction {
	if leaderLEO < localLEO {
		return TruncateToLeaderLEO
	}
	return AskLogStart
}

// PlanOutOfRangeEarliest decides from the leader's log start (ListOffsets EARLIEST) and the local
// LEO, once PlanOutOfRangeLatest answered AskLogStart.
func PlanOutOfRangeEarliest(leaderLogStart, localLEO int64) OutOfRangeAction {
	if leaderLogStart > localLEO {
		return StartAtLeaderLogStart
	}
	return RefetchFromLEO
}
