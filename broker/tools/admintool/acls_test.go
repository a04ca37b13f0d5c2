package admintool

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/agent"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

// runIn is run with stdin (the confirmation prompts of --remove).
func runIn(stdin string, args ...string) result {
	var out bytes.Buffer
	app := &cli.App{
		Name:                      "isrbroker",
		Writer:                    &out,
		ErrWriter:                 &out,
		Reader:                    strings.NewReader(stdin),
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		Commands:                  Commands(),
	}
	err := app.Run(append([]string{"isrbroker"}, args...))
	r := result{out: out.String(), code: ExitCode(err)}
	if err != nil {
		r.err = "isrbroker: " + oneLine(err.Error())
	}
	return r
}

// aclBlock is one resource's block of AclCommand's output.
func aclBlock(head, pattern string, entries ...string) string {
	return head + " for resource `" + pattern + "`: \n \t" + strings.Join(entries, "\n\t") + " \n\n"
}

func TestACLsUsageErrors(t *testing.T) {
	zkp := []string{"acls", "--authorizer-properties", "zookeeper.connect=127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acls", "--list"}, "--authorizer-properties zookeeper.connect=HOST:PORT[/chroot] or --bootstrap-server is required"},
		{[]string{"acls", "--bootstrap-server", "b:1", "--authorizer", "kafka.security.authorizer.AclAuthorizer", "--list"}, "Only one of --bootstrap-server or --authorizer"},
		{append(zkp, "--command-config", "x.properties", "--list"), "The --command-config option can only be used with --bootstrap-server"},
		{append(zkp, "--add", "--list"), "Command must include exactly one action: --list, --add, --remove."},
		{zkp, "Command must include exactly one action"},
		{append(zkp, "--list", "--allow-principal", "User:a"), "Option --list can't be used with option --allow-principal"},
		{append(zkp, "--add", "--producer", "--topic", "t", "--operation", "Read"), "Option --producer can't be used with option --operation"},
		{append(zkp, "--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:a"), "Option --consumer can't be used with option --deny-principal"},
		{append(zkp, "--add", "--principal", "User:a", "--topic", "t"), "The --principal option is only available if --list is set"},
		{append(zkp, "--add", "--producer", "--allow-principal", "User:a"), "With --producer you must specify a --topic"},
		{append(zkp, "--add", "--idempotent", "--topic", "t", "--allow-principal", "User:a"), "The --idempotent option is only available if --producer is set"},
		{append(zkp, "--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"), "With --consumer you must specify a --topic and a --group"},
		{append(zkp, "--add", "--consumer", "--topic", "t", "--group", "g", "--cluster", "--allow-principal", "User:a"), "no --cluster or --transactional-id"},
		{append(zkp, "--add", "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "match"), "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."},
		{append(zkp, "--list", "--resource-pattern-type", "glob"), `invalid --resource-pattern-type "glob"`},
		{append(zkp, "--add", "--allow-principal", "User:a"), "You must provide at least one resource: --topic <topic> or --cluster"},
		{append(zkp, "--add", "--topic", "t", "--allow-principal", "alice"), `invalid --allow-principal "alice": not of the form Type:name`},
		{append(zkp, "--add", "--topic", "t", "--allow-principal", "User:a", "--operation", "Fly"), `invalid --operation "Fly": valid operations are All, Read, Write`},
		{append(zkp, "--add", "--group", "g", "--allow-principal", "User:a", "--operation", "Write"), "invalid --operation Write: ResourceType GROUP only supports operations READ, DESCRIBE, DELETE, ALL"},
		{append(zkp, "--list", "--principal", "bob"), `invalid --principal "bob"`},
		{append(zkp, "--add", "--allow-principal", "User:a", "--topic", "t", "--timeout", "1s"), "cannot reach ZooKeeper"},
		{append(zkp, "--add", "--topic", "t", "--operation", "Read"), "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."},
		{append(zkp, "--add", "--topic", "", "--allow-principal", "User:a"), "cannot add (principal=User:a, host=*, operation=ALL, permissionType=ALLOW) to ResourcePattern(resourceType=TOPIC, name=, patternType=LITERAL): resource name must not be empty"},
		{[]string{"acls", "--authorizer-properties", "zookeeper.session.timeout.ms=6000", "--list"}, "--authorizer-properties must set zookeeper.connect"},
		{[]string{"acls", "--authorizer-properties", "zookeeper.connect", "--list"}, `invalid --authorizer-properties "zookeeper.connect": want key=value`},
		{append(zkp, "--authorizer", "com.example.Custom", "--list"), `unsupported --authorizer "com.example.Custom"`},
		{append(zkp, "--list", "--timeout", "1s"), "cannot reach ZooKeeper at 127.0.0.1:1 (--authorizer-properties zookeeper.connect): no session within 1s"},
	} {
		mustFail(t, run(tc.args...), 1, tc.want)
	}
	if r := run("acls", "--help"); r.code != 0 || !strings.Contains(r.out, "isrbroker acls --authorizer-properties zookeeper.connect=localhost:2181 --add") {
		t.Fatalf("acls --help: %d %q", r.code, r.out)
	}
}

// aclsZK is a ZooKeeper the ZooKeeper-path tests run against: the connect string, reads of
// the znodes (paths without the chroot) and a broker's ACL store (loaded and watching).
type aclsZK struct {
	connect  string
	get      func(path string) (string, bool)
	children func(path string) []string
	watcher  *agent.ACLStore
}

func (z aclsZK) znode(path string) string { d, _ := z.get(path); return d }

// The ZooKeeper path against the in-memory ZooKeeper (zkmem), so that -short runs it.
func TestACLsZooKeeperInMemory(t *testing.T) {
	srv := zkmem.NewServer()
	reader := srv.Connect(nil)
	t.Cleanup(reader.Close)
	saved := dialACLStore
	t.Cleanup(func() { dialACLStore = saved })
	dialACLStore = func(_ *cli.Context, connect string) (*admin.ACLStore, func(), error) {
		if connect != "zkmem:2181" {
			t.Errorf("zookeeper.connect %q", connect)
		}
		conn := srv.Connect(nil)
		return admin.NewACLStore(conn), conn.Close, nil
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	watchConn := srv.Connect(nil)
	watcher := agent.NewACLStore(watchConn, log)
	t.Cleanup(func() { watchConn.Close(); watcher.Close() })
	testACLsZooKeeper(t, aclsZK{
		connect: "zkmem:2181",
		get: func(path string) (string, bool) {
			d, _, err := reader.Get(path)
			return string(d), err == nil
		},
		children: func(path string) []string { kids, _ := reader.Children(path); return kids },
		watcher:  watcher,
	})
}

// The same against real ZooKeeper in a chroot, the broker's own coordinator's ACL store watching.
func TestACLsZooKeeper(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/acl", 1)
	testACLsZooKeeper(t, aclsZK{
		connect: e.connect(),
		get: func(path string) (string, bool) {
			d, _, err := e.raw.Get(e.chroot + path)
			return string(d), err == nil
		},
		children: func(path string) []string { kids, _, _ := e.raw.Children(e.chroot + path); return kids },
		watcher:  e.brokers[1].ACLs,
	})
}

// A chroot no broker has created yet: the error says so, and nothing is created.
func TestACLsZooKeeperMissingChroot(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "")
	mustFail(t, run("acls", "--authorizer-properties", "zookeeper.connect="+srv.Addr+"/fresh", "--add", "--allow-principal", "User:a", "--topic", "t"), 1,
		"node does not exist (does the chroot exist? a broker creates it when it first starts)")
	if ok, _, _ := e.raw.Exists("/fresh"); ok {
		t.Fatal("the chroot was created")
	}
	// Without a chroot, ACLs may be written before any broker registered (as kafka-acls.sh does).
	mustOK(t, run("acls", "--authorizer-properties", "zookeeper.connect="+srv.Addr, "--add", "--allow-principal", "User:a", "--topic", "t"))
	if d, _, err := e.raw.Get("/kafka-acl/Topic/t"); err != nil || !strings.Contains(string(d), `"operation":"All"`) {
		t.Fatalf("znode %s (%v)", d, err)
	}
}

// Through ZooKeeper (Kafka 2.4's default path): --add writes Kafka's znodes and JSON with a
// change notification, a broker's authorizer (loaded before, watching) follows every write;
// --producer/--consumer expand to their operations, prefixed patterns go to the extended store,
// --list filters by pattern type and principal, --remove asks y/N unless --force.
func testACLsZooKeeper(t *testing.T, e aclsZK) {
	zkp := []string{"acls", "--authorizer-properties", "zookeeper.connect=" + e.connect}
	cmd := func(args ...string) []string { return append(append([]string{}, zkp...), args...) }

	// A broker's authorizer, as main wires it: loaded, then following the notifications.
	watcher := e.watcher
	authz := acl.New(acl.Config{})
	if err := watcher.Load(authz); err != nil {
		t.Fatal(err)
	}
	watcher.Watch(authz)
	allowed := func(principal string, op acl.Operation, typ acl.ResourceType, name string) func() bool {
		return func() bool { return authz.Authorize(principal, "10.0.0.1", op, typ, name) }
	}

	const (
		ordersLit = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
		ordersPre = "ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED)"
		txPre     = "ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx-, patternType=PREFIXED)"
		cluster   = "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)"
		billing   = "ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)"
	)
	ace := func(principal, host, op, perm string) string {
		return "(principal=" + principal + ", host=" + host + ", operation=" + op + ", permissionType=" + perm + ")"
	}
	aliceRead, aliceWrite := ace("User:alice", "*", "READ", "ALLOW"), ace("User:alice", "*", "WRITE", "ALLOW")

	t.Run("add writes Kafka's znode and the broker follows", func(t *testing.T) {
		out := mustOK(t, run(cmd("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "write", "--topic", "orders")...))
		want := aclBlock("Adding ACLs", ordersLit, aliceRead, aliceWrite) + aclBlock("Current ACLs", ordersLit, aliceRead, aliceWrite)
		if out != want {
			t.Fatalf("output\n%q\nwant\n%q", out, want)
		}
		if got := e.znode("/kafka-acl/Topic/orders"); got != `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},{"principal":"User:alice","permissionType":"Allow","operation":"Write","host":"*"}]}` {
			t.Fatalf("znode %s", got)
		}
		kids := e.children("/kafka-acl-changes")
		if len(kids) != 1 || e.znode("/kafka-acl-changes/"+kids[0]) != "Topic:orders" {
			t.Fatalf("change notifications %v", kids)
		}
		waitUntil(t, 10*time.Second, "the broker authorizes alice's read", allowed("User:alice", acl.OpRead, acl.ResourceTopic, "orders"))
		// Adding the same ACL again changes nothing.
		mustOK(t, run(cmd("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")...))
		if kids := e.children("/kafka-acl-changes"); len(kids) != 1 {
			t.Fatalf("an unchanged set was written again: %v", kids)
		}
	})

	t.Run("producer with prefixed pattern, transactional id and idempotence", func(t *testing.T) {
		out := mustOK(t, run(cmd("--add", "--producer", "--allow-principal", "User:bob", "--topic", "orders-", "--transactional-id", "tx-", "--idempotent", "--resource-pattern-type", "prefixed")...))
		bob := func(op string) string { return ace("User:bob", "*", op, "ALLOW") }
		want := aclBlock("Adding ACLs", ordersPre, bob("WRITE"), bob("CREATE"), bob("DESCRIBE")) +
			aclBlock("Adding ACLs", txPre, bob("WRITE"), bob("DESCRIBE")) +
			aclBlock("Adding ACLs", cluster, bob("IDEMPOTENT_WRITE")) +
			aclBlock("Current ACLs", ordersPre, bob("WRITE"), bob("CREATE"), bob("DESCRIBE")) +
			aclBlock("Current ACLs", txPre, bob("WRITE"), bob("DESCRIBE"))
		if out != want {
			t.Fatalf("output\n%s\nwant\n%s", out, want)
		}
		if got := e.znode("/kafka-acl-extended/prefixed/Topic/orders-"); got != `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Write","host":"*"},{"principal":"User:bob","permissionType":"Allow","operation":"Create","host":"*"},{"principal":"User:bob","permissionType":"Allow","operation":"Describe","host":"*"}]}` {
			t.Fatalf("prefixed znode %s", got)
		}
		if got := e.znode("/kafka-acl/Cluster/kafka-cluster"); got != `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"IdempotentWrite","host":"*"}]}` {
			t.Fatalf("cluster znode %s", got)
		}
		waitUntil(t, 10*time.Second, "the broker authorizes bob's write on orders-eu", allowed("User:bob", acl.OpWrite, acl.ResourceTopic, "orders-eu"))
		waitUntil(t, 10*time.Second, "the broker authorizes bob's transactional id", allowed("User:bob", acl.OpWrite, acl.ResourceTransactionalID, "tx-1"))
		waitUntil(t, 10*time.Second, "the broker authorizes bob's idempotent writes", allowed("User:bob", acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName))
	})

	carol := func(op string) string { return ace("User:carol", "10.0.0.1", op, "ALLOW") }
	t.Run("consumer", func(t *testing.T) {
		out := mustOK(t, run(cmd("--add", "--consumer", "--allow-principal", "User:carol", "--allow-host", "10.0.0.1", "--topic", "orders", "--group", "billing")...))
		want := aclBlock("Adding ACLs", ordersLit, carol("READ"), carol("DESCRIBE")) +
			aclBlock("Adding ACLs", billing, carol("READ")) +
			aclBlock("Current ACLs", ordersLit, aliceRead, aliceWrite, carol("READ"), carol("DESCRIBE")) +
			aclBlock("Current ACLs", billing, carol("READ"))
		if out != want {
			t.Fatalf("output\n%s\nwant\n%s", out, want)
		}
		waitUntil(t, 10*time.Second, "the broker authorizes carol's group", allowed("User:carol", acl.OpRead, acl.ResourceGroup, "billing"))
	})

	t.Run("list", func(t *testing.T) {
		bob := func(op string) string { return ace("User:bob", "*", op, "ALLOW") }
		all := aclBlock("Current ACLs", ordersLit, aliceRead, aliceWrite, carol("READ"), carol("DESCRIBE")) +
			aclBlock("Current ACLs", ordersPre, bob("WRITE"), bob("CREATE"), bob("DESCRIBE")) +
			aclBlock("Current ACLs", billing, carol("READ")) +
			aclBlock("Current ACLs", cluster, bob("IDEMPOTENT_WRITE")) +
			aclBlock("Current ACLs", txPre, bob("WRITE"), bob("DESCRIBE"))
		if out := mustOK(t, run(cmd("--list")...)); out != all {
			t.Fatalf("--list\n%s\nwant\n%s", out, all)
		}
		// As Kafka 2.4: the default pattern type is literal, so only the exact pattern.
		literal := aclBlock("Current ACLs", ordersLit, aliceRead, aliceWrite, carol("READ"), carol("DESCRIBE"))
		if out := mustOK(t, run(cmd("--list", "--topic", "orders")...)); out != literal {
			t.Fatalf("--list --topic orders\n%s", out)
		}
		// match: every pattern that applies to orders-eu (the prefixed one; no literal orders-eu).
		if out := mustOK(t, run(cmd("--list", "--topic", "orders-eu", "--resource-pattern-type", "match")...)); out != aclBlock("Current ACLs", ordersPre, bob("WRITE"), bob("CREATE"), bob("DESCRIBE")) {
			t.Fatalf("--list match\n%s", out)
		}
		if out := mustOK(t, run(cmd("--list", "--topic", "orders-", "--resource-pattern-type", "any")...)); out != aclBlock("Current ACLs", ordersPre, bob("WRITE"), bob("CREATE"), bob("DESCRIBE")) {
			t.Fatalf("--list any\n%s", out)
		}
		want := "ACLs for principal `User:carol`\n" + aclBlock("Current ACLs", ordersLit, carol("READ"), carol("DESCRIBE")) + aclBlock("Current ACLs", billing, carol("READ"))
		if out := mustOK(t, run(cmd("--list", "--principal", "User:carol")...)); out != want {
			t.Fatalf("--list --principal\n%s\nwant\n%s", out, want)
		}
	})

	t.Run("remove asks unless --force", func(t *testing.T) {
		args := cmd("--remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
		prompt := "Are you sure you want to remove ACLs: \n \t" + aliceWrite + " \n from resource filter `" + ordersLit + "`? (y/n)\n"
		r := runIn("n\n", args...)
		if r.code != 0 || !strings.HasPrefix(r.out, prompt) || !strings.Contains(r.out, aliceWrite) {
			t.Fatalf("answered n: %d %q", r.code, r.out)
		}
		r = runIn("", args...) // end of input is no
		if r.code != 0 || !strings.Contains(e.znode("/kafka-acl/Topic/orders"), `"Write"`) {
			t.Fatalf("end of input removed the ACL: %d %q", r.code, r.out)
		}
		r = runIn("Y\n", args...)
		want := prompt + aclBlock("Current ACLs", ordersLit, aliceRead, carol("READ"), carol("DESCRIBE"))
		if r.code != 0 || r.out != want {
			t.Fatalf("answered Y:\n%s\nwant\n%s", r.out, want)
		}
		waitUntil(t, 10*time.Second, "the broker drops alice's write", func() bool {
			return !authz.Authorize("User:alice", "1.1.1.1", acl.OpWrite, acl.ResourceTopic, "orders")
		})

		// Every ACL of the prefixed pattern, without a prompt.
		out := mustOK(t, run(cmd("--remove", "--producer", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--force")...))
		if out != "" {
			t.Fatalf("--remove --force output %q", out)
		}
		if _, ok := e.get("/kafka-acl-extended/prefixed/Topic/orders-"); ok {
			t.Fatal("the prefixed znode was kept without ACLs")
		}
		waitUntil(t, 10*time.Second, "the broker drops bob's prefixed ACLs", func() bool {
			return !authz.Authorize("User:bob", "1.1.1.1", acl.OpWrite, acl.ResourceTopic, "orders-eu")
		})
		// match removes from every pattern applying to the name.
		mustOK(t, run(cmd("--remove", "--topic", "orders", "--resource-pattern-type", "match", "--force")...))
		if _, ok := e.get("/kafka-acl/Topic/orders"); ok {
			t.Fatal("--resource-pattern-type match left the literal pattern")
		}
	})
}

func TestACLsCommandConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	props, err := readProperties(write("a.properties", "# admin\n! also a comment\nclient.id = tool\nsecurity.protocol:SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  username=\"admin\" password=\"s=cret\";\n"))
	if err != nil {
		t.Fatal(err)
	}
	if props["client.id"] != "tool" || props["security.protocol"] != "SASL_PLAINTEXT" || !strings.Contains(props["sasl.jaas.config"], `password="s=cret";`) {
		t.Fatalf("properties %q", props)
	}
	for _, tc := range []struct{ content, want string }{
		{"security.protocol=PLAINTEXT\n", ""},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"b\";\n", ""},
		{"security.protocol=SSL\n", "security.protocol=SSL is not supported by isrbroker acls"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", "sasl.jaas.config"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required;\n", "sasl.mechanism=GSSAPI is not supported"},
	} {
		_, err := commandConfigOpts(write("c.properties", tc.content))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: error %v, want %q", tc.content, err, tc.want)
		}
	}
	mustFail(t, run("acls", "--bootstrap-server", "127.0.0.1:1", "--command-config", dir+"/missing.properties", "--list"), 1, "cannot read --command-config")
	start := time.Now()
	mustFail(t, run("acls", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "1s"), 1, "127.0.0.1:1")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("an unreachable broker took %v", d)
	}
}
