package zkdata

import (
	"reflect"
	"testing"
)

// FuzzZNodeJSON feeds random bytes to every znode decoder: what another program (or a damaged
// ZooKeeper snapshot) wrote must never crash a broker or the controller (docs/reliability.md,
// fault matrix row 14). Where an encoder exists, a value that decodes must survive
// encode-decode unchanged, so the controller never rewrites a znode into something else.
func FuzzZNodeJSON(f *testing.F) {
	for _, s := range [][]byte{
		EncodeState(2, 5, []int32{2, 1, 3}, 7),
		EncodeTopic(map[int32][]int32{0: {1, 2}, 1: {2, 3}}),
		EncodeTopicFull(map[int32]ReplicaAssignment{0: {Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}}}),
		EncodeConfig(map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2"}),
		EncodeIsrChange([]TopicPartition{{Topic: "a", Partition: 1}}),
		EncodeReassignment([]PartitionReassignment{{Topic: "a", Partition: 0, Replicas: []int32{3, 1}}}),
		EncodeConfigChange("topics/a"),
		EncodeProducerIDBlock(1, 0, 999),
		EncodeController(3),
		EncodeClusterID("abc"),
		EncodeACLs([]ACLEntry{{"User:a", "Allow", "Read", "*"}}),
		EncodeACLChange(ACLChange{"Topic", "foo", PatternPrefixed}),
		[]byte(`{"version":4,"host":"h","port":9092,"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"timestamp":"1","rack":"r"}`),
		[]byte(`{"version":2,"partitions":{"-1":[1]}}`),
		[]byte(`{"controller_epoch":1,"leader":-1,"version":1,"leader_epoch":-5,"isr":[]}`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DecodeBroker(1, data)
		_, _ = DecodeController(data)
		_, _ = DecodeControllerEpoch(data)
		_, _ = DecodeClusterID(data)
		_, _ = DecodeConfigChange(data)
		_, _, _ = DecodeProducerIDBlock(data)
		_, _ = DecodePreferredElection(data)
		_, _ = DecodeReplicationPage(data)
		_, _ = DecodeTopicFull("t", data)
		_, _ = DecodeACLChange(PathACLChanges, data)
		_, _ = DecodeACLChange(PathACLExtendedChanges, data)
		if acls, err := DecodeACLs(data); err == nil {
			again, err := DecodeACLs(EncodeACLs(acls))
			if err != nil || len(again) != len(acls) || (len(acls) > 0 && !reflect.DeepEqual(again, acls)) {
				t.Fatalf("ACLs %+v re-decoded as %+v (%v)", acls, again, err)
			}
		}

		if st, err := DecodeState(data); err == nil {
			again, err := DecodeState(EncodeState(st.Leader, st.LeaderEpoch, st.ISR, st.ControllerEpoch))
			again.ZkVersion = st.ZkVersion
			if err != nil || !reflect.DeepEqual(normState(again), normState(st)) {
				t.Fatalf("state %+v re-decoded as %+v (%v)", st, again, err)
			}
		}
		if a, err := DecodeTopic("t", data); err == nil {
			again, err := DecodeTopic("t", EncodeTopic(a))
			if err != nil || !reflect.DeepEqual(normAssign(again), normAssign(a)) {
				t.Fatalf("assignment %v re-decoded as %v (%v)", a, again, err)
			}
		}
		if cfg, err := DecodeConfig(data); err == nil {
			again, err := DecodeConfig(EncodeConfig(cfg))
			if err != nil || len(again) != len(cfg) {
				t.Fatalf("config %v re-decoded as %v (%v)", cfg, again, err)
			}
			for k, v := range cfg {
				if again[k] != v {
					t.Fatalf("config %q=%q re-decoded as %q", k, v, again[k])
				}
			}
		}
		if tps, err := DecodeIsrChange(data); err == nil {
			again, err := DecodeIsrChange(EncodeIsrChange(tps))
			if err != nil || len(again) != len(tps) {
				t.Fatalf("isr change %v re-decoded as %v (%v)", tps, again, err)
			}
		}
		if rs, err := DecodeReassignment(data); err == nil {
			again, err := DecodeReassignment(EncodeReassignment(rs))
			if err != nil || len(again) != len(rs) {
				t.Fatalf("reassignment %v re-decoded as %v (%v)", rs, again, err)
			}
		}
	})
}

// normState and normAssign make a nil and an empty list equal.
func normState(s PartitionState) PartitionState {
	if len(s.ISR) == 0 {
		s.ISR = nil
	}
	return s
}

func normAssign(a map[int32][]int32) map[int32][]int32 {
	out := make(map[int32][]int32, len(a))
	for p, r := range a {
		if len(r) == 0 {
			r = nil
		}
		out[p] = r
	}
	return out
}
