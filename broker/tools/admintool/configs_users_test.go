package admintool

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/agent"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

// userRequest is the parsed --alter of users with --add-config add and --delete-config del.
func userRequest(t *testing.T, user, add string, del ...string) *configsRequest {
	t.Helper()
	r := &configsRequest{users: true, name: user, named: true, del: del}
	var err error
	if r.add, r.addKeys, err = parseAddConfig(add); err != nil {
		t.Fatal(err)
	}
	return r
}

// scramLogin runs franz-go's SCRAM client against broker/security/sasl's server over store.
func scramLogin(store sasl.CredentialStore, mech, user, password string) error {
	m, _ := sasl.ScramMechanismByName(mech)
	client := scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	if mech == sasl.ScramSHA512 {
		client = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
	session, msg, err := client.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		return err
	}
	ex := sasl.NewScram(m, store, nil).Start()
	for {
		challenge, done, err := ex.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, err := session.Challenge(challenge)
		if err != nil {
			return err
		}
		if done && cdone {
			return nil
		}
		if done || cdone {
			return errors.New("client and server disagree on the end of the exchange")
		}
		msg = next
	}
}

// TestUserSCRAMConfigs: the tool's writes are Kafka's znodes, a running broker's credential
// cache picks them up from the notification, and --describe shows no secret.
func TestUserSCRAMConfigs(t *testing.T) {
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

	// The broker side: a credential cache following the notifications.
	bconn := srv.Connect(nil)
	cache := agent.NewCredentialCache(bconn, log)
	listener := agent.NewConfigListener(bconn, 1, log)
	t.Cleanup(func() { bconn.Close(); listener.Close() })
	if err := cache.Load(); err != nil {
		t.Fatal(err)
	}
	cache.Follow(listener)

	var out bytes.Buffer
	r := userRequest(t, "alice", "SCRAM-SHA-256=[iterations=8192,password=pw,with,commas],SCRAM-SHA-512=[password=s512]")
	if err := alterUserConfigs(rd, adm, r, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Completed Updating config for entity: user-principal 'alice'.\n" {
		t.Fatalf("output %q", out.String())
	}
	cfg, err := rd.UserConfig("alice")
	if err != nil {
		t.Fatal(err)
	}
	credText := regexp.MustCompile(`^salt=[A-Za-z0-9+/=]+,stored_key=[A-Za-z0-9+/=]+,server_key=[A-Za-z0-9+/=]+,iterations=(\d+)$`)
	if g := credText.FindStringSubmatch(cfg[sasl.ScramSHA256]); g == nil || g[1] != "8192" {
		t.Fatalf("SCRAM-SHA-256 stored as %q", cfg[sasl.ScramSHA256])
	}
	if g := credText.FindStringSubmatch(cfg[sasl.ScramSHA512]); g == nil || g[1] != "4096" {
		t.Fatalf("SCRAM-SHA-512 stored as %q", cfg[sasl.ScramSHA512])
	}
	for _, v := range cfg {
		if strings.Contains(v, "s512") || strings.Contains(v, "commas") {
			t.Fatalf("password stored: %q", v)
		}
	}
	waitUntil(t, 5*time.Second, "alice's login", func() bool {
		return scramLogin(cache, sasl.ScramSHA256, "alice", "pw,with,commas") == nil &&
			scramLogin(cache, sasl.ScramSHA512, "alice", "s512") == nil
	})

	// A user whose name needs sanitizing, and --describe of all users.
	if err := alterUserConfigs(rd, adm, userRequest(t, "CN=bob,O=acme", "SCRAM-SHA-512=[password=b]"), &out); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Get("/config/users/CN%3Dbob%2CO%3Dacme"); err != nil {
		t.Fatalf("sanitized znode: %v", err)
	}
	out.Reset()
	if err := describeUserConfigs(rd, &configsRequest{users: true}, &out); err != nil {
		t.Fatal(err)
	}
	want := "Configs for user-principal 'CN=bob,O=acme' are SCRAM-SHA-512=iterations=4096\n" +
		"Configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192,SCRAM-SHA-512=iterations=4096\n"
	if out.String() != want {
		t.Fatalf("describe all:\n%s\nwant:\n%s", out.String(), want)
	}

	// --delete-config removes one mechanism; the broker forgets that credential only.
	out.Reset()
	if err := alterUserConfigs(rd, adm, userRequest(t, "alice", "", "SCRAM-SHA-256"), &out); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "alice's SCRAM-SHA-256 removed", func() bool {
		return scramLogin(cache, sasl.ScramSHA256, "alice", "pw,with,commas") != nil
	})
	if err := scramLogin(cache, sasl.ScramSHA512, "alice", "s512"); err != nil {
		t.Fatalf("SCRAM-SHA-512 after deleting SCRAM-SHA-256: %v", err)
	}
	out.Reset()
	if err := describeUserConfigs(rd, &configsRequest{users: true, name: "alice", named: true}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("describe alice: %q", out.String())
	}
	out.Reset()
	if err := describeUserConfigs(rd, &configsRequest{users: true, name: "nobody", named: true}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Configs for user-principal 'nobody' are \n" {
		t.Fatalf("describe of a user without znode: %q", out.String())
	}

	// Refusals, with nothing written.
	before, _ := rd.UserConfig("alice")
	for _, tc := range []struct{ add, del, want string }{
		{"SCRAM-SHA-256=[iterations=1000,password=x]", "", "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"},
		{"SCRAM-SHA-256=[pass=x]", "", "invalid SCRAM-SHA-256 credential config"},
		{"producer_byte_rate=-1", "", "a positive number is required"},
		{"producer_byte_rate=1k", "", "a positive number is required"},
		{"SCRAM-SHA-1=[password=x]", "", "Unknown Dynamic Configuration 'SCRAM-SHA-1'"},
		{"", "SCRAM-SHA-256", "Invalid config(s): SCRAM-SHA-256"},
	} {
		var del []string
		if tc.del != "" {
			del = []string{tc.del}
		}
		err := alterUserConfigs(rd, adm, userRequest(t, "alice", tc.add, del...), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("add %q del %q: err = %v, want %q", tc.add, tc.del, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "password=x") {
			t.Errorf("error echoes the password: %v", err)
		}
	}
	if after, _ := rd.UserConfig("alice"); len(after) != len(before) || after[sasl.ScramSHA512] != before[sasl.ScramSHA512] {
		t.Fatal("a refused change wrote the znode")
	}
}

// TestUserSCRAMConfigsCommandLine runs the command against a real ZooKeeper (integration tier).
func TestUserSCRAMConfigsCommandLine(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/users", 1)
	zkArg := "--zookeeper=" + e.connect()
	out := mustOK(t, run("configs", zkArg, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=4096,password=P],SCRAM-SHA-512=[password=Q]"))
	if out != "Completed Updating config for entity: user-principal 'alice'.\n" {
		t.Fatalf("alter output %q", out)
	}
	if z := e.znode("/config/users/alice"); !strings.Contains(z, `"version":1`) || !strings.Contains(z, `"SCRAM-SHA-256":"salt=`) {
		t.Fatalf("znode %s", z)
	}
	out = mustOK(t, run("configs", zkArg, "--describe", "--entity-type", "users"))
	if out != "Configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096,SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("describe output %q", out)
	}
	mustOK(t, run("configs", zkArg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256"))
	out = mustOK(t, run("configs", zkArg, "--describe", "--entity-type", "users", "--entity-name", "alice"))
	if out != "Configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("describe output %q", out)
	}
	mustFail(t, run("configs", "--bootstrap-server=127.0.0.1:1", "--describe", "--entity-type", "users"), 1, "needs --zookeeper")
	mustFail(t, run("configs", zkArg, "--alter", "--entity-type", "users", "--add-config", "SCRAM-SHA-512=[password=Q]"), 1, "--entity-name or --entity-default must be specified with each --entity-type for --alter")
	mustFail(t, run("configs", zkArg, "--alter", "--entity-type", "users", "--entity-default", "--add-config", "SCRAM-SHA-512=[password=Q]"), 1, "takes quotas only")
}

// TestUserSCRAMConfigsBeforeAnyBroker: SCRAM credentials go into ZooKeeper before the first
// broker starts (Kafka's documented order for an inter-broker SCRAM login: kafka-configs
// --zookeeper writes /config/users/<u> into an empty ZooKeeper), so --entity-type users does not
// require /brokers/ids.
func TestUserSCRAMConfigsBeforeAnyBroker(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "")
	if ok, _, err := e.raw.Exists("/brokers/ids"); err != nil || ok {
		t.Fatalf("/brokers/ids exists (%v) before any broker: %v", ok, err)
	}
	zkArg := "--zookeeper=" + e.connect()
	out := mustOK(t, run("configs", zkArg, "--alter", "--entity-type", "users", "--entity-name", "admin",
		"--add-config", "SCRAM-SHA-512=[password=admin-pw]"))
	if out != "Completed Updating config for entity: user-principal 'admin'.\n" {
		t.Fatalf("alter output %q", out)
	}
	if z := e.znode("/config/users/admin"); !strings.Contains(z, `"SCRAM-SHA-512":"salt=`) {
		t.Fatalf("znode %s", z)
	}
	out = mustOK(t, run("configs", zkArg, "--describe", "--entity-type", "users", "--entity-name", "admin"))
	if out != "Configs for user-principal 'admin' are SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("describe output %q", out)
	}
}
