package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Kafka's ACL authorizer on real brokers (docs/acls.md): with allow.everyone.if.no.acl.found=true
// a resource without ACLs is open (so replication and the controller's requests, which have
// none on the cluster, work); CreateAcls through one broker writes Kafka's znode and every broker
// then refuses the anonymous producer on the topic that now has ACLs; an ACL for the anonymous
// principal lets it write; DeleteAcls opens the topic again. Each broker is asked directly, so
// the change notifications are what reached it.
func TestACLAuthorizerAcrossBrokers(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, Overrides: map[string]string{
		"authorizer.class.name":          "kafka.security.authorizer.AclAuthorizer",
		"allow.everyone.if.no.acl.found": "true",
	}})
	c.CreateTopic("secret", 3, 3)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	produceVia := func(id int32) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(id).Addr), kgo.RecordRetries(2), kgo.DisableIdempotentWrite(),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(10*time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte(fmt.Sprint("via ", id))}).FirstErr()
	}
	for _, id := range []int32{1, 2, 3} {
		if err := produceVia(id); err != nil {
			t.Fatalf("produce via broker %d to a topic without ACLs: %v", id, err)
		}
	}

	bob := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("secret").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, bob)
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("CreateAcls: %v %+v", err, res)
	}
	data, _, err := c.ZK.Get("/kafka-acl/Topic/secret")
	if err != nil || string(data) != `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"}]}` {
		t.Fatalf("ACL znode: %s %v", data, err)
	}
	for _, id := range []int32{1, 2, 3} {
		cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
			err := produceVia(id)
			return errors.Is(err, kerr.TopicAuthorizationFailed), fmt.Sprintf("produce via broker %d: %v, want TOPIC_AUTHORIZATION_FAILED", id, err)
		})
	}

	anon := kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts("*").Topics("secret").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, anon); err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("CreateAcls for the anonymous principal: %v %+v", err, res)
	}
	for _, id := range []int32{1, 2, 3} {
		cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
			err := produceVia(id)
			return err == nil, fmt.Sprintf("produce via broker %d with WRITE: %v", id, err)
		})
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("secret").ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 3 {
		t.Fatalf("DescribeAcls of secret: %v %+v", err, described)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("secret").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil || len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 3 {
		t.Fatalf("DeleteAcls of secret: %v %+v", err, deleted)
	}
	if ok, _, _ := c.ZK.Conn().Exists("/kafka-acl/Topic/secret"); ok {
		t.Fatal("the ACL znode of a pattern without ACLs is still there")
	}
}
