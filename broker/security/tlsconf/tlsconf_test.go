package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	"github.com/isrbroker/isrbroker/broker/security/sslprincipal"
)

func mustParse(t *testing.T, keys map[string]string) *Settings {
	t.Helper()
	s, err := Parse(keys)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// wantKeyError checks that err is a *KeyError naming key, and that its text names it too.
func wantKeyError(t *testing.T, err error, key string) {
	t.Helper()
	var ke *KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("error %v, want a KeyError naming %s", err, key)
	}
	if ke.Key != key || !strings.Contains(err.Error(), key) {
		t.Fatalf("error %q names %s, want %s", err, ke.Key, key)
	}
}

func TestListenerKeys(t *testing.T) {
	got := ListenerKeys(map[string]string{
		"ssl.keystore.location":                    "/base.jks",
		"ssl.client.auth":                          "none",
		"listener.name.internal.ssl.client.auth":   "required",
		"listener.name.internal.ssl.key.password":  "k",
		"listener.name.external.ssl.keystore.type": "PKCS12",
		"listener.name.internal.":                  "ignored",
	}, "INTERNAL")
	want := map[string]string{"ssl.keystore.location": "/base.jks", "ssl.client.auth": "required", "ssl.key.password": "k"}
	if len(got) != len(want) {
		t.Fatalf("ListenerKeys = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("ListenerKeys = %v, want %v", got, want)
		}
	}
}

func TestParseDefaultsAreKafka24s(t *testing.T) {
	s := mustParse(t, map[string]string{})
	if s.MinVersion != tls.VersionTLS10 || s.MaxVersion != tls.VersionTLS12 {
		t.Errorf("versions %x-%x, want TLSv1..TLSv1.2", s.MinVersion, s.MaxVersion)
	}
	if s.ClientAuth != tls.NoClientCert || !s.VerifyHostname || s.CipherSuites != nil || s.HasKeystore() || s.TrustedCerts != nil {
		t.Errorf("defaults: %+v", s)
	}
}

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		key, value string
		check      func(*Settings) bool
	}{
		{KeyClientAuth, "required", func(s *Settings) bool { return s.ClientAuth == tls.RequireAndVerifyClientCert }},
		{KeyClientAuth, "requested", func(s *Settings) bool { return s.ClientAuth == tls.VerifyClientCertIfGiven }},
		{KeyEndpointIdentification, "", func(s *Settings) bool { return !s.VerifyHostname }},
		{KeyEndpointIdentification, "HTTPS", func(s *Settings) bool { return s.VerifyHostname }},
		{KeyEnabledProtocols, "TLSv1.3, TLSv1.2", func(s *Settings) bool {
			return s.MinVersion == tls.VersionTLS12 && s.MaxVersion == tls.VersionTLS13
		}},
		{KeyEnabledProtocols, "SSLv2Hello,TLSv1.2", func(s *Settings) bool { return s.MinVersion == tls.VersionTLS12 && s.MaxVersion == tls.VersionTLS12 }},
		{KeyProtocol, "TLSv1.2", func(s *Settings) bool { return true }},
		{KeyCipherSuites, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, SSL_RSA_WITH_3DES_EDE_CBC_SHA,TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
			func(s *Settings) bool {
				return len(s.CipherSuites) == 2 && s.CipherSuites[0] == tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 &&
					s.CipherSuites[1] == tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA
			}},
	} {
		s, err := Parse(map[string]string{c.key: c.value})
		if err != nil || !c.check(s) {
			t.Errorf("%s=%q: %+v, %v", c.key, c.value, s, err)
		}
	}
	// Only TLS 1.3 suites named: TLS 1.3 only, or an error when it is not enabled.
	s := mustParse(t, map[string]string{KeyCipherSuites: "TLS_AES_128_GCM_SHA256", KeyEnabledProtocols: "TLSv1.2,TLSv1.3"})
	if s.MinVersion != tls.VersionTLS13 || s.CipherSuites != nil {
		t.Errorf("TLS 1.3 suites only: %+v", s)
	}
	_, err := Parse(map[string]string{KeyCipherSuites: "TLS_AES_128_GCM_SHA256"})
	wantKeyError(t, err, KeyCipherSuites)
}

func TestParseRefusesBadValues(t *testing.T) {
	for _, c := range []struct{ key, value, inMessage string }{
		{KeyClientAuth, "maybe", "maybe"},
		{KeyClientAuth, "REQUIRED", "REQUIRED"},
		{KeyEnabledProtocols, "SSLv3,TLSv1.2", "SSLv3"},
		{KeyEnabledProtocols, "TLSv1,TLSv1.2", "gap"},
		{KeyEnabledProtocols, "", "no protocol"},
		{KeyProtocol, "SSLv3", "SSLv3"},
		{KeyCipherSuites, "TLS_FOO_BAR, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, BOGUS", "TLS_FOO_BAR, BOGUS"},
		{KeyEndpointIdentification, "ldaps", "ldaps"},
		{KeyKeystoreType, "JCEKS", "JCEKS"},
		{KeyTruststoreType, "BKS", "BKS"},
		{KeyKeystorePassword, "secret", "not specified"}, // a password without a keystore
		{KeyTruststorePassword, "secret", "not specified"},
	} {
		_, err := Parse(map[string]string{c.key: c.value})
		var ke *KeyError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.inMessage) {
			t.Errorf("%s=%q: error %v, want one containing %q", c.key, c.value, err, c.inMessage)
			continue
		}
		// The key a password error names is the store's location: the one that is missing.
		if want := map[string]string{KeyKeystorePassword: KeyKeystoreLocation, KeyTruststorePassword: KeyTruststoreLocation}[c.key]; want != "" {
			if ke.Key != want {
				t.Errorf("%s: error names %s, want %s", c.key, ke.Key, want)
			}
		} else if ke.Key != c.key {
			t.Errorf("%s=%q: error names %s", c.key, c.value, ke.Key)
		}
	}
}

// TestStores loads the broker keystore in every format and the trust store in every format, and
// serves a TLS handshake from each keystore.
func TestStores(t *testing.T) {
	f := newFixtures(t)
	inlineKey := map[string]string{
		KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker.key"), KeyKeystoreCertChain: f.read("broker.pem") + f.read("ca.pem"),
		KeyTruststoreType: "PEM", KeyTruststoreCertificates: f.read("ca.pem"),
	}
	// A properties-file value on one line: newlines turned into spaces.
	oneLine := map[string]string{
		KeyKeystoreType: "PEM", KeyKeystoreKey: strings.ReplaceAll(f.read("broker.key"), "\n", " "),
		KeyKeystoreCertChain: strings.ReplaceAll(f.read("broker.pem"), "\n", " "),
	}
	encrypted := f.pemKeys("broker")
	encrypted[KeyKeystoreLocation] = f.path("broker-enc-combined.pem")
	writeFile(t, encrypted[KeyKeystoreLocation], f.read("broker-enc.key")+f.read("broker.pem"))
	encrypted[KeyKeyPassword] = keyPass
	cases := map[string]map[string]string{
		"PEM file":               f.pemKeys("broker"),
		"PEM encrypted file":     encrypted,
		"PEM inline":             inlineKey,
		"PEM inline on one line": oneLine,
		"PKCS12": {KeyKeystoreType: "PKCS12", KeyKeystoreLocation: f.path("broker.p12"), KeyKeystorePassword: storePass,
			KeyTruststoreType: "PEM", KeyTruststoreLocation: f.path("ca.pem")},
	}
	for name, keys := range cases {
		t.Run(name, func(t *testing.T) { checkBrokerStore(t, f, keys) })
	}
	t.Run("JKS from keytool", func(t *testing.T) {
		f.keytool("broker")
		checkBrokerStore(t, f, map[string]string{
			KeyKeystoreLocation: f.path("broker.jks"), KeyKeystorePassword: storePass, KeyKeyPassword: keyPass,
			KeyTruststoreLocation: f.path("trust.jks"), KeyTruststorePassword: trustPass,
		})
		// Java reads a JKS trust store without its password (no integrity check); so does this.
		s := mustParse(t, map[string]string{KeyTruststoreLocation: f.path("trust.jks")})
		if len(s.TrustedCerts) != 1 {
			t.Fatalf("JKS trust store without password: %d certificates", len(s.TrustedCerts))
		}
	})
	t.Run("PKCS12 from keytool", func(t *testing.T) {
		// keytool's own PKCS12 (PBES2/AES with an HmacSHA256 MAC since JDK 12).
		f.keytool("broker")
		p12 := f.path("broker-keytool.p12")
		f.run("keytool", "-importkeystore", "-noprompt", "-srckeystore", f.path("broker.jks"), "-srcstoretype", "JKS",
			"-srcstorepass", storePass, "-srcalias", "broker", "-srckeypass", keyPass,
			"-destkeystore", p12, "-deststoretype", "PKCS12", "-deststorepass", storePass, "-destkeypass", storePass)
		checkBrokerStore(t, f, map[string]string{KeyKeystoreType: "PKCS12", KeyKeystoreLocation: p12, KeyKeystorePassword: storePass})
	})
	t.Run("PKCS12 trust store from keytool", func(t *testing.T) {
		f.keytool("broker")
		s := mustParse(t, map[string]string{KeyTruststoreType: "pkcs12", KeyTruststoreLocation: f.path("trust.pkcs12"), KeyTruststorePassword: trustPass})
		if len(s.TrustedCerts) != 1 || s.TrustedCerts[0].Subject.CommonName != "Test CA" {
			t.Fatalf("PKCS12 trust store: %v", s.TrustedCerts)
		}
	})
}

// Encrypted PKCS#8 keys as openssl writes them with other PBES2 ciphers and PRFs.
func TestEncryptedPEMKeyVariants(t *testing.T) {
	f := newFixtures(t)
	for _, v := range [][]string{
		{"aes-128-cbc", "hmacWithSHA512"},
		{"aes-192-cbc", "hmacWithSHA384"},
		{"des3", "hmacWithSHA1"},
	} {
		out := f.path("broker-" + v[0] + ".key")
		f.openssl("pkcs8", "-topk8", "-in", f.path("broker.key"), "-out", out, "-v2", v[0], "-v2prf", v[1], "-passout", "pass:"+keyPass)
		s, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker-" + v[0] + ".key"),
			KeyKeystoreCertChain: f.read("broker.pem"), KeyKeyPassword: keyPass})
		if err != nil || !s.HasKeystore() {
			t.Errorf("%v: %v", v, err)
		}
	}
	// PKCS#1 and legacy PBES1 keys are refused with the key named.
	f.openssl("pkcs8", "-topk8", "-in", f.path("broker.key"), "-out", f.path("broker-pbes1.key"), "-v1", "PBE-SHA1-3DES", "-passout", "pass:"+keyPass)
	_, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker-pbes1.key"),
		KeyKeystoreCertChain: f.read("broker.pem"), KeyKeyPassword: keyPass})
	wantKeyError(t, err, KeyKeystoreKey)
	f.openssl("ec", "-in", f.path("broker.key"), "-out", f.path("broker-sec1.key"))
	_, err = Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker-sec1.key"), KeyKeystoreCertChain: f.read("broker.pem")})
	wantKeyError(t, err, KeyKeystoreKey)
}

func checkBrokerStore(t *testing.T, f *fixtures, keys map[string]string) {
	t.Helper()
	s := mustParse(t, keys)
	if len(s.Certificates) != 1 || s.Certificates[0].Leaf.Subject.CommonName != "broker1" {
		t.Fatalf("keystore: %d certificates", len(s.Certificates))
	}
	if _, hasCA := keys[KeyTruststoreLocation]; hasCA || keys[KeyTruststoreCertificates] != "" {
		if len(s.TrustedCerts) != 1 || s.TrustedCerts[0].Subject.CommonName != "Test CA" {
			t.Fatalf("trust store: %v", s.TrustedCerts)
		}
	}
	if serial := servedSerial(t, s.ServerConfig(), f); serial != "11" {
		t.Fatalf("served serial %s, want 11", serial)
	}
}

func TestStoreErrorsNameTheKey(t *testing.T) {
	f := newFixtures(t)
	t.Run("PKCS12 wrong store password", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PKCS12", KeyKeystoreLocation: f.path("broker.p12"), KeyKeystorePassword: "wrong"})
		wantKeyError(t, err, KeyKeystorePassword)
	})
	t.Run("JKS wrong store password", func(t *testing.T) {
		f.keytool("broker")
		_, err := Parse(map[string]string{KeyKeystoreLocation: f.path("broker.jks"), KeyKeystorePassword: "wrong", KeyKeyPassword: keyPass})
		wantKeyError(t, err, KeyKeystorePassword)
	})
	t.Run("JKS wrong key password", func(t *testing.T) {
		f.keytool("broker")
		// Without ssl.key.password the store password is tried, as Kafka does: wrong here.
		_, err := Parse(map[string]string{KeyKeystoreLocation: f.path("broker.jks"), KeyKeystorePassword: storePass})
		wantKeyError(t, err, KeyKeyPassword)
	})
	t.Run("JKS trust store wrong password", func(t *testing.T) {
		f.keytool("broker")
		_, err := Parse(map[string]string{KeyTruststoreLocation: f.path("trust.jks"), KeyTruststorePassword: "wrong"})
		wantKeyError(t, err, KeyTruststorePassword)
	})
	t.Run("keystore without password", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PKCS12", KeyKeystoreLocation: f.path("broker.p12")})
		wantKeyError(t, err, KeyKeystorePassword)
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreLocation: f.path("nope.jks"), KeyKeystorePassword: storePass})
		wantKeyError(t, err, KeyKeystoreLocation)
	})
	t.Run("PEM encrypted key, wrong password", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker-enc.key"),
			KeyKeystoreCertChain: f.read("broker.pem"), KeyKeyPassword: "wrong"})
		wantKeyError(t, err, KeyKeyPassword)
	})
	t.Run("PEM encrypted key, no password", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker-enc.key"), KeyKeystoreCertChain: f.read("broker.pem")})
		wantKeyError(t, err, KeyKeyPassword)
	})
	t.Run("PEM unencrypted key with a key password", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("broker.key"),
			KeyKeystoreCertChain: f.read("broker.pem"), KeyKeyPassword: keyPass})
		wantKeyError(t, err, KeyKeyPassword)
	})
	t.Run("PEM with a store password", func(t *testing.T) {
		keys := f.pemKeys("broker")
		keys[KeyKeystorePassword] = storePass
		_, err := Parse(keys)
		wantKeyError(t, err, KeyKeystorePassword)
	})
	t.Run("PEM key of another certificate", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreKey: f.read("renewed.key"), KeyKeystoreCertChain: f.read("broker.pem")})
		wantKeyError(t, err, KeyKeystoreKey)
	})
	t.Run("PEM chain without key", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreType: "PEM", KeyKeystoreCertChain: f.read("broker.pem")})
		wantKeyError(t, err, KeyKeystoreKey)
	})
	t.Run("inline key with JKS type", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyKeystoreKey: f.read("broker.key"), KeyKeystoreCertChain: f.read("broker.pem")})
		wantKeyError(t, err, KeyKeystoreKey)
	})
	t.Run("inline trust certificates with JKS type", func(t *testing.T) {
		_, err := Parse(map[string]string{KeyTruststoreCertificates: f.read("ca.pem")})
		wantKeyError(t, err, KeyTruststoreCertificates)
	})
}

func TestHandshakes(t *testing.T) {
	f := newFixtures(t)
	keys := f.pemKeys("broker")
	t.Run("client without the CA fails verification", func(t *testing.T) {
		r := handshake(t, mustParse(t, keys).ServerConfig(), &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"})
		var unknown x509.UnknownAuthorityError
		if !errors.As(r.clientErr, &unknown) {
			t.Fatalf("client error %v, want an unknown authority", r.clientErr)
		}
	})
	t.Run("required refuses a client without a certificate", func(t *testing.T) {
		keys := copyKeys(keys, KeyClientAuth, "required")
		r := handshake(t, mustParse(t, keys).ServerConfig(), &tls.Config{RootCAs: f.caPool(), ServerName: "localhost"})
		if r.serverErr == nil || !strings.Contains(r.serverErr.Error(), "didn't provide a certificate") {
			t.Fatalf("server error %v, want a refused handshake", r.serverErr)
		}
	})
	t.Run("required refuses a client certificate of an unknown CA", func(t *testing.T) {
		keys := copyKeys(keys, KeyClientAuth, "required")
		r := handshake(t, mustParse(t, keys).ServerConfig(),
			&tls.Config{RootCAs: f.caPool(), ServerName: "localhost", Certificates: []tls.Certificate{f.keyPair("stranger")}})
		if r.serverErr == nil {
			t.Fatal("server accepted a client certificate it cannot verify")
		}
	})
	mapper, err := sslprincipal.ParseRules("RULE:^CN=([^,]+),OU=Clients,.*$/$1/L,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"required", "requested"} {
		t.Run(auth+": a client certificate's DN maps to the principal", func(t *testing.T) {
			r := handshake(t, mustParse(t, copyKeys(keys, KeyClientAuth, auth)).ServerConfig(),
				&tls.Config{RootCAs: f.caPool(), ServerName: "localhost", Certificates: []tls.Certificate{f.keyPair("alice")}})
			if r.serverErr != nil || r.clientErr != nil {
				t.Fatalf("handshake: server %v, client %v", r.serverErr, r.clientErr)
			}
			p, err := sslprincipal.Principal(&r.server, mapper)
			if err != nil || p != "User:alice" {
				t.Fatalf("principal %q, %v; want User:alice", p, err)
			}
		})
	}
	t.Run("requested: no certificate is ANONYMOUS", func(t *testing.T) {
		r := handshake(t, mustParse(t, copyKeys(keys, KeyClientAuth, "requested")).ServerConfig(),
			&tls.Config{RootCAs: f.caPool(), ServerName: "localhost"})
		if r.serverErr != nil || r.clientErr != nil {
			t.Fatalf("handshake: server %v, client %v", r.serverErr, r.clientErr)
		}
		if p, err := sslprincipal.Principal(&r.server, mapper); err != nil || p != sslprincipal.Anonymous {
			t.Fatalf("principal %q, %v", p, err)
		}
	})
	t.Run("none: DEFAULT rules give the whole DN of a broker client", func(t *testing.T) {
		// The broker as a client (inter-broker): its keystore is its client certificate.
		client := mustParse(t, keys).ClientConfig("localhost")
		r := handshake(t, mustParse(t, copyKeys(keys, KeyClientAuth, "required")).ServerConfig(), client)
		if r.serverErr != nil || r.clientErr != nil {
			t.Fatalf("handshake: server %v, client %v", r.serverErr, r.clientErr)
		}
		def, _ := sslprincipal.ParseRules(sslprincipal.DefaultRules)
		if p, _ := sslprincipal.Principal(&r.server, def); p != "User:CN=broker1,OU=Brokers,O=Acme,C=US" {
			t.Fatalf("principal %q", p)
		}
	})
	t.Run("endpoint identification", func(t *testing.T) {
		server := mustParse(t, keys).ServerConfig()
		if r := handshake(t, server, mustParse(t, keys).ClientConfig("wrong.example")); r.clientErr == nil {
			t.Fatal("https: a wrong host name was accepted")
		}
		none := copyKeys(keys, KeyEndpointIdentification, "")
		if r := handshake(t, server, mustParse(t, none).ClientConfig("wrong.example")); r.clientErr != nil {
			t.Fatalf("empty algorithm: %v", r.clientErr)
		}
		// Without the name check the chain is still verified.
		strangerKeys := f.pemKeys("stranger")
		if r := handshake(t, mustParse(t, strangerKeys).ServerConfig(), mustParse(t, none).ClientConfig("localhost")); r.clientErr == nil {
			t.Fatal("empty algorithm: an untrusted server certificate was accepted")
		}
	})
	t.Run("TLS 1.0 is accepted by default, as Kafka 2.4 does", func(t *testing.T) {
		r := handshake(t, mustParse(t, keys).ServerConfig(),
			&tls.Config{RootCAs: f.caPool(), ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10})
		if r.clientErr != nil || r.client.Version != tls.VersionTLS10 {
			t.Fatalf("version %x, %v; want TLS 1.0", r.client.Version, r.clientErr)
		}
		r = handshake(t, mustParse(t, copyKeys(keys, KeyEnabledProtocols, "TLSv1.2")).ServerConfig(),
			&tls.Config{RootCAs: f.caPool(), ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
		if r.serverErr == nil {
			t.Fatal("ssl.enabled.protocols=TLSv1.2 accepted a TLS 1.1 client")
		}
	})
	t.Run("cipher suites restrict the handshake", func(t *testing.T) {
		// The fixtures' keys are ECDSA: an RSA-only suite list leaves nothing to agree on.
		rsaOnly := copyKeys(keys, KeyCipherSuites, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
		if r := handshake(t, mustParse(t, rsaOnly).ServerConfig(), &tls.Config{RootCAs: f.caPool(), ServerName: "localhost"}); r.serverErr == nil {
			t.Fatal("an ECDSA key was served with only an RSA suite enabled")
		}
		ecdsa := copyKeys(keys, KeyCipherSuites, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
		r := handshake(t, mustParse(t, ecdsa).ServerConfig(), &tls.Config{RootCAs: f.caPool(), ServerName: "localhost"})
		if r.clientErr != nil || r.client.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
			t.Fatalf("suite %x, %v", r.client.CipherSuite, r.clientErr)
		}
	})
	t.Run("TLS 1.3 is not offered by default", func(t *testing.T) {
		r := handshake(t, mustParse(t, keys).ServerConfig(), &tls.Config{RootCAs: f.caPool(), ServerName: "localhost"})
		if r.clientErr != nil || r.client.Version != tls.VersionTLS12 {
			t.Fatalf("version %x, %v; want TLS 1.2 (Kafka 2.4's enabled protocols)", r.client.Version, r.clientErr)
		}
	})
}

func copyKeys(keys map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(keys)+len(kv)/2)
	for k, v := range keys {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
