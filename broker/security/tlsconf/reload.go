package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/isrbroker/isrbroker/broker/security/sslprincipal"
)

// Reloadable holds a listener's Settings behind an atomic pointer so that the keystore and
// trust store can be replaced while connections are accepted (Kafka's dynamic
// listener.name.<l>.ssl.keystore.* updates, KIP-226). Handshakes read the pointer once, through
// GetConfigForClient or GetCertificate; Reload validates the new stores before it swaps, so a bad
// update leaves the old ones serving, as Kafka's SslFactory.reconfigure does (docs/security.md §2).
type Reloadable struct {
	mu  sync.Mutex // serialises Reload
	cur atomic.Pointer[Settings]
	// verifyWithTruststore is Kafka's keystoreVerifiableUsingTruststore, true for the
	// inter-broker listener: a new keystore must be trusted by the old trust store and the old
	// keystore by the new one, so brokers on either side of a rolling update still connect.
	verifyWithTruststore bool
}

// NewReloadable parses keys (see Parse). interBroker marks the inter-broker listener, on which
// Reload also checks trust between the old and new stores.
func NewReloadable(keys map[string]string, interBroker bool) (*Reloadable, error) {
	s, err := Parse(keys)
	if err != nil {
		return nil, err
	}
	r := &Reloadable{verifyWithTruststore: interBroker}
	r.cur.Store(s)
	return r, nil
}

// Current returns the settings in force.
func (r *Reloadable) Current() *Settings { return r.cur.Load() }

// ServerConfig returns a listener configuration whose every handshake takes the settings in
// force at that moment.
func (r *Reloadable) ServerConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: r.GetConfigForClient}
}

// GetConfigForClient is a tls.Config hook: the current settings' server configuration.
func (r *Reloadable) GetConfigForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	return r.cur.Load().server, nil
}

// ClientConfig is the current settings' client configuration (Settings.ClientConfig): a dial
// after a Reload presents the new keystore.
func (r *Reloadable) ClientConfig(host string) *tls.Config { return r.cur.Load().ClientConfig(host) }

// GetCertificate is a tls.Config hook for callers that build their own configuration: the current
// keystore's certificate that suits the client's hello (the first when none says it suits).
func (r *Reloadable) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	certs := r.cur.Load().Certificates
	if len(certs) == 0 {
		return nil, errors.New("tlsconf: no keystore configured")
	}
	for i := range certs {
		if hello.SupportsCertificate(&certs[i]) == nil {
			return &certs[i], nil
		}
	}
	return &certs[0], nil
}

// Reload applies a live update. newKeys is the listener's complete effective key set after the
// update; only its ReconfigurableKeys are taken, the others stay as they were (Kafka ignores
// them here too). The new settings replace the old ones only if they parse, and, as Kafka 2.4's
// SslFactory checks:
//   - a keystore is neither added to nor removed from a listener, and a trust store not added;
//   - each new certificate has the subject and subject alternative names of the old one
//     ("Keystore DistinguishedName or SubjectAltNames do not match"), so clients that pinned the
//     broker's identity or ACLs on its DN are not surprised;
//   - on the inter-broker listener, the old trust store trusts the new keystore and the new
//     trust store the old keystore.
//
// On error the old settings keep serving.
func (r *Reloadable) Reload(newKeys map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	next := old.Keys()
	for _, k := range ReconfigurableKeys {
		if v, ok := newKeys[k]; ok {
			next[k] = v
		} else {
			delete(next, k)
		}
	}
	s, err := Parse(next)
	if err != nil {
		return fmt.Errorf("validation of the SSL update failed, old keystore kept: %w", err)
	}
	if err := compatible(old, s, r.verifyWithTruststore); err != nil {
		return fmt.Errorf("validation of the SSL update failed, old keystore kept: %w", err)
	}
	r.cur.Store(s)
	return nil
}

func compatible(old, s *Settings, verifyTrust bool) error {
	switch {
	case !old.HasKeystore() && s.HasKeystore():
		return errors.New("Cannot add SSL keystore to an existing listener for which no keystore was configured.")
	case old.HasKeystore() && !s.HasKeystore():
		return errors.New("Cannot remove the SSL keystore from an existing listener for which a keystore was configured.")
	case old.TrustedCerts == nil && s.TrustedCerts != nil:
		return errors.New("Cannot add SSL truststore to an existing listener for which no truststore was configured.")
	}
	if len(old.Certificates) != len(s.Certificates) {
		return fmt.Errorf("Keystore DistinguishedName or SubjectAltNames do not match: %d entries, were %d", len(s.Certificates), len(old.Certificates))
	}
	for i := range old.Certificates {
		o, n := old.Certificates[i].Leaf, s.Certificates[i].Leaf
		if !bytes.Equal(o.RawSubject, n.RawSubject) || !slices.Equal(altNames(o), altNames(n)) {
			return fmt.Errorf("Keystore DistinguishedName or SubjectAltNames do not match: new %s, old %s", describe(n), describe(o))
		}
	}
	if !verifyTrust || !old.HasKeystore() {
		return nil
	}
	for i := range old.Certificates {
		if err := verifyChain(leafChain(s.Certificates[i]), old.roots, x509.ExtKeyUsageAny); err != nil {
			return fmt.Errorf("the old trust store does not trust the new keystore: %w", err)
		}
		if err := verifyChain(leafChain(old.Certificates[i]), s.roots, x509.ExtKeyUsageAny); err != nil {
			return fmt.Errorf("the new trust store does not trust the old keystore: %w", err)
		}
	}
	return nil
}

func leafChain(c tls.Certificate) []*x509.Certificate {
	chain := []*x509.Certificate{c.Leaf}
	for _, der := range c.Certificate[1:] {
		if cert, err := x509.ParseCertificate(der); err == nil {
			chain = append(chain, cert)
		}
	}
	return chain
}

// altNames is a certificate's subject alternative names as a sorted set (Kafka compares them as
// a set).
func altNames(c *x509.Certificate) []string {
	var out []string
	for _, n := range c.DNSNames {
		out = append(out, "dns:"+n)
	}
	for _, n := range c.EmailAddresses {
		out = append(out, "email:"+n)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "ip:"+net.IP(ip).String())
	}
	for _, u := range c.URIs {
		out = append(out, "uri:"+u.String())
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func describe(c *x509.Certificate) string {
	dn, err := sslprincipal.FormatDN(c.RawSubject)
	if err != nil {
		dn = c.Subject.String()
	}
	return fmt.Sprintf("subject %q, alt names %v", dn, altNames(c))
}
