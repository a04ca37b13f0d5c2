package broker

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/security/jaas"
	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/broker/security/sslprincipal"
	"github.com/isrbroker/isrbroker/broker/security/tlsconf"
)

// Kafka's security protocols (listener.security.protocol.map values).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// ListenerSecurity is how one listener secures its connections (docs/security.md, "Listeners"):
// TLS on SSL and SASL_SSL, SASL authentication on SASL_PLAINTEXT and SASL_SSL. The zero value is
// PLAINTEXT.
type ListenerSecurity struct {
	Protocol string // one of the Protocol constants; "" is PLAINTEXT
	// TLS is the listener's keystore and trust store (SSL, SASL_SSL). On SASL_SSL no client
	// certificate is asked for (Kafka 2.4 has no mutual TLS there).
	TLS *tlsconf.Reloadable
	// SSLPrincipals maps a client certificate's DN to the principal (SSL only;
	// ssl.principal.mapping.rules); nil is DEFAULT.
	SSLPrincipals *sslprincipal.Mapper
	// Mechanisms are the enabled SASL mechanisms, in sasl.enabled.mechanisms order (SASL_*).
	Mechanisms []SASLMechanism
}

// SASLMechanism is one enabled mechanism of a SASL listener.
type SASLMechanism struct {
	Server sasl.Server
	// MaxReauth is connections.max.reauth.ms for the listener and mechanism (KIP-368): the
	// longest session before the client must re-authenticate; 0 disables re-authentication.
	MaxReauth time.Duration
}

func (l *ListenerSecurity) protocol() string {
	if l == nil || l.Protocol == "" {
		return ProtocolPlaintext
	}
	return l.Protocol
}

// usesTLS: SSL and SASL_SSL.
func (l *ListenerSecurity) usesTLS() bool {
	p := l.protocol()
	return p == ProtocolSSL || p == ProtocolSASLSSL
}

// usesSASL: SASL_PLAINTEXT and SASL_SSL.
func (l *ListenerSecurity) usesSASL() bool {
	p := l.protocol()
	return p == ProtocolSASLPlaintext || p == ProtocolSASLSSL
}

// mechanismNames is the SaslHandshake response's mechanism list.
func (l *ListenerSecurity) mechanismNames() []string {
	out := make([]string, len(l.Mechanisms))
	for i, m := range l.Mechanisms {
		out[i] = m.Server.Name()
	}
	return out
}

// mechanism is the enabled mechanism of that (case-sensitive) name, or nil.
func (l *ListenerSecurity) mechanism(name string) *SASLMechanism {
	for i := range l.Mechanisms {
		if l.Mechanisms[i].Server.Name() == name {
			return &l.Mechanisms[i]
		}
	}
	return nil
}

// tlsServerConfig is the listener's crypto/tls server configuration (each handshake reads the
// current keystore).
func (l *ListenerSecurity) tlsServerConfig() *tls.Config { return l.TLS.ServerConfig() }

// secure completes the TLS handshake of an SSL or SASL_SSL connection before any request is
// read, and sets an SSL connection's principal from the client's certificate (docs/security.md
// §2, "The principal of a TLS client"). It reports whether the connection may go on; a failed
// handshake or a certificate no mapping rule maps closes it. The handshake is bounded by the
// server's life and by the idle reaper (connections.max.idle.ms: nothing is read until it ends).
func (c *conn) secure() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	if err := tc.HandshakeContext(c.s.ctx); err != nil {
		requestWarnings.Info(c.log.WithError(err), c.listener+"/tls", "closing connection: TLS handshake failed")
		return false
	}
	c.activity.Add(1)
	if c.sec.protocol() != ProtocolSSL {
		return true // SASL_SSL: the principal comes from SASL
	}
	m := c.sec.SSLPrincipals
	if m == nil {
		m = defaultSSLPrincipals
	}
	cs := tc.ConnectionState()
	p, err := sslprincipal.Principal(&cs, m)
	if err != nil {
		requestWarnings.Info(c.log.WithError(err), c.listener+"/principal", "closing connection: no principal for the client certificate")
		return false
	}
	c.principal.Store(&p)
	return true
}

var defaultSSLPrincipals = func() *sslprincipal.Mapper {
	m, err := sslprincipal.ParseRules(sslprincipal.DefaultRules)
	if err != nil {
		panic("broker: ssl.principal.mapping.rules DEFAULT: " + err.Error())
	}
	return m
}()

// NewListenerSecurity builds the security of listener l from the validated broker config
// (config.Config.Validate has checked every key): its TLS stores, the SSL principal rules and
// the enabled SASL mechanisms with their JAAS users and connections.max.reauth.ms. creds are
// the SCRAM credentials (/config/users); nil refuses SCRAM mechanisms.
func NewListenerSecurity(cfg *config.Config, l config.Listener, creds sasl.CredentialStore) (*ListenerSecurity, error) {
	sec := &ListenerSecurity{Protocol: l.SecurityProtocol}
	if sec.usesTLS() {
		r, err := tlsconf.NewReloadable(cfg.TLSKeys(l), l.Name == cfg.InterBrokerListenerName)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		sec.TLS = r
		if sec.Protocol == ProtocolSSL {
			rules := sslprincipal.DefaultRules
			if v, ok := cfg.TLSKeys(l)[sslprincipal.RulesKey]; ok {
				rules = v
			}
			if sec.SSLPrincipals, err = sslprincipal.ParseRules(rules); err != nil {
				return nil, fmt.Errorf("listener %s: %s: %w", l.Name, sslprincipal.RulesKey, err)
			}
		}
	}
	if !sec.usesSASL() {
		return sec, nil
	}
	for _, name := range cfg.SASLMechanisms(l.Name) {
		entries, err := cfg.JAASEntries(l.Name, name)
		if err != nil {
			return nil, fmt.Errorf("listener %s, SASL mechanism %s: %w", l.Name, name, err)
		}
		sc := sasl.Config{Plain: sasl.StaticPlainUsers(jaas.PlainUsers(entries)), Credentials: creds, OAuthBearer: jaas.DefaultUnsecuredValidatorOptions()}
		if e, ok := jaas.FindModule(entries, jaas.OAuthBearerLoginModule); ok {
			if sc.OAuthBearer, err = e.UnsecuredValidator(); err != nil {
				return nil, fmt.Errorf("listener %s, SASL mechanism %s: %w", l.Name, name, err)
			}
		}
		srv, err := sasl.New(name, sc)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		sec.Mechanisms = append(sec.Mechanisms, SASLMechanism{Server: srv, MaxReauth: cfg.MaxReauth(l.Name, name)})
	}
	return sec, nil
}
