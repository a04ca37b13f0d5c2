package zkdata

import (
	"reflect"
	"testing"
)

// The ACL znodes hold Kafka's exact JSON and paths (docs/acls.md): the bytes Kafka 2.4's
// kafka-acls.sh writes decode, and what is encoded is what Kafka reads.
func TestACLZNodesAreKafkas(t *testing.T) {
	kafka := []byte(`{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},{"principal":"User:*","permissionType":"Deny","operation":"Write","host":"10.0.0.1"}]}`)
	got, err := DecodeACLs(kafka)
	want := []ACLEntry{{"User:alice", "Allow", "Read", "*"}, {"User:*", "Deny", "Write", "10.0.0.1"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if enc := EncodeACLs(want); string(enc) != string(kafka) {
		t.Fatalf("encode:\n%s\nwant\n%s", enc, kafka)
	}
	for _, bad := range []string{`{"version":2,"acls":[]}`, `{"version":1,"acls":[{"principal":"User:a"}]}`, `[`} {
		if _, err := DecodeACLs([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	for _, c := range []struct{ pattern, typ, name, want string }{
		{PatternLiteral, "Topic", "foo", "/kafka-acl/Topic/foo"},
		{PatternLiteral, "Cluster", "kafka-cluster", "/kafka-acl/Cluster/kafka-cluster"},
		{PatternPrefixed, "Group", "app-", "/kafka-acl-extended/prefixed/Group/app-"},
	} {
		if p, err := ACLPath(c.pattern, c.typ, c.name); err != nil || p != c.want {
			t.Errorf("ACLPath(%s, %s, %s) = %s %v, want %s", c.pattern, c.typ, c.name, p, err, c.want)
		}
	}
	if string(EncodeACLChange(ACLChange{"Topic", "foo", PatternLiteral})) != "Topic:foo" {
		t.Error("literal change is not Kafka's Topic:foo")
	}
	ext := EncodeACLChange(ACLChange{"Topic", "foo", PatternPrefixed})
	if string(ext) != `{"version":1,"resourceType":"Topic","name":"foo","patternType":"PREFIXED"}` {
		t.Errorf("extended change %s", ext)
	}
	if c, err := DecodeACLChange(PathACLExtendedChanges, ext); err != nil || c != (ACLChange{"Topic", "foo", PatternPrefixed}) {
		t.Errorf("extended change decoded %+v %v", c, err)
	}
	if c, err := DecodeACLChange(PathACLChanges, []byte("Group:g:1")); err != nil || c != (ACLChange{"Group", "g:1", PatternLiteral}) {
		t.Errorf("literal change decoded %+v %v", c, err)
	}
	if seqs := ACLChangeSeqs([]string{"acl_changes_0000000010", "acl_changes_0000000002", "other"}); !reflect.DeepEqual(seqs, []int64{2, 10}) {
		t.Errorf("seqs %v", seqs)
	}
}
