package admintool

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

// parseArgs parses a configs command line without running it.
func parseArgs(t *testing.T, args ...string) (*configsRequest, error) {
	t.Helper()
	var got *configsRequest
	var perr error
	cmd := configsCommand()
	cmd.Action = func(c *cli.Context) error {
		got, perr = parseConfigsRequest(c)
		return nil
	}
	app := &cli.App{Name: "isrbroker", Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}, Commands: []*cli.Command{cmd}, ExitErrHandler: func(*cli.Context, error) {}}
	if err := app.Run(append([]string{"isrbroker", "configs"}, args...)); err != nil {
		t.Fatal(err)
	}
	return got, perr
}

// TestQuotaEntityArgs: ConfigCommand's entity parsing: names pair with types in command-line
// order, --entity-default is <default>, clients before users is reordered.
func TestQuotaEntityArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--entity-type", "users", "--entity-name", "alice"}, "user-principal 'alice'"},
		{[]string{"--entity-type", "users", "--entity-default"}, "default user-principal"},
		{[]string{"--entity-type", "clients", "--entity-name", "app"}, "client-id 'app'"},
		{[]string{"--entity-type", "clients", "--entity-default"}, "default client-id"},
		{[]string{"--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default"}, "user-principal 'alice', default client-id"},
		{[]string{"--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-name", "app"}, "default user-principal, client-id 'app'"},
		{[]string{"--entity-type", "clients", "--entity-name", "app", "--entity-type", "users", "--entity-name", "bob"}, "user-principal 'bob', client-id 'app'"},
	} {
		r, err := parseArgs(t, append([]string{"--alter", "--add-config", "producer_byte_rate=1"}, tc.args...)...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := r.entityString(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	if _, err := parseArgs(t, "--alter", "--add-config", "producer_byte_rate=1", "--entity-type", "users", "--entity-name", "a", "--entity-type", "clients"); err == nil ||
		!strings.Contains(err.Error(), "with each --entity-type") {
		t.Errorf("a type without a name: %v", err)
	}
	if _, err := parseArgs(t, "--describe", "--entity-type", "users", "--entity-type", "topics"); err == nil {
		t.Error("users with topics accepted")
	}
	if r, err := parseArgs(t, "--describe", "--entity-type", "brokers", "--entity-default"); err != nil || !r.dflt || r.entityString() != "default brokers" {
		t.Errorf("brokers default: %+v %v", r, err)
	}
}

// TestQuotaConfigs: --alter writes Kafka's quota znodes (a user+client one under its user),
// --describe lists them as kafka-configs 2.4, --delete-config removes a key.
func TestQuotaConfigs(t *testing.T) {
	srv := zkmem.NewServer()
	conn := srv.Connect(nil)
	t.Cleanup(conn.Close)
	for _, p := range zkdata.PersistentPaths {
		if err := zkclient.CreateRecursive(conn, p); err != nil {
			t.Fatal(err)
		}
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	rd := admin.NewReader(conn, log)
	adm := admin.New(conn, rd, false, log)
	var out bytes.Buffer
	alter := func(e quotaEntity, add string, del ...string) error {
		r := &configsRequest{users: true, quota: &e, del: del}
		var err error
		if r.add, r.addKeys, err = parseAddConfig(add); err != nil {
			t.Fatal(err)
		}
		return alterUserConfigs(rd, adm, r, &out)
	}
	d := zkdata.DefaultBrokerEntity
	for _, x := range []struct {
		e   quotaEntity
		add string
	}{
		{quotaEntity{user: "alice", client: "app", hasUser: true, hasClient: true, userNamed: true, clientNamed: true}, "producer_byte_rate=1024,consumer_byte_rate=2048"},
		{quotaEntity{user: d, hasUser: true, userNamed: true}, "request_percentage=50.5"},
		{quotaEntity{client: d, hasClient: true, clientNamed: true}, "producer_byte_rate=100"},
	} {
		if err := alter(x.e, x.add); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.String(), "Completed Updating config for entity: user-principal 'alice', client-id 'app'.") {
		t.Fatalf("output %q", out.String())
	}
	for path, want := range map[string]string{
		"/config/users/alice/clients/app": `"producer_byte_rate":"1024"`,
		"/config/users/<default>":         `"request_percentage":"50.5"`,
		"/config/clients/<default>":       `"producer_byte_rate":"100"`,
	} {
		data, _, err := conn.Get(path)
		if err != nil || !strings.Contains(string(data), want) {
			t.Errorf("%s: %s %v", path, data, err)
		}
	}
	describe := func(e quotaEntity) string {
		out.Reset()
		if err := describeUserConfigs(rd, &configsRequest{users: true, quota: &e}, &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := describe(quotaEntity{user: "alice", hasUser: true, userNamed: true, hasClient: true}); got != "Configs for user-principal 'alice', client-id 'app' are consumer_byte_rate=2048,producer_byte_rate=1024\n" {
		t.Errorf("describe alice's clients: %q", got)
	}
	// All users: alice's own znode is empty (a parent only) and skipped.
	if got := describe(quotaEntity{hasUser: true}); got != "Configs for default user-principal are request_percentage=50.5\n" {
		t.Errorf("describe all users: %q", got)
	}
	if got := describe(quotaEntity{hasClient: true}); got != "Configs for default client-id are producer_byte_rate=100\n" {
		t.Errorf("describe all clients: %q", got)
	}
	if err := alter(quotaEntity{user: "alice", client: "app", hasUser: true, hasClient: true, userNamed: true, clientNamed: true}, "", "producer_byte_rate"); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := rd.QuotaConfig("alice", "app"); len(cfg) != 1 || cfg["consumer_byte_rate"] != "2048" {
		t.Errorf("after delete: %v", cfg)
	}
	if err := alter(quotaEntity{client: "app", hasClient: true, clientNamed: true}, "SCRAM-SHA-256=[password=x]"); err == nil || !strings.Contains(err.Error(), "Unknown Dynamic Configuration") {
		t.Errorf("SCRAM on a client: %v", err)
	}
}

// TestQuotaConfigsCommandLine runs the command against a real ZooKeeper (integration tier).
func TestQuotaConfigsCommandLine(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/quotas", 1)
	zkArg := "--zookeeper=" + e.connect()
	out := mustOK(t, run("configs", zkArg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default",
		"--add-config", "producer_byte_rate=1048576"))
	if out != "Completed Updating config for entity: user-principal 'alice', default client-id.\n" {
		t.Fatalf("alter output %q", out)
	}
	if z := e.znode("/config/users/alice/clients/<default>"); !strings.Contains(z, `"producer_byte_rate":"1048576"`) {
		t.Fatalf("znode %s", z)
	}
	out = mustOK(t, run("configs", zkArg, "--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default"))
	if out != "Configs for user-principal 'alice', default client-id are producer_byte_rate=1048576\n" {
		t.Fatalf("describe output %q", out)
	}
	mustOK(t, run("configs", zkArg, "--alter", "--entity-type", "clients", "--entity-name", "app", "--add-config", "consumer_byte_rate=10"))
	mustOK(t, run("configs", zkArg, "--alter", "--entity-type", "clients", "--entity-name", "app", "--delete-config", "consumer_byte_rate"))
	out = mustOK(t, run("configs", zkArg, "--describe", "--entity-type", "clients", "--entity-name", "app"))
	if out != "Configs for client-id 'app' are \n" {
		t.Fatalf("describe after delete %q", out)
	}
	mustFail(t, run("configs", "--bootstrap-server=127.0.0.1:1", "--describe", "--entity-type", "clients"), 1, "needs --zookeeper")
}
