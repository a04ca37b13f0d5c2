package zkdata

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestValidTopicName(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	for name, ok := range map[string]bool{
		"a": true, "A-b_c.d9": true, string(long[:249]): true, string(long): false,
		"": false, ".": false, "..": false, "a b": false, "a/b": false, "ä": false,
	} {
		if ValidTopicName(name) != ok {
			t.Errorf("ValidTopicName(%q) != %v", name, ok)
		}
	}
}

func TestDecodersRejectGarbage(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("{"), []byte(`{"partitions":{"x":[1]}}`), []byte(`[]`), []byte(`{"endpoints":["nope"]}`)} {
		_, _ = DecodeBroker(1, in)
		_, _ = DecodeTopic("t", in)
		_, _ = DecodeState(in)
		_, _ = DecodeConfig(in)
		_, _ = DecodeIsrChange(in)
		_, _ = DecodeController(in)
		_, _ = DecodeClusterID(in)
		_, _ = DecodeControllerEpoch(in)
	}
	if _, err := DecodeTopic("t", []byte(`{"version":2,"partitions":{"x":[1]}}`)); err == nil {
		t.Fatal("bad partition key accepted")
	}
	if _, err := DecodeBroker(1, []byte(`{"endpoints":["PLAINTEXT://nohost"]}`)); err == nil {
		t.Fatal("bad endpoint accepted")
	}
}

func TestDecodeConfigChange(t *testing.T) {
	for in, want := range map[string]string{
		`{"version":2,"entity_path":"topics/a"}`:                  "topics/a",
		`{"version":2,"entity_path":"brokers/<default>"}`:         "brokers/<default>",
		`{"version":1,"entity_type":"brokers","entity_name":"3"}`: "brokers/3",
	} {
		got, err := DecodeConfigChange([]byte(in))
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{``, `[]`, `{"version":2}`, `{"version":1,"entity_type":"topics"}`, `{"version":3,"entity_path":"a/b"}`} {
		if got, err := DecodeConfigChange([]byte(in)); err == nil {
			t.Errorf("%q accepted as %q", in, got)
		}
	}
	if got := ConfigChangeSeqs([]string{"config_change_0000000010", "x", "config_change_0000000002", "config_change_-1", "config_change_zz"}); fmt.Sprint(got) != "[2 10]" {
		t.Errorf("seqs %v", got)
	}
}

func TestDecodePreferredElection(t *testing.T) {
	tps := []TopicPartition{{Topic: "a", Partition: 0}, {Topic: "b", Partition: 3}}
	data := EncodePreferredElection(tps)
	if string(data) != `{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":3}]}` {
		t.Fatalf("encoded %s", data)
	}
	got, err := DecodePreferredElection(data)
	if err != nil || !reflect.DeepEqual(got, tps) {
		t.Fatalf("decoded %v %v", got, err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"partitions":[{"topic":"a"}]}`, `{"partitions":[{"partition":1}]}`,
		`{"partitions":[{"topic":"a","partition":-1}]}`, `{"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":0}]}`,
		`{"partitions":7}`} {
		if _, err := DecodePreferredElection([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestDecodeProducerIDBlockMalformed(t *testing.T) {
	for _, in := range []string{`{`, `{"version":2,"block_start":"0","block_end":"1"}`, `{"version":1,"block_start":0,"block_end":"1"}`,
		`{"version":1,"block_start":"x","block_end":"1"}`, `{"version":1,"block_start":"5","block_end":"1"}`} {
		if _, _, err := DecodeProducerIDBlock([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	if s, e, err := DecodeProducerIDBlock(nil); err != nil || s != -1 || e != -1 {
		t.Errorf("empty: %d %d %v", s, e, err)
	}
}

// TestReassignmentJSON: Kafka's file format round-trips; errors name the field.
func TestReassignmentJSON(t *testing.T) {
	in := `{"version":1,"partitions":[{"topic":"b","partition":1,"replicas":[3,1]},{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`
	parts, err := DecodeReassignment([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"b","partition":1,"replicas":[3,1],"log_dirs":["any","any"]}]}`
	if got := string(EncodeReassignment(parts)); got != want {
		t.Fatalf("encode:\n got %s\nwant %s", got, want)
	}
	for doc, field := range map[string]string{
		`{"version":1}`: "partitions",
		`{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`:                           "partitions[0].topic",
		`{"version":1,"partitions":[{"topic":"a","replicas":[1]}]}`:                             "partitions[0].partition",
		`{"version":1,"partitions":[{"topic":"a","partition":0}]}`:                              "partitions[0].replicas",
		`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":[]}]}`: "partitions[0].log_dirs",
		`{"version":2,"partitions":[]}`:                                                         "version",
	} {
		_, err := DecodeReassignment([]byte(doc))
		var fe *ReassignmentFieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Fatalf("%s: %v, want field %s", doc, err, field)
		}
	}
	_, err = DecodeReassignment([]byte(`{"version":1,"partitions":[{"topic":"a","partition":"x"}]}`))
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || !strings.Contains(te.Field, "partition") {
		t.Fatalf("type error: %v", err)
	}
}

// TestTopicFullRoundTrip: the KIP-455 maps carry only the partitions being reassigned, and
// a version 1 znode (no maps) decodes with none.
func TestTopicFullRoundTrip(t *testing.T) {
	in := map[int32]ReplicaAssignment{
		0: {Replicas: []int32{2, 3, 1}, Adding: []int32{3}, Removing: []int32{1}},
		1: {Replicas: []int32{1, 2}},
	}
	data := EncodeTopicFull(in)
	want := `{"version":2,"partitions":{"0":[2,3,1],"1":[1,2]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}`
	if string(data) != want {
		t.Fatalf("encoded %s, want %s", data, want)
	}
	out, err := DecodeTopicFull("t", data)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("decoded %+v %v", out, err)
	}
	v1, err := DecodeTopicFull("t", []byte(`{"version":1,"partitions":{"0":[1,2]}}`))
	if err != nil || len(v1[0].Adding) != 0 || len(v1[0].Removing) != 0 || !reflect.DeepEqual(v1[0].Replicas, []int32{1, 2}) {
		t.Fatalf("version 1: %+v %v", v1, err)
	}
	if _, err := DecodeTopicFull("t", []byte(`{"version":2,"partitions":{"0":[1]},"adding_replicas":{"5":[2]}}`)); err == nil {
		t.Fatal("adding replicas of an unknown partition accepted")
	}
}
