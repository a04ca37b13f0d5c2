package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// writeUser writes a user's config znode and its change notification as kafka-configs does.
func writeUser(t *testing.T, conn zkclient.Conn, user string, cfg map[string]string) {
	t.Helper()
	path := zkdata.UserConfigPath(user)
	if _, err := conn.Set(path, zkdata.EncodeConfig(cfg), -1); errors.Is(err, zk.ErrNoNode) {
		_, err = conn.Create(path, zkdata.EncodeConfig(cfg), 0)
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	notify(t, conn, zkdata.UserEntity(user))
}

func notify(t *testing.T, conn zkclient.Conn, entity string) {
	t.Helper()
	if _, err := conn.Create(zkdata.ConfigChangeSequential, zkdata.EncodeConfigChange(entity), zk.FlagSequence); err != nil {
		t.Fatal(err)
	}
}

func credentialText(t *testing.T, m *sasl.ScramMechanism, password string) string {
	t.Helper()
	c, err := sasl.NewScramCredential(m, password, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Format()
}

// login runs a SCRAM exchange between franz-go's client and broker/security/sasl's server over
// store; nil means the server accepted the password.
func login(store sasl.CredentialStore, mech, user, password string) error {
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

func TestCredentialCacheLoadAndFollow(t *testing.T) {
	srv, admin := setup(t)
	const dn = "CN=x,O=y" // sanitized to CN%3Dx%2CO%3Dy
	writeUser(t, admin, "alice", map[string]string{sasl.ScramSHA256: credentialText(t, sasl.ScramSHA256Mechanism, "a1")})
	writeUser(t, admin, dn, map[string]string{sasl.ScramSHA512: credentialText(t, sasl.ScramSHA512Mechanism, "d1")})

	conn := srv.Connect(nil)
	cache := NewCredentialCache(conn, testLog())
	if err := cache.Load(); err != nil {
		t.Fatal(err)
	}
	if err := login(cache, sasl.ScramSHA256, "alice", "a1"); err != nil {
		t.Fatalf("alice after Load: %v", err)
	}
	if err := login(cache, sasl.ScramSHA512, dn, "d1"); err != nil {
		t.Fatalf("%s after Load: %v", dn, err)
	}
	if err := login(cache, sasl.ScramSHA512, "alice", "a1"); err == nil {
		t.Fatal("alice logged in with SCRAM-SHA-512, which she has no credential for")
	}
	if err := login(cache, sasl.ScramSHA256, "alice", "wrong"); err == nil {
		t.Fatal("wrong password accepted")
	}

	l := NewConfigListener(conn, 1, testLog())
	defer func() { conn.Close(); l.Close() }()
	cache.Follow(l)

	// A new user: logs in once the notification is processed, without a restart.
	writeUser(t, admin, "bob", map[string]string{sasl.ScramSHA512: credentialText(t, sasl.ScramSHA512Mechanism, "b1")})
	waitFor(t, "bob's credential", func() bool { return login(cache, sasl.ScramSHA512, "bob", "b1") == nil })

	// A changed password: the new one works, the old one no longer.
	writeUser(t, admin, "alice", map[string]string{
		sasl.ScramSHA256: credentialText(t, sasl.ScramSHA256Mechanism, "a2"),
		sasl.ScramSHA512: credentialText(t, sasl.ScramSHA512Mechanism, "a2"),
	})
	waitFor(t, "alice's new password", func() bool { return login(cache, sasl.ScramSHA512, "alice", "a2") == nil })
	if err := login(cache, sasl.ScramSHA256, "alice", "a1"); err == nil {
		t.Fatal("alice's old password still accepted")
	}
	if err := login(cache, sasl.ScramSHA256, "alice", "a2"); err != nil {
		t.Fatalf("alice's new SCRAM-SHA-256 password: %v", err)
	}

	// A client-quota entity of the user and the default user are not credentials: ignored.
	notify(t, admin, "users/alice/clients/app")
	notify(t, admin, "users/<default>")

	// A deleted mechanism (--delete-config SCRAM-SHA-256) removes that credential only.
	writeUser(t, admin, "alice", map[string]string{sasl.ScramSHA512: credentialText(t, sasl.ScramSHA512Mechanism, "a2")})
	waitFor(t, "alice's SCRAM-SHA-256 removed", func() bool {
		_, ok, _ := cache.ScramCredential(sasl.ScramSHA256, "alice")
		return !ok
	})
	if err := login(cache, sasl.ScramSHA512, "alice", "a2"); err != nil {
		t.Fatalf("alice's SCRAM-SHA-512 after deleting SCRAM-SHA-256: %v", err)
	}

	// A credential text that does not parse removes the credential.
	writeUser(t, admin, "bob", map[string]string{sasl.ScramSHA512: "salt=x"})
	waitFor(t, "bob's bad credential dropped", func() bool {
		_, ok, _ := cache.ScramCredential(sasl.ScramSHA512, "bob")
		return !ok
	})
	if _, ok, _ := cache.ScramCredential(sasl.ScramSHA512, dn); !ok {
		t.Fatal("an unrelated user's credential was dropped")
	}
}

// TestConfigListenerKeepsUsersFromEntityCallbacks: user configs go to OnUserConfig only, so the
// replica manager's and the controller's OnDynamicConfig callbacks never see a users/ entity.
func TestConfigListenerKeepsUsersFromEntityCallbacks(t *testing.T) {
	srv, admin := setup(t)
	conn := srv.Connect(nil)
	l := NewConfigListener(conn, 1, testLog())
	defer func() { conn.Close(); l.Close() }()
	entities := make(chan string, 100)
	l.OnDynamicConfig(func(entity string, _ map[string]string) { entities <- entity })
	users := make(chan string, 100)
	l.OnUserConfig(func(user string, _ map[string]string) { users <- user })
	writeUser(t, admin, "carol", map[string]string{sasl.ScramSHA256: credentialText(t, sasl.ScramSHA256Mechanism, "c")})
	admin.Create(zkdata.TopicConfigPath("t"), zkdata.EncodeConfig(map[string]string{"b": "2"}), 0)
	notify(t, admin, zkdata.TopicEntity("t"))
	for seen := false; !seen; {
		select {
		case e := <-entities:
			if e == "topics/t" {
				seen = true
			}
			if strings.HasPrefix(e, "users") {
				t.Fatalf("entity callback got %s", e)
			}
		case <-conn.Done():
			t.Fatal("connection closed")
		}
	}
	waitFor(t, "carol delivered", func() bool {
		for {
			select {
			case u := <-users:
				if u == "carol" {
					return true
				}
			default:
				return false
			}
		}
	})
	for {
		select {
		case e := <-entities:
			if strings.HasPrefix(e, "users") {
				t.Fatalf("entity callback got %s", e)
			}
		default:
			return
		}
	}
}
