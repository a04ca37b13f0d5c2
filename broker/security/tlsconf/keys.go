// Package tlsconf builds the crypto/tls configuration of a TLS listener (and of the broker as a TLS
// client) from Kafka's ssl.* keys, and holds it so that the keystore can be replaced live as
// Kafka's dynamic listener.name.<l>.ssl.keystore.* updates do (KIP-226). docs/security.md §2
// restates the Kafka 2.4 rules it follows.
//
// It is a shared leaf: it imports nothing of the repository but broker/security/sslprincipal's
// DN text (for messages). The caller resolves which keys apply to a listener (ListenerKeys).
package tlsconf

import (
	"fmt"
	"strings"
)

// Kafka's ssl.* key names (SslConfigs, BrokerSecurityConfigs); the last three are Kafka 2.7's
// KIP-651 PEM keys, accepted here although 2.4 lacks them (docs/security.md §2).
const (
	KeyProtocol                = "ssl.protocol"
	KeyEnabledProtocols        = "ssl.enabled.protocols"
	KeyCipherSuites            = "ssl.cipher.suites"
	KeyClientAuth              = "ssl.client.auth"
	KeyEndpointIdentification  = "ssl.endpoint.identification.algorithm"
	KeyKeystoreType            = "ssl.keystore.type"
	KeyKeystoreLocation        = "ssl.keystore.location"
	KeyKeystorePassword        = "ssl.keystore.password"
	KeyKeyPassword             = "ssl.key.password"
	KeyTruststoreType          = "ssl.truststore.type"
	KeyTruststoreLocation      = "ssl.truststore.location"
	KeyTruststorePassword      = "ssl.truststore.password"
	KeyKeystoreKey             = "ssl.keystore.key"
	KeyKeystoreCertChain       = "ssl.keystore.certificate.chain"
	KeyTruststoreCertificates  = "ssl.truststore.certificates"
	listenerPrefix             = "listener.name."
	defaultProtocol            = "TLS"
	defaultEnabledProtocols    = "TLSv1.2,TLSv1.1,TLSv1"
	defaultStoreType           = "JKS"
	defaultClientAuth          = "none"
	defaultEndpointIdentifying = "https"
)

// ReconfigurableKeys are the keys a live update may change (Kafka's
// SslConfigs.RECONFIGURABLE_CONFIGS, plus the KIP-651 PEM keys); Reload ignores the others, as
// Kafka's SslFactory.reconfigure does.
var ReconfigurableKeys = []string{
	KeyKeystoreType, KeyKeystoreLocation, KeyKeystorePassword, KeyKeyPassword,
	KeyTruststoreType, KeyTruststoreLocation, KeyTruststorePassword,
	KeyKeystoreKey, KeyKeystoreCertChain, KeyTruststoreCertificates,
}

// ListenerKeys returns the effective keys of listener: every key of configs that has no
// listener.name. prefix, overridden by each listener.name.<listener>.<key> with the prefix
// stripped. The listener name is lower-cased, as Kafka's ListenerName.configPrefix() does, so
// listener SSL reads listener.name.ssl.* (docs/security.md §1). Keys of other listeners are left
// out.
func ListenerKeys(configs map[string]string, listener string) map[string]string {
	prefix := listenerPrefix + strings.ToLower(listener) + "."
	out := make(map[string]string, len(configs))
	for k, v := range configs {
		if !strings.HasPrefix(k, listenerPrefix) {
			out[k] = v
		}
	}
	for k, v := range configs {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// KeyError is a bad value or a store that cannot be loaded; Key names the config key to fix.
type KeyError struct {
	Key string
	Msg string
	Err error
}

func (e *KeyError) Error() string {
	s := e.Key + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *KeyError) Unwrap() error { return e.Err }

func keyErr(key string, err error, format string, args ...any) *KeyError {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...), Err: err}
}

// value returns a key's value, trimmed; Kafka's ConfigDef trims STRING and LIST values.
func value(keys map[string]string, key string) (string, bool) {
	v, ok := keys[key]
	return strings.TrimSpace(v), ok
}

// valueOr returns a key's trimmed value or def when the key is absent.
func valueOr(keys map[string]string, key, def string) string {
	if v, ok := value(keys, key); ok {
		return v
	}
	return def
}

// list splits a Kafka LIST value: comma-separated, each item trimmed, empty items dropped.
func list(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
