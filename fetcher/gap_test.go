package fetcher

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"

	"github.com/isrbroker/isrbroker/logstore"
)

// storeLocal is the follower side over real logstore logs (the replica manager's Local reduced to
// the log calls), so the fetcher is exercised against the store's own append rules.
type storeLocal struct {
	mu          sync.Mutex
	mgr         *logstore.Manager
	hw          map[TopicPartition]int64
	truncations []string
}

func newStoreLocal(t *testing.T, tps ...TopicPartition) *storeLocal {
	t.Helper()
	m, err := logstore.Open([]string{t.TempDir()}, 2, logstore.DefaultConfig(), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := &storeLocal{mgr: m, hw: make(map[TopicPartition]int64)}
	for _, tp := range tps {
		if _, err := m.GetOrCreate(tp, logstore.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *storeLocal) log(tp TopicPartition) (*logstore.Log, error) {
	l := s.mgr.Get(tp)
	if l == nil {
		return nil, fmt.Errorf("%v: %w", tp, ErrNotFollower)
	}
	return l, nil
}

func (s *storeLocal) LogEndOffset(tp TopicPartition) (int64, error) {
	l, err := s.log(tp)
	if err != nil {
		return 0, err
	}
	return l.LogEndOffset(), nil
}

func (s *storeLocal) LogStartOffset(tp TopicPartition) (int64, error) {
	l, err := s.log(tp)
	if err != nil {
		return 0, err
	}
	return l.LogStartOffset(), nil
}

func (s *storeLocal) LatestEpoch(tp TopicPartition) (int32, bool, error) {
	l, err := s.log(tp)
	if err != nil {
		return 0, false, err
	}
	e, ok := l.LeaderEpochCache().LatestEpoch()
	return e, ok, nil
}

func (s *storeLocal) EndOffsetForEpoch(tp TopicPartition, epoch int32) (int32, int64, error) {
	l, err := s.log(tp)
	if err != nil {
		return 0, 0, err
	}
	e, off := l.LeaderEpochCache().EndOffsetFor(epoch)
	return e, off, nil
}

func (s *storeLocal) HighWatermark(tp TopicPartition) (int64, error) {
	if _, err := s.log(tp); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hw[tp], nil
}

func (s *storeLocal) TruncateTo(tp TopicPartition, offset int64) error {
	l, err := s.log(tp)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.truncations = append(s.truncations, fmt.Sprintf("TruncateTo %s-%d %d", tp.Topic, tp.Partition, offset))
	s.mu.Unlock()
	return l.TruncateTo(offset)
}

func (s *storeLocal) TruncateFullyAndStartAt(tp TopicPartition, offset int64) error {
	l, err := s.log(tp)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.truncations = append(s.truncations, fmt.Sprintf("TruncateFullyAndStartAt %s-%d %d", tp.Topic, tp.Partition, offset))
	s.mu.Unlock()
	return l.TruncateFullyAndStartAt(offset)
}

func (s *storeLocal) ProcessPartitionData(tp TopicPartition, fetchOffset int64, records []byte, leaderHW, leaderLogStart int64) (int64, error) {
	l, err := s.log(tp)
	if err != nil {
		return 0, err
	}
	if leo := l.LogEndOffset(); fetchOffset != leo {
		return leo, fmt.Errorf("fetch offset %d != LEO %d", fetchOffset, leo)
	}
	if len(records) > 0 {
		if _, err := l.AppendAsFollower(records); err != nil {
			return l.LogEndOffset(), err
		}
	}
	leo := l.LogEndOffset()
	s.mu.Lock()
	s.hw[tp] = max(s.hw[tp], min(leaderHW, leo))
	s.mu.Unlock()
	return leo, nil
}

func (s *storeLocal) truncationLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.truncations...)
}

// Issue 28: the leader's cleaner removed whole batches of a compacted partition, so its answer to
// a fetch at X begins with its next kept batch at Y > X. The new follower (an empty log, as after
// a reassignment) appends it, moves its LEO to Y's last offset + 1 and goes on fetching; it used
// to refuse it, truncate at the same LEO and fetch X again, forever.
func TestFollowerCrossesCompactionGaps(t *testing.T) {
	x := tp("compacted", 0)
	leader := newMemLeader()
	ll := &memLog{}
	for _, v := range values("v", 0, 12) {
		ll.appendLeader(3, v)
	}
	ll.hw = ll.leo
	// the cleaner kept offsets 0, 1, 5, 6, 8 and 11: gaps 2..4, 7, 9..10
	kept := map[int64]bool{0: true, 1: true, 5: true, 6: true, 8: true, 11: true}
	ll.clean(func(b memBatch) bool { return !kept[b.base] })
	leader.lead(x, 3, ll)

	local := newStoreLocal(t, x)
	cfg := Config{BrokerID: 2, FetchWaitMax: 20 * time.Millisecond, FetchBackoff: 20 * time.Millisecond,
		FetchMaxBytes: 1, // one batch per fetch (KIP-74 still returns the first whole): each gap is fetched into
		Registry:      metrics.NewRegistry(), Log: testLogger(),
		NewLeader: func(BrokerEndPoint, int) Leader { return leader.handle() }}
	mgr := NewManager(cfg, local)
	t.Cleanup(mgr.Close)
	mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{x: {Leader: ep(1), CurrentLeaderEpoch: 3, InitOffset: 0}})

	for deadline := time.Now().Add(waitFor); ; {
		leo, _ := local.LogEndOffset(x)
		if leo == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower LEO %d, want the leader's 12; %d truncations (last %q), %d OffsetForLeaderEpoch requests",
				leo, len(local.truncationLog()), lastOf(local.truncationLog()), len(leader.epochLog()))
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not synchronisation
	}
	l := local.mgr.Get(x)
	got, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := ll.read(0, 1<<20); string(got) != string(want) {
		t.Fatalf("follower log holds %d bytes, want the leader's %d bytes", len(got), len(want))
	}
	if hw, _ := local.HighWatermark(x); hw != 12 {
		t.Fatalf("follower HW %d, want 12", hw)
	}
	// each offset in a gap was fetched once, and answered from the next kept batch
	fetched := map[int64]int{}
	for _, f := range leader.fetchLog() {
		if off, ok := f.offsets[x]; ok {
			fetched[off]++
		}
	}
	for _, off := range []int64{2, 7, 9} {
		if fetched[off] != 1 {
			t.Fatalf("fetches at gap offset %d: %d, want 1 (all fetch offsets: %v)", off, fetched[off], fetched)
		}
	}
	for _, off := range []int64{3, 4, 10} {
		if fetched[off] != 0 {
			t.Fatalf("fetched at %d inside a gap the follower crossed: %v", off, fetched)
		}
	}
	// one truncation round at the start (initial offset 0), none after
	if got := local.truncationLog(); len(got) > 1 {
		t.Fatalf("truncations %v: the follower went back to truncation", got)
	}
	if got := leader.epochLog(); len(got) > 1 {
		t.Fatalf("%d OffsetForLeaderEpoch requests, want at most the first", len(got))
	}
	if st, ok := mgr.PartitionState(x); !ok || st.Truncating {
		t.Fatalf("partition state %+v (found %v), want Fetching", st, ok)
	}
}

func lastOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
