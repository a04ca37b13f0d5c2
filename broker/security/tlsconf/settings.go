package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sort"
	"strings"
)

// Settings is one listener's validated ssl.* keys. Build it with Parse; it is immutable, and
// Reloadable swaps whole Settings.
type Settings struct {
	keys         map[string]string
	ClientAuth   tls.ClientAuthType
	MinVersion   uint16
	MaxVersion   uint16
	CipherSuites []uint16 // nil: Go's defaults (Kafka: the JVM's)
	// VerifyHostname is ssl.endpoint.identification.algorithm=https: as a TLS client the broker
	// checks the peer's certificate against the host it dials.
	VerifyHostname bool
	Certificates   []tls.Certificate   // the keystore; nil when none is configured
	TrustedCerts   []*x509.Certificate // the trust store; nil: the system roots
	roots          *x509.CertPool
	server         *tls.Config
}

// Keys returns a copy of the keys the settings were parsed from.
func (s *Settings) Keys() map[string]string {
	out := make(map[string]string, len(s.keys))
	for k, v := range s.keys {
		out[k] = v
	}
	return out
}

// Parse validates a listener's effective keys (ListenerKeys) and loads its stores. An error is a
// *KeyError naming the key to fix. Kafka 2.4's defaults apply to absent keys: ssl.protocol TLS,
// ssl.enabled.protocols TLSv1.2,TLSv1.1,TLSv1, store types JKS, ssl.client.auth none,
// ssl.endpoint.identification.algorithm https (docs/security.md §2).
func Parse(keys map[string]string) (*Settings, error) {
	s := &Settings{keys: make(map[string]string, len(keys))}
	for k, v := range keys {
		s.keys[k] = v
	}
	if err := checkProtocol(valueOr(keys, KeyProtocol, defaultProtocol)); err != nil {
		return nil, err
	}
	var err error
	if s.MinVersion, s.MaxVersion, err = parseEnabledProtocols(valueOr(keys, KeyEnabledProtocols, defaultEnabledProtocols)); err != nil {
		return nil, err
	}
	if s.ClientAuth, err = parseClientAuth(valueOr(keys, KeyClientAuth, defaultClientAuth)); err != nil {
		return nil, err
	}
	switch a := valueOr(keys, KeyEndpointIdentification, defaultEndpointIdentifying); strings.ToLower(a) {
	case "https":
		s.VerifyHostname = true
	case "":
	default:
		return nil, keyErr(KeyEndpointIdentification, nil, "%q not supported (https, or empty for none)", a)
	}
	if v, ok := set(keys, KeyCipherSuites); ok {
		var tls13Only bool
		if s.CipherSuites, tls13Only, err = parseCipherSuites(v); err != nil {
			return nil, err
		}
		if tls13Only {
			// Only TLS 1.3 suites named: Java then has no suite for an older version.
			if s.MaxVersion < tls.VersionTLS13 {
				return nil, keyErr(KeyCipherSuites, nil, "names only TLS 1.3 suites, but %s does not enable TLSv1.3", KeyEnabledProtocols)
			}
			s.MinVersion = tls.VersionTLS13
		}
	}
	if s.Certificates, err = loadKeystore(keys); err != nil {
		return nil, err
	}
	if s.TrustedCerts, err = loadTruststore(keys); err != nil {
		return nil, err
	}
	if s.TrustedCerts != nil {
		s.roots = x509.NewCertPool()
		for _, c := range s.TrustedCerts {
			s.roots.AddCert(c)
		}
	}
	s.server = s.buildServerConfig()
	return s, nil
}

// checkProtocol validates ssl.protocol, the JSSE SSLContext protocol. Kafka always sets the
// enabled protocols (ssl.enabled.protocols) on the engine, and those decide what is negotiated,
// so the value is only checked here.
func checkProtocol(p string) error {
	switch p {
	case "TLS", "SSL", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3":
		return nil
	}
	return keyErr(KeyProtocol, nil, "%q not supported (TLS, TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", p)
}

var protocolVersions = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// parseEnabledProtocols maps ssl.enabled.protocols to Go's version range. Go takes a range, not a
// set, so a list with a gap (TLSv1,TLSv1.2) is refused rather than widened; Java's SSLv2Hello
// pseudo-protocol is accepted and ignored; SSLv3 is refused (Go has none).
func parseEnabledProtocols(v string) (uint16, uint16, error) {
	enabled := map[uint16]bool{}
	var unknown []string
	for _, p := range list(v) {
		if p == "SSLv2Hello" {
			continue
		}
		ver, ok := protocolVersions[p]
		if !ok {
			unknown = append(unknown, p)
			continue
		}
		enabled[ver] = true
	}
	if len(unknown) > 0 {
		return 0, 0, keyErr(KeyEnabledProtocols, nil, "not supported: %s (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", strings.Join(unknown, ", "))
	}
	if len(enabled) == 0 {
		return 0, 0, keyErr(KeyEnabledProtocols, nil, "no protocol enabled")
	}
	lo, hi := uint16(tls.VersionTLS13), uint16(tls.VersionTLS10)
	for ver := range enabled {
		lo, hi = min(lo, ver), max(hi, ver)
	}
	for ver := lo; ver <= hi; ver++ {
		if !enabled[ver] {
			return 0, 0, keyErr(KeyEnabledProtocols, nil, "%q leaves a gap between versions; Go's TLS enables a contiguous range", v)
		}
	}
	return lo, hi, nil
}

func parseClientAuth(v string) (tls.ClientAuthType, error) {
	// Kafka 2.4's KafkaConfig accepts exactly required, requested, none; Go's types that verify
	// a certificate when one is sent (docs/security.md §2).
	switch v {
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "none":
		return tls.NoClientCert, nil
	}
	return 0, keyErr(KeyClientAuth, nil, "%q is not one of required, requested, none", v)
}

// cipherSuiteIDs maps the IANA suite names, which JSSE and Go share (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
// to Go's ids, including the suites Go supports only when named (tls.InsecureCipherSuites), and
// JSSE's older SSL_ spelling of the same suites (SSL_RSA_WITH_3DES_EDE_CBC_SHA).
var cipherSuiteIDs, tls13Suites = func() (map[string]uint16, map[string]bool) {
	ids, v13 := map[string]uint16{}, map[string]bool{}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			ids[cs.Name] = cs.ID
			if len(cs.SupportedVersions) == 1 && cs.SupportedVersions[0] == tls.VersionTLS13 {
				v13[cs.Name] = true
			}
		}
	}
	return ids, v13
}()

// parseCipherSuites maps ssl.cipher.suites. TLS 1.3 suites are accepted but not configurable in
// Go (it enables all three); JSSE's TLS_EMPTY_RENEGOTIATION_INFO_SCSV signalling value is
// accepted and ignored (Go always sends the extension). Unknown names are refused, all named.
func parseCipherSuites(v string) ([]uint16, bool, error) {
	var ids []uint16
	var unknown []string
	named13 := false
	for _, name := range list(v) {
		if name == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV" {
			continue
		}
		goName := name
		if rest, ok := strings.CutPrefix(name, "SSL_"); ok {
			goName = "TLS_" + rest
		}
		id, ok := cipherSuiteIDs[goName]
		switch {
		case !ok:
			unknown = append(unknown, name)
		case tls13Suites[goName]:
			named13 = true
		default:
			ids = append(ids, id)
		}
	}
	if len(unknown) > 0 {
		known := make([]string, 0, len(cipherSuiteIDs))
		for n := range cipherSuiteIDs {
			known = append(known, n)
		}
		sort.Strings(known)
		return nil, false, keyErr(KeyCipherSuites, nil, "unknown to Go's TLS: %s (supported: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return ids, len(ids) == 0 && named13, nil
}

func (s *Settings) buildServerConfig() *tls.Config {
	return &tls.Config{
		Certificates: s.Certificates,
		ClientAuth:   s.ClientAuth,
		ClientCAs:    s.roots, // nil: the system roots, as Java's default trust store
		MinVersion:   s.MinVersion,
		MaxVersion:   s.MaxVersion,
		CipherSuites: s.CipherSuites,
	}
}

// ServerConfig returns the listener's server configuration. It has no keystore when none is
// configured (an SSL listener needs one; the caller checks HasKeystore).
func (s *Settings) ServerConfig() *tls.Config { return s.server.Clone() }

// HasKeystore reports whether a keystore is configured.
func (s *Settings) HasKeystore() bool { return len(s.Certificates) > 0 }

// ClientConfig returns the configuration for the broker as a TLS client of host (inter-broker
// connections): the keystore as the client certificate, the trust store as roots, and the host
// name checked only under ssl.endpoint.identification.algorithm=https; with an empty algorithm
// the chain is still verified, the name is not (Java's behaviour).
func (s *Settings) ClientConfig(host string) *tls.Config {
	c := &tls.Config{
		Certificates: s.Certificates,
		RootCAs:      s.roots,
		ServerName:   host,
		MinVersion:   s.MinVersion,
		MaxVersion:   s.MaxVersion,
		CipherSuites: s.CipherSuites,
	}
	if !s.VerifyHostname {
		roots := s.roots
		c.InsecureSkipVerify = true // the name check only; the chain is verified below
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots, x509.ExtKeyUsageServerAuth)
		}
	}
	return c
}

// verifyChain verifies a peer's chain (leaf first) against roots (nil: the system roots) without a
// host name.
func verifyChain(chain []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return errors.New("no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(opts)
	return err
}
