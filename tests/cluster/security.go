package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TLSFixtures are a test CA made by openssl and a broker keystore made by keytool whose
// certificate that CA signs (docs/security.md §2): the stores are JKS, Kafka's default type, the
// certificate has subject alternative names for 127.0.0.1 and localhost.
type TLSFixtures struct {
	Dir        string // holds every file below
	CAPEM      string // the CA certificate (PEM): a client's trust anchor (ssl.ca.location)
	Keystore   string // JKS: the broker's key and chain (ssl.keystore.location)
	Truststore string // JKS: the CA (ssl.truststore.location)
	Password   string // the stores' and the key's password
}

// MakeTLSFixtures writes a fresh CA and broker keystore into a test temp dir with openssl and
// keytool (the test is skipped when either is missing).
func MakeTLSFixtures(t testing.TB) TLSFixtures {
	t.Helper()
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	dir := t.TempDir()
	f := TLSFixtures{Dir: dir, CAPEM: filepath.Join(dir, "ca.pem"), Keystore: filepath.Join(dir, "broker.jks"),
		Truststore: filepath.Join(dir, "truststore.jks"), Password: "store-pw"}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cluster: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	ext := filepath.Join(dir, "leaf.ext")
	if err := os.WriteFile(ext, []byte("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
		"-subj", "/CN=isrbroker test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	ks := []string{"-keystore", "broker.jks", "-storetype", "JKS", "-storepass", f.Password}
	run("keytool", append([]string{"-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
		"-dname", "CN=localhost", "-keypass", f.Password, "-ext", "SAN=ip:127.0.0.1,dns:localhost"}, ks...)...)
	run("keytool", append([]string{"-certreq", "-alias", "broker", "-file", "broker.csr"}, ks...)...)
	run("openssl", "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
		"-out", "broker.pem", "-days", "2", "-extfile", "leaf.ext")
	run("keytool", append([]string{"-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem"}, ks...)...)
	run("keytool", append([]string{"-importcert", "-noprompt", "-alias", "broker", "-file", "broker.pem"}, ks...)...)
	run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-keystore", "truststore.jks",
		"-storetype", "JKS", "-storepass", f.Password)
	return f
}

// ClientTLS is a client configuration trusting only the fixtures' CA.
func (f TLSFixtures) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("cluster: %s holds no certificate", f.CAPEM)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// SASLSSLListener is one SASL_SSL listener for clients and brokers beside the harness's
// PLAINTEXT one: SCRAM-SHA-256, SCRAM-SHA-512 (credentials from /config/users) and PLAIN (the
// users in PlainUsers), the inter-broker listener with SCRAM-SHA-512 as InterBrokerUser.
type SASLSSLListener struct {
	TLS             TLSFixtures
	InterBrokerUser string
	InterBrokerPass string
	PlainUsers      map[string]string
	Extra           map[string]string // more overrides for every broker
	Ports           map[int32]int     // filled by Overrides: broker id → SASL_SSL port
}

// Overrides returns the BrokerOverrides for brokers 1..n and records each broker's port.
func (l *SASLSSLListener) Overrides(t testing.TB, n int) map[int32]map[string]string {
	t.Helper()
	l.Ports = map[int32]int{}
	plain := fmt.Sprintf(`user_%s="%s"`, l.InterBrokerUser, l.InterBrokerPass)
	for u, p := range l.PlainUsers {
		plain += fmt.Sprintf(` user_%s="%s"`, u, p)
	}
	scram := fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, l.InterBrokerUser, l.InterBrokerPass)
	out := map[int32]map[string]string{}
	for id := int32(1); id <= int32(n); id++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		l.Ports[id] = port
		o := map[string]string{
			"listeners":                                             fmt.Sprintf("PLAINTEXT://%s,SASL_SSL://127.0.0.1:%d", AddrToken, port),
			"inter.broker.listener.name":                            "SASL_SSL",
			"sasl.enabled.mechanisms":                               "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
			"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram,
			"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
			"listener.name.sasl_ssl.plain.sasl.jaas.config":         `org.apache.kafka.common.security.plain.PlainLoginModule required ` + plain + ";",
			"ssl.keystore.location":                                 l.TLS.Keystore,
			"ssl.keystore.password":                                 l.TLS.Password,
			"ssl.key.password":                                      l.TLS.Password,
			"ssl.truststore.location":                               l.TLS.Truststore,
			"ssl.truststore.password":                               l.TLS.Password,
			"connection.failed.authentication.delay.ms":             "50",
		}
		for k, v := range l.Extra {
			o[k] = v
		}
		out[id] = o
	}
	return out
}

// Seeds are the SASL_SSL addresses of every broker (after Overrides).
func (l *SASLSSLListener) Seeds() []string {
	var s []string
	for id := int32(1); id <= int32(len(l.Ports)); id++ {
		s = append(s, fmt.Sprintf("127.0.0.1:%d", l.Ports[id]))
	}
	return s
}

// AddScramUser writes user's SCRAM-SHA-256 and SCRAM-SHA-512 credentials into /config/users
// with `isrbroker configs --zookeeper` (docs/configs-tool.md), as an operator would.
func AddScramUser(t testing.TB, zkAddr, user, password string) {
	t.Helper()
	res := RunBinary(t, "", 30*time.Second, "configs", "--zookeeper", zkAddr, "--alter", "--entity-type", "users",
		"--entity-name", user, "--add-config", fmt.Sprintf("SCRAM-SHA-256=[password=%s],SCRAM-SHA-512=[password=%s]", password, password))
	if res.ExitCode != 0 {
		t.Fatalf("cluster: configs --add-config SCRAM for %s: exit %d\n%s%s", user, res.ExitCode, res.Stdout, res.Stderr)
	}
}
