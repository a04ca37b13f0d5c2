package broker

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeAdmin's producer-id blocks: 3 ids each, consecutive, so tests see block rollover.
var fakePIDs struct {
	sync.Mutex
	next  map[*fakeAdmin]int64
	calls map[*fakeAdmin]int
}

func (a *fakeAdmin) AllocateProducerIDBlock(context.Context) (int64, int64, error) {
	if a.fail != nil {
		return 0, 0, a.fail
	}
	fakePIDs.Lock()
	defer fakePIDs.Unlock()
	if fakePIDs.next == nil {
		fakePIDs.next, fakePIDs.calls = map[*fakeAdmin]int64{}, map[*fakeAdmin]int{}
	}
	start := fakePIDs.next[a] + 100 // blocks start at 100 so that id 0 is never "valid by accident"
	fakePIDs.next[a] += 3
	fakePIDs.calls[a]++
	return start, start + 2, nil
}

func initPID(t *testing.T, e *testEnv, v int16, txn *string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	c := dial(t, e.addr)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = v, txn, 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return roundTrip[*kmsg.InitProducerIDResponse](t, c, req)
}

func TestInitProducerIDAssignsDistinctIDs(t *testing.T) {
	e := startServer(t, nil)
	seen := map[int64]bool{}
	for i := 0; i < 7; i++ {
		v := int16(i % 5)
		var txn *string
		if i%2 == 0 {
			empty := ""
			txn = &empty // an empty transactional id is idempotent-only too
		}
		resp := initPID(t, e, v, txn, -1, -1)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 || resp.ProducerID < 100 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if seen[resp.ProducerID] {
			t.Fatalf("producer id %d handed out twice", resp.ProducerID)
		}
		seen[resp.ProducerID] = true
	}
	fakePIDs.Lock()
	calls := fakePIDs.calls[e.admin]
	fakePIDs.Unlock()
	if calls != 3 { // 7 ids from blocks of 3
		t.Fatalf("allocated %d blocks, want 3", calls)
	}
}

func TestInitProducerIDEpochBumpAndErrors(t *testing.T) {
	e := startServer(t, nil)
	if resp := initPID(t, e, 4, nil, 4242, 7); resp.ErrorCode != 0 || resp.ProducerID != 4242 || resp.ProducerEpoch != 8 {
		t.Fatalf("epoch bump: %+v", resp)
	}
	// Before v3 the id/epoch fields do not exist: a fresh id.
	if resp := initPID(t, e, 2, nil, 4242, 7); resp.ErrorCode != 0 || resp.ProducerID == 4242 || resp.ProducerEpoch != 0 {
		t.Fatalf("v2: %+v", resp)
	}
	// Exhausted epoch: a new id at epoch 0.
	if resp := initPID(t, e, 3, nil, 4242, 32766); resp.ErrorCode != 0 || resp.ProducerID == 4242 || resp.ProducerEpoch != 0 {
		t.Fatalf("exhausted epoch: %+v", resp)
	}
	if resp := initPID(t, e, 4, nil, 4242, -1); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("id without epoch: %+v", resp)
	}
	txn := "tx"
	if resp := initPID(t, e, 4, &txn, -1, -1); resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || resp.ProducerID != -1 {
		t.Fatalf("transactional: %+v", resp)
	}
	e2 := startServer(t, nil)
	e2.admin.fail = errors.New("zk down")
	if resp := initPID(t, e2, 4, nil, -1, -1); resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.ProducerID != -1 {
		t.Fatalf("zk failure: %+v", resp)
	}
}
