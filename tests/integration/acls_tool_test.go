package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 30 item 6: `isrbroker acls` through --bootstrap-server (the ACL APIs) and through
// ZooKeeper against two brokers running Kafka's AclAuthorizer. PLAINTEXT clients are
// User:ANONYMOUS, a super user here, so the tool may call the ACL APIs. An ACL created through
// broker 1 is listed by broker 2 once its watcher followed the change notification; one written
// to the znodes is listed by both brokers; one removed through broker 2 is gone from the znodes.
func TestACLsToolBootstrapServerAndZooKeeper(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2, Overrides: map[string]string{
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:ANONYMOUS",
	}})
	r := admin(t, "acls", "--help")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "--authorizer-properties") {
		t.Fatalf("the binary has no `acls` command: %d %s %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	bs1 := "--bootstrap-server=" + c.Broker(1).Addr
	bs2 := "--bootstrap-server=" + c.Broker(2).Addr
	zkp := "zookeeper.connect=" + c.ZK.Addr
	const (
		ordersLit = "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`"
		groupPre  = "`ResourcePattern(resourceType=GROUP, name=app-, patternType=PREFIXED)`"
		aliceRead = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
		bobRead   = "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)"
	)
	block := func(head, pattern string, entries ...string) string {
		return head + " for resource " + pattern + ": \n \t" + strings.Join(entries, "\n\t") + " \n\n"
	}
	waitList := func(bs, want string) {
		t.Helper()
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			out := adminOK(t, "acls", bs, "--list")
			return out == want, "acls " + bs + " --list:\n" + out + "\nwant\n" + want
		})
	}

	// Through broker 1's CreateAcls: its answer lists it at once, broker 2 after the notification.
	out := adminOK(t, "acls", bs1, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
	if want := block("Adding ACLs", ordersLit, aliceRead) + block("Current ACLs", ordersLit, aliceRead); out != want {
		t.Fatalf("--add output\n%s\nwant\n%s", out, want)
	}
	if got, _, err := c.ZK.Get("/kafka-acl/Topic/orders"); err != nil || string(got) != `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}` {
		t.Fatalf("znode after CreateAcls: %s (%v)", got, err)
	}
	waitList(bs2, block("Current ACLs", ordersLit, aliceRead))

	// Through ZooKeeper: both brokers' caches follow the notification.
	adminOK(t, "acls", "--authorizer-properties", zkp, "--add", "--consumer", "--allow-principal", "User:bob", "--topic", "orders", "--group", "app-", "--resource-pattern-type", "prefixed")
	bobDescribe := strings.Replace(bobRead, "READ", "DESCRIBE", 1)
	ordersPre := strings.Replace(ordersLit, "LITERAL", "PREFIXED", 1)
	all := block("Current ACLs", ordersLit, aliceRead) + block("Current ACLs", ordersPre, bobRead, bobDescribe) + block("Current ACLs", groupPre, bobRead)
	waitList(bs1, all)
	waitList(bs2, all)

	// Through broker 2's DeleteAcls (match: every pattern that applies to orders), without a prompt.
	adminOK(t, "acls", bs2, "--remove", "--topic", "orders", "--resource-pattern-type", "match", "--force")
	if out := adminOK(t, "acls", "--authorizer-properties", zkp, "--list"); out != block("Current ACLs", groupPre, bobRead) {
		t.Fatalf("znodes after DeleteAcls:\n%s", out)
	}
	waitList(bs1, block("Current ACLs", groupPre, bobRead))
}
