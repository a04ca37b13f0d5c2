package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/broker/security/jaas"
	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/broker/security/sslprincipal"
	"github.com/isrbroker/isrbroker/broker/security/tlsconf"
)

// The listeners' security keys (docs/security.md, "Listeners"): ssl.*, sasl.enabled.mechanisms
// and connections.max.reauth.ms apply per listener, a listener.name.<listener lower-case>.<key>
// overriding <key>; the JAAS config is per listener and mechanism,
// listener.name.<l>.<mechanism lower-case>.sasl.jaas.config. They are read from Props, the
// properties as given, and checked here at start-up: each error names the key to fix.

// Security protocols.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// perListenerKeys are the used keys read per listener (composite: the listener's prefixed key
// wins over the plain one).
var perListenerKeys = []string{
	"ssl.protocol", "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location",
	"ssl.keystore.password", "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location",
	"ssl.truststore.password", "ssl.endpoint.identification.algorithm", "ssl.client.auth",
	"ssl.cipher.suites", "ssl.principal.mapping.rules", "sasl.enabled.mechanisms", "connections.max.reauth.ms",
}

func init() { compositeKeys = append(compositeKeys, perListenerKeys...) }

// perMechanismSuffixes are the keys Kafka reads per listener and mechanism.
var perMechanismSuffixes = []string{".sasl.jaas.config", ".connections.max.reauth.ms"}

// listenerPrefixed splits listener.name.<l>.<rest>; ok false for other keys.
func listenerPrefixed(key string) (listener, rest string, ok bool) {
	tail, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", "", false
	}
	listener, rest, ok = strings.Cut(tail, ".")
	return listener, rest, ok && listener != "" && rest != ""
}

// classifyPrefixed classifies a listener.name. key by the key it overrides: a used broker key
// (returned, to validate the value) or a per-mechanism key is Used, any other is Ignored with a
// warning, as Kafka keeps unknown prefixed keys without using them.
func classifyPrefixed(key string) (Class, *configdef.Key) {
	_, rest, ok := listenerPrefixed(key)
	if !ok {
		return Unknown, nil
	}
	if k, found := configdef.Lookup(rest, configdef.Broker); found {
		if k.Status == configdef.Used && slices.Contains(perListenerKeys, k.Name) {
			return Used, k
		}
		return Ignored, nil
	}
	for _, suffix := range perMechanismSuffixes {
		if mech, ok := strings.CutSuffix(rest, suffix); ok && mech != "" && !strings.Contains(mech, ".") {
			if suffix == ".connections.max.reauth.ms" {
				return Used, configdef.MustLookup("connections.max.reauth.ms", configdef.Broker)
			}
			return Used, nil
		}
	}
	return Ignored, nil
}

// checkPrefixed validates a listener.name. key's value as the key it overrides; the error names
// the prefixed key. Other keys pass.
func checkPrefixed(key, value string) error {
	_, base := classifyPrefixed(key)
	if base == nil {
		return nil
	}
	if _, err := base.ParseValid(value); err != nil {
		err = fromTable(err)
		var ce *Error
		if errors.As(err, &ce) {
			ce.Key = key
		}
		return err
	}
	return nil
}

// listenerValue is key's value for listener: its listener.name. override, else the plain key.
// name is the property it came from.
func (c *Config) listenerValue(listener, key string) (value, name string, ok bool) {
	name = "listener.name." + strings.ToLower(listener) + "." + key
	if v, ok := c.Props[name]; ok {
		return v, name, true
	}
	v, ok := c.Props[key]
	return v, key, ok
}

// TLSKeys are the ssl.* keys of listener with its overrides applied (tlsconf.ListenerKeys). On
// SASL_SSL ssl.client.auth is none: Kafka 2.4 has no mutual TLS there (docs/security.md §2).
func (c *Config) TLSKeys(l Listener) map[string]string {
	keys := tlsconf.ListenerKeys(c.Props, l.Name)
	if l.SecurityProtocol == SASLSSL {
		keys[tlsconf.KeyClientAuth] = "none"
	}
	return keys
}

// SASLMechanisms is sasl.enabled.mechanisms of listener (default GSSAPI, as Kafka).
func (c *Config) SASLMechanisms(listener string) []string {
	v, _, ok := c.listenerValue(listener, "sasl.enabled.mechanisms")
	if !ok {
		v = defaultOf("sasl.enabled.mechanisms")
	}
	var out []string
	for _, m := range strings.Split(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// MaxReauth is connections.max.reauth.ms of a listener's mechanism:
// listener.name.<l>.<mechanism>.connections.max.reauth.ms, else the listener's, else the
// broker's (default 0: no re-authentication).
func (c *Config) MaxReauth(listener, mechanism string) time.Duration {
	v, ok := c.Props["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mechanism)+".connections.max.reauth.ms"]
	if !ok {
		v, _, ok = c.listenerValue(listener, "connections.max.reauth.ms")
	}
	if !ok {
		return 0
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, int64(1<<62)/int64(time.Millisecond))) * time.Millisecond
}

// JAASEntries are the server login modules of a listener's mechanism (docs/sasl.md §1):
// listener.name.<l>.<mechanism>.sasl.jaas.config (isrbroker reads no JAAS file).
func (c *Config) JAASEntries(listener, mechanism string) ([]jaas.Entry, error) {
	entries, _, err := jaas.ServerEntries(listener, mechanism, func(k string) (string, bool) {
		v, ok := c.Props[k]
		return v, ok
	}, nil)
	return entries, err
}

var knownMechanisms = []string{sasl.PLAIN, sasl.ScramSHA256, sasl.ScramSHA512, sasl.OAuthBearer}

// validateSecurity checks each listener's TLS and SASL keys as Kafka's channel builders do at
// start-up, and the inter-broker SASL mechanism (KafkaConfig.validateValues).
func (c *Config) validateSecurity() error {
	for _, l := range c.Listeners {
		switch l.SecurityProtocol {
		case SSL, SASLSSL:
			if err := c.validateTLS(l); err != nil {
				return err
			}
		}
		switch l.SecurityProtocol {
		case SASLPlaintext, SASLSSL:
			if err := c.validateSASL(l); err != nil {
				return err
			}
		}
	}
	ib, ok := c.InterBrokerListener()
	if ok && (ib.SecurityProtocol == SASLPlaintext || ib.SecurityProtocol == SASLSSL) &&
		!slices.Contains(c.SASLMechanisms(ib.Name), c.SaslMechanismInterBrokerProtocol) {
		return invalid("sasl.mechanism.inter.broker.protocol", c.SaslMechanismInterBrokerProtocol,
			"must be included in sasl.enabled.mechanisms of the inter-broker listener %s (%s) when SASL is used for inter-broker communication",
			ib.Name, strings.Join(c.SASLMechanisms(ib.Name), ","))
	}
	return nil
}

// shown is a value as an error may print it: passwords and JAAS texts are hidden.
func shown(key, value string) string {
	if strings.Contains(key, "password") || strings.HasSuffix(key, "sasl.jaas.config") {
		return "[hidden]"
	}
	return value
}

func (c *Config) validateTLS(l Listener) error {
	keys := c.TLSKeys(l)
	s, err := tlsconf.Parse(keys)
	if err != nil {
		var ke *tlsconf.KeyError
		if errors.As(err, &ke) {
			v, name, _ := c.listenerValue(l.Name, ke.Key)
			return invalid(name, shown(name, v), "listener %s: %v", l.Name, err)
		}
		return invalid("listeners", l.String(), "listener %s: %v", l.Name, err)
	}
	if !s.HasKeystore() {
		_, name, _ := c.listenerValue(l.Name, tlsconf.KeyKeystoreLocation)
		return &Error{Kind: ErrMissing, Key: name, Reason: fmt.Sprintf("listener %s (%s) needs a keystore", l.Name, l.SecurityProtocol)}
	}
	if l.SecurityProtocol == SSL {
		v, name, ok := c.listenerValue(l.Name, sslprincipal.RulesKey)
		if !ok {
			v = sslprincipal.DefaultRules
		}
		if _, err := sslprincipal.ParseRules(v); err != nil {
			return invalid(name, v, "%v", err)
		}
	}
	return nil
}

func (c *Config) validateSASL(l Listener) error {
	v, name, ok := c.listenerValue(l.Name, "sasl.enabled.mechanisms")
	if !ok {
		v = defaultOf("sasl.enabled.mechanisms")
	}
	mechs := c.SASLMechanisms(l.Name)
	if len(mechs) == 0 {
		return invalid(name, v, "listener %s (%s) enables no SASL mechanism", l.Name, l.SecurityProtocol)
	}
	for _, m := range mechs {
		if m == sasl.GSSAPI {
			return invalid(name, v, "listener %s (%s): %v", l.Name, l.SecurityProtocol, sasl.ErrGSSAPIUnsupported)
		}
		if !slices.Contains(knownMechanisms, m) {
			return invalid(name, v, "unknown SASL mechanism %q (isrbroker supports %s)", m, strings.Join(knownMechanisms, ", "))
		}
	}
	for _, m := range mechs {
		key := jaas.ServerConfigKey(l.Name, m)
		entries, err := c.JAASEntries(l.Name, m)
		if err != nil {
			if errors.Is(err, jaas.ErrNoServerConfig) {
				return &Error{Kind: ErrMissing, Key: key, Reason: fmt.Sprintf("the JAAS login module of SASL mechanism %s on listener %s", m, l.Name)}
			}
			return invalid(key, "[hidden]", "%v", err)
		}
		switch m {
		case sasl.PLAIN:
			if _, ok := jaas.FindModule(entries, jaas.PlainLoginModule); !ok {
				return invalid(key, "[hidden]", "SASL mechanism PLAIN needs %s (its user_<name>=\"<password>\" options are the users)", jaas.PlainLoginModule)
			}
		case sasl.OAuthBearer:
			e, ok := jaas.FindModule(entries, jaas.OAuthBearerLoginModule)
			if !ok {
				return invalid(key, "[hidden]", "SASL mechanism OAUTHBEARER needs %s", jaas.OAuthBearerLoginModule)
			}
			if _, err := e.UnsecuredValidator(); err != nil {
				return invalid(key, "[hidden]", "%v", err)
			}
		}
	}
	return nil
}
