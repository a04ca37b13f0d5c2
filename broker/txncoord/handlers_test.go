package txncoord

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

func TestKeys(t *testing.T) {
	want := []KeyRange{{Key: kmsg.InitProducerID, Min: 0, Max: 2}, {Key: kmsg.AddPartitionsToTxn, Min: 0, Max: 1}, {Key: kmsg.AddOffsetsToTxn, Min: 0, Max: 1}, {Key: kmsg.EndTxn, Min: 0, Max: 1}}
	got := Keys()
	if len(got) != len(want) {
		t.Fatalf("keys %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("keys %v, want %v", got, want)
		}
	}
}

func (e *env) handle(r *Request, req kmsg.Request) kmsg.Response {
	e.t.Helper()
	var got kmsg.Response
	n := 0
	e.c.Handle(r, req, func(resp kmsg.Response) { got = resp; n++ })
	if n != 1 {
		e.t.Fatalf("%s: answered %d times", kmsg.NameForKey(req.Key()), n)
	}
	b := got.AppendTo(nil)
	back := req.ResponseKind()
	if err := back.ReadFrom(b); err != nil {
		e.t.Fatalf("%s v%d: response does not decode: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if got.GetVersion() != req.GetVersion() {
		e.t.Fatalf("response version %d", got.GetVersion())
	}
	return got
}

// A whole transaction through the handlers, at every version.
func TestHandlersTransaction(t *testing.T) {
	for v := int16(0); v <= 1; v++ {
		e := newEnv(t)
		id := "tx"
		init := kmsg.NewPtrInitProducerIDRequest()
		init.SetVersion(v * 2)
		init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
		ir := e.handle(&Request{}, init).(*kmsg.InitProducerIDResponse)
		if ir.ErrorCode != 0 || ir.ProducerID != 1000 || ir.ProducerEpoch != 0 {
			t.Fatalf("init %+v", ir)
		}
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.SetVersion(v)
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, ir.ProducerID, ir.ProducerEpoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1, 0}}, {Topic: "u", Partitions: []int32{0}}}
		ar := e.handle(&Request{}, add).(*kmsg.AddPartitionsToTxnResponse)
		if len(ar.Topics) != 2 || len(ar.Topics[0].Partitions) != 2 || ar.Topics[0].Partitions[1].Partition != 1 || ar.Topics[1].Partitions[0].ErrorCode != 0 {
			t.Fatalf("add %+v", ar)
		}
		off := kmsg.NewPtrAddOffsetsToTxnRequest()
		off.SetVersion(v)
		off.TransactionalID, off.ProducerID, off.ProducerEpoch, off.Group = id, ir.ProducerID, ir.ProducerEpoch, "g"
		if or := e.handle(&Request{}, off).(*kmsg.AddOffsetsToTxnResponse); or.ErrorCode != 0 {
			t.Fatalf("add offsets %+v", or)
		}
		s := e.mustState(id, Ongoing, false)
		if _, ok := s.partitions[topicPartition{"__consumer_offsets", 0}]; !ok || len(s.partitions) != 4 {
			t.Fatalf("partitions %v", s.partitions)
		}
		end := kmsg.NewPtrEndTxnRequest()
		end.SetVersion(v)
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
		if er := e.handle(&Request{}, end).(*kmsg.EndTxnResponse); er.ErrorCode != 0 {
			t.Fatalf("end %+v", er)
		}
		e.mustState(id, CompleteCommit, false)
	}
}

// Any partition failing authorization or unknown fails the request; the others get
// OPERATION_NOT_ATTEMPTED and nothing is added.
func TestAddPartitionsToTxnPartialFailure(t *testing.T) {
	e := newEnv(t)
	r := e.init("tx", 60000)
	deny := &Request{Authorized: func(op acl.Operation, typ acl.ResourceType, name string) bool {
		return !(typ == acl.ResourceTopic && name == "u")
	}}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx", r.ProducerID, r.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{
		{Topic: "t", Partitions: []int32{0, 9}}, {Topic: "u", Partitions: []int32{0}}, {Topic: "__consumer_offsets", Partitions: []int32{0}},
	}
	ar := e.handle(deny, add).(*kmsg.AddPartitionsToTxnResponse)
	codes := map[topicPartition]int16{}
	for _, tt := range ar.Topics {
		for _, p := range tt.Partitions {
			codes[topicPartition{tt.Topic, p.Partition}] = p.ErrorCode
		}
	}
	want := map[topicPartition]int16{
		{"t", 0}: errOperationNotAttempted, {"t", 9}: errUnknownTopicOrPartition,
		{"u", 0}: errTopicAuthFailed, {"__consumer_offsets", 0}: errTopicAuthFailed,
	}
	for k, w := range want {
		if codes[k] != w {
			t.Fatalf("%v: %d, want %d (all %v)", k, codes[k], w, codes)
		}
	}
	e.mustState("tx", Empty, false)
}

func TestHandlersAuthorization(t *testing.T) {
	e := newEnv(t)
	none := &Request{Authorized: func(acl.Operation, acl.ResourceType, string) bool { return false }}
	onlyTxn := &Request{Authorized: func(_ acl.Operation, typ acl.ResourceType, _ string) bool { return typ == acl.ResourceTransactionalID }}
	id := "tx"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 1000
	if r := e.handle(none, init).(*kmsg.InitProducerIDResponse); r.ErrorCode != errTransactionalIDAuthFailed || r.ProducerID != -1 {
		t.Fatalf("init %+v", r)
	}
	idem := kmsg.NewPtrInitProducerIDRequest()
	if r := e.handle(none, idem).(*kmsg.InitProducerIDResponse); r.ErrorCode != errClusterAuthFailed {
		t.Fatalf("idempotent init %+v", r)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID = id
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	for _, tt := range e.handle(none, add).(*kmsg.AddPartitionsToTxnResponse).Topics {
		for _, p := range tt.Partitions {
			if p.ErrorCode != errTransactionalIDAuthFailed {
				t.Fatalf("add %+v", p)
			}
		}
	}
	off := kmsg.NewPtrAddOffsetsToTxnRequest()
	off.TransactionalID, off.Group = id, "g"
	if r := e.handle(none, off).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != errTransactionalIDAuthFailed {
		t.Fatalf("add offsets %+v", r)
	}
	if r := e.handle(onlyTxn, off).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != errGroupAuthFailed {
		t.Fatalf("add offsets without group READ %+v", r)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID = id
	if r := e.handle(none, end).(*kmsg.EndTxnResponse); r.ErrorCode != errTransactionalIDAuthFailed {
		t.Fatalf("end %+v", r)
	}
	// Authorized but unknown: the coordinator's errors.
	if r := e.handle(onlyTxn, end).(*kmsg.EndTxnResponse); r.ErrorCode != errInvalidProducerIDMapping {
		t.Fatalf("end of an unknown id %+v", r)
	}
}

// Every served key and version: a minimal request is answered with a response of the same
// key and version that kmsg encodes and decodes again.
func TestHandlersAllVersions(t *testing.T) {
	e := newEnv(t)
	id := "tx"
	for _, k := range Keys() {
		for v := k.Min; v <= k.Max; v++ {
			req := kmsg.RequestForKey(int16(k.Key))
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.InitProducerIDRequest:
				r.TransactionalID, r.TransactionTimeoutMillis = &id, 1000
			case *kmsg.AddPartitionsToTxnRequest:
				r.TransactionalID = id
				r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			case *kmsg.AddOffsetsToTxnRequest:
				r.TransactionalID, r.Group = id, "g"
			case *kmsg.EndTxnRequest:
				r.TransactionalID = id
			}
			got := e.handle(&Request{}, req)
			if got.Key() != int16(k.Key) {
				t.Fatalf("%s v%d: response key %d", kmsg.NameForKey(int16(k.Key)), v, got.Key())
			}
		}
	}
}
