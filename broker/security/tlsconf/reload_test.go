package tlsconf

import (
	"os"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReload(t *testing.T) {
	f := newFixtures(t)
	keys := map[string]string{
		KeyKeystoreType: "PKCS12", KeyKeystoreLocation: f.path("broker.p12"), KeyKeystorePassword: storePass,
		KeyTruststoreType: "PEM", KeyTruststoreLocation: f.path("ca.pem"),
	}
	r, err := NewReloadable(keys, true)
	if err != nil {
		t.Fatal(err)
	}
	server := r.ServerConfig()
	if s := servedSerial(t, server, f); s != "11" {
		t.Fatalf("served %s, want 11", s)
	}
	refused := func(t *testing.T, update map[string]string, inMessage string) {
		t.Helper()
		err := r.Reload(update)
		if err == nil || !strings.Contains(err.Error(), inMessage) {
			t.Fatalf("Reload: %v, want an error containing %q", err, inMessage)
		}
		if s := servedSerial(t, server, f); s != "11" {
			t.Fatalf("after a refused reload the listener serves %s, want the old 11", s)
		}
	}
	t.Run("wrong password keeps the old keystore", func(t *testing.T) {
		refused(t, copyKeys(keys, KeyKeystoreLocation, f.path("renewed.p12"), KeyKeystorePassword, "wrong"), KeyKeystorePassword)
	})
	t.Run("another subject keeps the old keystore", func(t *testing.T) {
		refused(t, copyKeys(keys, KeyKeystoreLocation, f.path("renamed.p12")), "Keystore DistinguishedName or SubjectAltNames do not match")
	})
	t.Run("a keystore the trust store does not trust keeps the old one", func(t *testing.T) {
		refused(t, copyKeys(keys, KeyKeystoreLocation, f.path("stranger.p12")), "old trust store does not trust the new keystore")
	})
	t.Run("removing the keystore is refused", func(t *testing.T) {
		refused(t, map[string]string{KeyTruststoreType: "PEM", KeyTruststoreLocation: f.path("ca.pem")}, "Cannot remove the SSL keystore")
	})
	t.Run("a renewed keystore is served", func(t *testing.T) {
		// Other keys in the update are not reconfigurable and are ignored, as in Kafka.
		update := copyKeys(keys, KeyKeystoreLocation, f.path("renewed.p12"), KeyClientAuth, "required")
		if err := r.Reload(update); err != nil {
			t.Fatal(err)
		}
		if s := servedSerial(t, server, f); s != "12" {
			t.Fatalf("served %s after the reload, want 12", s)
		}
		if r.Current().ClientAuth != 0 {
			t.Fatal("a non-reconfigurable key was applied")
		}
		// The broker as a client presents the new keystore too.
		c := r.ClientConfig("localhost")
		if got := c.Certificates[0].Leaf.SerialNumber.String(); got != "12" {
			t.Fatalf("client certificate serial %s, want 12", got)
		}
	})
	t.Run("the same location rewritten is read again", func(t *testing.T) {
		// Kafka rebuilds when the file changed under the same path; so does a Reload.
		path := f.path("live.p12")
		writeFile(t, path, f.read("renewed.p12"))
		if err := r.Reload(copyKeys(keys, KeyKeystoreLocation, path)); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, f.read("broker.p12"))
		if err := r.Reload(copyKeys(keys, KeyKeystoreLocation, path)); err != nil {
			t.Fatal(err)
		}
		if s := servedSerial(t, server, f); s != "11" {
			t.Fatalf("served %s, want 11", s)
		}
	})
	t.Run("GetCertificate follows the reload", func(t *testing.T) {
		if err := r.Reload(copyKeys(keys, KeyKeystoreLocation, f.path("renewed.p12"))); err != nil {
			t.Fatal(err)
		}
		own := mustParse(t, keys).ServerConfig()
		own.Certificates = nil
		own.GetCertificate = r.GetCertificate
		if s := servedSerial(t, own, f); s != "12" {
			t.Fatalf("GetCertificate served %s, want 12", s)
		}
	})
}

// Off the inter-broker listener Kafka does not check trust between old and new stores.
func TestReloadTrustCheckOnlyInterBroker(t *testing.T) {
	f := newFixtures(t)
	keys := map[string]string{KeyKeystoreType: "PKCS12", KeyKeystoreLocation: f.path("broker.p12"), KeyKeystorePassword: storePass}
	r, err := NewReloadable(keys, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(copyKeys(keys, KeyKeystoreLocation, f.path("stranger.p12"))); err != nil {
		t.Fatalf("client listener: %v", err)
	}
}
