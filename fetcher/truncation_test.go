package fetcher

import "testing"

// PlanTruncation is Kafka's getOffsetTruncationState (K1, KIP-101, KIP-279), plus the
// KAFKA-10706 rule: the ask-again answer truncates even when its offset is the LEO.
func TestK1_PlanTruncation(t *testing.T) {
	eo := func(e int32, o int64) EpochEndOffset { return EpochEndOffset{LeaderEpoch: e, EndOffset: o} }
	none := eo(-1, -1)
	cases := []struct {
		name string
		in   TruncationInput
		want TruncationPlan
	}{
		{"leader knows no end offset: the HW", TruncationInput{AskedEpoch: 3, Leader: eo(-1, -1), Local: none, LEO: 9, InitOffset: 4}, TruncationPlan{4, TruncateAndFetch}},
		{"undefined leader epoch", TruncationInput{AskedEpoch: 3, Leader: eo(-1, 6), Local: none, LEO: 9, InitOffset: 4}, TruncationPlan{6, TruncateAndFetch}},
		{"follower has no epoch <= the leader's", TruncationInput{AskedEpoch: 3, Leader: eo(1, 6), Local: none, LEO: 9}, TruncationPlan{6, TruncateAndFetch}},
		{"same epoch: min of both ends (KIP-101)", TruncationInput{AskedEpoch: 2, Leader: eo(2, 7), Local: eo(2, 9), LEO: 9}, TruncationPlan{7, TruncateAndFetch}},
		{"same epoch: the follower's end is lower (KIP-279 example 1)", TruncationInput{AskedEpoch: 2, Leader: eo(1, 2), Local: eo(1, 1), LEO: 3}, TruncationPlan{1, TruncateAndFetch}},
		{"leader's epoch unknown locally: ask again (KIP-279 example 2)", TruncationInput{AskedEpoch: 3, Leader: eo(2, 8), Local: eo(1, 4), LEO: 6}, TruncationPlan{4, TruncateAndAskAgain}},
		{"ask again at the LEO (KAFKA-10706)", TruncationInput{AskedEpoch: 3, Leader: eo(2, 8), Local: eo(1, 5), LEO: 5}, TruncationPlan{5, TruncateAndAskAgain}},
		{"broken leader answering the asked epoch unknown locally", TruncationInput{AskedEpoch: 3, Leader: eo(3, 8), Local: eo(1, 5), LEO: 5}, TruncationPlan{5, BackOff}},
	}
	for _, tc := range cases {
		if got := PlanTruncation(tc.in); got != tc.want {
			t.Errorf("%s: PlanTruncation(%+v) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

// S19–S21: OFFSET_OUT_OF_RANGE never exits; the leader's LEO and then its log start decide.
func TestS19_S20_S21_PlanOutOfRange(t *testing.T) {
	if got := PlanOutOfRangeLatest(6, 10); got != TruncateToLeaderLEO {
		t.Errorf("leader LEO below ours: %v", got)
	}
	if got := PlanOutOfRangeLatest(10, 10); got != AskLogStart {
		t.Errorf("leader LEO equal to ours: %v", got)
	}
	if got := PlanOutOfRangeEarliest(100, 3); got != StartAtLeaderLogStart {
		t.Errorf("leader log start above our LEO: %v", got)
	}
	if got := PlanOutOfRangeEarliest(0, 3); got != RefetchFromLEO {
		t.Errorf("leader log start below our LEO: %v", got)
	}
}
