package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fixtures are the test's PKI, made with openssl (and keytool for JKS) in a t.TempDir(): a CA, a
// broker certificate signed by it (subject C=US,O=Acme,OU=Brokers,CN=broker1, SANs localhost and
// 127.0.0.1) in every store format, a second broker certificate with the same names and a new
// key (a renewal), one with another subject, one from an unknown CA, and a client certificate.
type fixtures struct {
	t   *testing.T
	dir string
}

const (
	storePass = "store-secret"
	keyPass   = "key-secret"
	trustPass = "trust-secret"
)

func newFixtures(t *testing.T) *fixtures {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed: the fixtures need it")
	}
	f := &fixtures{t: t, dir: t.TempDir()}
	f.ca("ca", "/CN=Test CA")
	f.ca("otherca", "/CN=Other CA")
	f.leaf("broker", "ca", "/C=US/O=Acme/OU=Brokers/CN=broker1", "serverAuth,clientAuth", 11)
	f.leaf("renewed", "ca", "/C=US/O=Acme/OU=Brokers/CN=broker1", "serverAuth,clientAuth", 12)
	f.leaf("renamed", "ca", "/C=US/O=Acme/OU=Brokers/CN=broker2", "serverAuth,clientAuth", 13)
	f.leaf("stranger", "otherca", "/C=US/O=Acme/OU=Brokers/CN=broker1", "serverAuth,clientAuth", 14)
	f.leaf("alice", "ca", "/C=US/O=Acme/OU=Clients/CN=Alice", "clientAuth", 15)
	// The broker key encrypted (PKCS#8 PBES2) and the broker's PKCS12 store, with the CA as chain.
	f.openssl("pkcs8", "-topk8", "-in", f.path("broker.key"), "-out", f.path("broker-enc.key"),
		"-v2", "aes-256-cbc", "-passout", "pass:"+keyPass)
	for _, name := range []string{"broker", "renewed", "renamed", "stranger"} {
		f.openssl("pkcs12", "-export", "-in", f.path(name+".pem"), "-inkey", f.path(name+".key"),
			"-certfile", f.path("ca.pem"), "-name", "broker", "-out", f.path(name+".p12"), "-passout", "pass:"+storePass)
	}
	return f
}

func (f *fixtures) path(name string) string { return filepath.Join(f.dir, name) }

func (f *fixtures) read(name string) string {
	b, err := os.ReadFile(f.path(name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixtures) run(tool string, args ...string) {
	f.t.Helper()
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
}

func (f *fixtures) openssl(args ...string) { f.t.Helper(); f.run("openssl", args...) }

func (f *fixtures) ca(name, subj string) {
	f.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", f.path(name+".key"), "-out", f.path(name+".pem"), "-days", "2", "-subj", subj,
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
}

func (f *fixtures) leaf(name, ca, subj, usage string, serial int) {
	ext := f.path(name + ".ext")
	if err := os.WriteFile(ext, []byte("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage="+usage+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	f.openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", f.path(name+".key"), "-out", f.path(name+".csr"), "-subj", subj)
	f.openssl("x509", "-req", "-in", f.path(name+".csr"), "-CA", f.path(ca+".pem"), "-CAkey", f.path(ca+".key"),
		"-set_serial", strconv.Itoa(serial), "-days", "2", "-extfile", ext, "-out", f.path(name+".pem"))
}

// keytool converts the named PKCS12 store to JKS (key password keyPass) and builds the JKS and
// PKCS12 trust stores holding the CA; the test is skipped where no keytool is installed.
func (f *fixtures) keytool(name string) {
	f.t.Helper()
	if _, err := exec.LookPath("keytool"); err != nil {
		f.t.Skip("keytool not installed: the JKS-from-keytool case needs it")
	}
	if _, err := os.Stat(f.path(name + ".jks")); err == nil {
		return
	}
	f.run("keytool", "-importkeystore", "-noprompt", "-srckeystore", f.path(name+".p12"), "-srcstoretype", "PKCS12",
		"-srcstorepass", storePass, "-srcalias", "broker", "-destkeystore", f.path(name+".jks"), "-deststoretype", "JKS",
		"-deststorepass", storePass, "-destalias", "broker", "-destkeypass", keyPass)
	if _, err := os.Stat(f.path("trust.jks")); err == nil {
		return
	}
	for _, typ := range []string{"JKS", "PKCS12"} {
		f.run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", f.path("ca.pem"),
			"-keystore", f.path("trust."+strings.ToLower(typ)), "-storetype", typ, "-storepass", trustPass)
	}
}

// pemKeys are the keys of a PEM keystore file (key + chain in one file) and a PEM trust store.
func (f *fixtures) pemKeys(name string) map[string]string {
	combined := f.path(name + "-combined.pem")
	if err := os.WriteFile(combined, []byte(f.read(name+".key")+f.read(name+".pem")+f.read("ca.pem")), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return map[string]string{
		KeyKeystoreType: "PEM", KeyKeystoreLocation: combined,
		KeyTruststoreType: "PEM", KeyTruststoreLocation: f.path("ca.pem"),
	}
}

// caPool is a client's roots: the test CA.
func (f *fixtures) caPool() *x509.CertPool {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(f.read("ca.pem"))) {
		f.t.Fatal("ca.pem")
	}
	return pool
}

func (f *fixtures) keyPair(name string) tls.Certificate {
	c, err := tls.LoadX509KeyPair(f.path(name+".pem"), f.path(name+".key"))
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

type handshakeResult struct {
	server, client       tls.ConnectionState
	serverErr, clientErr error
}

// handshake runs a TLS handshake over net.Pipe and returns both sides' states and errors. A side
// that fails closes its end, so the other returns too; the deadline bounds a stuck handshake.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) handshakeResult {
	t.Helper()
	c1, c2 := net.Pipe()
	deadline := time.Now().Add(10 * time.Second)
	_ = c1.SetDeadline(deadline)
	_ = c2.SetDeadline(deadline)
	srv, cli := tls.Server(c1, serverCfg), tls.Client(c2, clientCfg)
	var r handshakeResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r.serverErr = srv.Handshake(); r.serverErr != nil {
			c1.Close()
			return
		}
		r.server = srv.ConnectionState()
	}()
	if r.clientErr = cli.Handshake(); r.clientErr != nil {
		c2.Close()
	} else {
		r.client = cli.ConnectionState()
	}
	<-done
	c1.Close()
	c2.Close()
	return r
}

// servedSerial is the serial number of the certificate a client sees.
func servedSerial(t *testing.T, serverCfg *tls.Config, f *fixtures) string {
	t.Helper()
	r := handshake(t, serverCfg, &tls.Config{RootCAs: f.caPool(), ServerName: "localhost"})
	if r.clientErr != nil || r.serverErr != nil {
		t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
	}
	return r.client.PeerCertificates[0].SerialNumber.String()
}
