package zkcoord

import (
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
)

// TestConnectLoadsAndFollowsSCRAMCredentials: a user written before the broker connects is in
// its credential cache when Connect returns; one written afterwards (by another session, as
// the configs tool does) arrives through the change notification, without a restart.
func TestConnectLoadsAndFollowsSCRAMCredentials(t *testing.T) {
	s := startZK(t)
	op := connectT(t, testConfig(t, s.Addr, 9, 1))
	credential := func(password string) string {
		c, err := sasl.NewScramCredential(sasl.ScramSHA256Mechanism, password, 4096, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Format()
	}
	if err := op.Admin.AlterUserConfig("alice", func(m map[string]string) { m[sasl.ScramSHA256] = credential("a") }); err != nil {
		t.Fatal(err)
	}
	b1 := connectT(t, testConfig(t, s.Addr, 1, 2))
	if _, ok, _ := b1.Credentials.ScramCredential(sasl.ScramSHA256, "alice"); !ok {
		t.Fatal("alice's credential not loaded by Connect")
	}
	if err := op.Admin.AlterUserConfig("bob", func(m map[string]string) { m[sasl.ScramSHA256] = credential("b") }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "bob's credential", func() bool {
		_, ok, _ := b1.Credentials.ScramCredential(sasl.ScramSHA256, "bob")
		return ok
	})
	if err := op.Admin.AlterUserConfig("alice", func(m map[string]string) { delete(m, sasl.ScramSHA256) }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "alice's credential removed", func() bool {
		_, ok, _ := b1.Credentials.ScramCredential(sasl.ScramSHA256, "alice")
		return !ok
	})
}
