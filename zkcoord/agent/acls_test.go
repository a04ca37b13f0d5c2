package agent

import (
	"testing"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// An ACL written through one broker's store lands in Kafka's znode and JSON, with a change
// notification; a second broker's store, loaded before and watching, takes it into its
// authorizer; removing the last entry deletes the znode and the watcher drops the pattern.
// ACLs written by a tool directly into ZooKeeper (Kafka's JSON) are loaded as well.
func TestACLStoreWritesKafkasZNodesAndPeersFollow(t *testing.T) {
	srv, _ := setup(t)
	c1, c2 := srv.Connect(nil), srv.Connect(nil)
	defer c1.Close()
	defer c2.Close()

	// Written by Kafka's kafka-acls.sh before the brokers start.
	if _, err := c1.Create("/kafka-acl", nil, 0); err != nil {
		t.Fatal(err)
	}
	c1.Create("/kafka-acl/Group", nil, 0)
	c1.Create("/kafka-acl/Group/app", []byte(`{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"}]}`), 0)

	w1, w2 := NewACLStore(c1, testLog()), NewACLStore(c2, testLog())
	a2 := acl.New(acl.Config{})
	if err := w2.Load(a2); err != nil {
		t.Fatal(err)
	}
	if !a2.Authorize("User:bob", "1.1.1.1", acl.OpRead, acl.ResourceGroup, "app") {
		t.Fatal("an ACL stored by Kafka's tool was not loaded")
	}
	w2.Watch(a2)
	defer func() { c2.Close(); w2.Close() }()

	pre := acl.Resource{Type: acl.ResourceTopic, Name: "orders-", Pattern: acl.PatternPrefixed}
	entry := acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpWrite, Permission: acl.Allow}
	if _, err := w1.Update(pre, func(cur []acl.Entry) []acl.Entry { return append(cur, entry, entry) }); err != nil {
		t.Fatal(err)
	}
	data, _, err := c1.Get("/kafka-acl-extended/prefixed/Topic/orders-")
	if err != nil || string(data) != `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Write","host":"*"}]}` {
		t.Fatalf("the prefixed ACL znode holds %s (%v), want Kafka's JSON with the entry once", data, err)
	}
	kids, _ := c1.Children(zkdata.PathACLExtendedChanges)
	if len(kids) != 1 {
		t.Fatalf("extended change notifications %v, want one", kids)
	}
	waitFor(t, "the peer authorizes the new prefixed ACL", func() bool {
		return a2.Authorize("User:alice", "1.1.1.1", acl.OpWrite, acl.ResourceTopic, "orders-eu")
	})

	if _, err := w1.Update(pre, func([]acl.Entry) []acl.Entry { return nil }); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := c1.Exists("/kafka-acl-extended/prefixed/Topic/orders-"); ok {
		t.Fatal("the znode of a pattern without ACLs was kept")
	}
	waitFor(t, "the peer drops the removed ACL", func() bool {
		return !a2.Authorize("User:alice", "1.1.1.1", acl.OpWrite, acl.ResourceTopic, "orders-eu")
	})

	// A literal change goes to /kafka-acl-changes as "Topic:t".
	if _, err := w1.Update(acl.Resource{Type: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral}, func(cur []acl.Entry) []acl.Entry { return append(cur, entry) }); err != nil {
		t.Fatal(err)
	}
	kids, _ = c1.Children(zkdata.PathACLChanges)
	if len(kids) != 1 {
		t.Fatalf("literal change notifications %v", kids)
	}
	if d, _, _ := c1.Get(zkdata.PathACLChanges + "/" + kids[0]); string(d) != "Topic:t" {
		t.Fatalf("literal change notification %q, want Topic:t", d)
	}
	waitFor(t, "the peer authorizes the literal ACL", func() bool {
		return a2.Authorize("User:alice", "1.1.1.1", acl.OpWrite, acl.ResourceTopic, "t")
	})
}
