package main

import (
	"crypto/tls"
	"fmt"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/security/tlsconf"

	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// newInterBrokerSecurity builds the client side of the inter-broker listener for the broker's
// own connections (runningBroker.interBroker): protocol is the listener's security protocol
// (listener.security.protocol.map), tlsFor its TLS client configuration per host (tlsconf's
// ClientConfig, with ssl.endpoint.identification.algorithm's host name check; needed for SSL and
// SASL_SSL), mechanism sasl.mechanism.inter.broker.protocol, and username and password the
// broker's own credentials from the listener's JAAS entry for that mechanism (docs/sasl.md §1:
// PlainLoginModule's or ScramLoginModule's username and password options).
//
// GSSAPI (docs/sasl.md §5) and OAUTHBEARER are refused.
func newInterBrokerSecurity(protocol string, tlsFor func(host string) *tls.Config, mechanism, username, password string) (kproto.Security, error) {
	var sec kproto.Security
	switch protocol {
	case "PLAINTEXT":
		return sec, nil
	case "SSL", "SASL_SSL":
		if tlsFor == nil {
			return sec, fmt.Errorf("inter-broker listener: %s needs a TLS client configuration", protocol)
		}
		sec.TLSFor = tlsFor
	case "SASL_PLAINTEXT":
	default:
		return sec, fmt.Errorf("inter-broker listener: unknown security protocol %q", protocol)
	}
	if protocol == "SSL" {
		return sec, nil
	}
	if username == "" {
		return sec, fmt.Errorf("sasl.mechanism.inter.broker.protocol=%s: the listener's JAAS entry names no username for the broker", mechanism)
	}
	switch mechanism {
	case "PLAIN":
		sec.SASL = plain.Auth{User: username, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		sec.SASL = scram.Auth{User: username, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		sec.SASL = scram.Auth{User: username, Pass: password}.AsSha512Mechanism()
	default:
		return sec, fmt.Errorf("sasl.mechanism.inter.broker.protocol=%s: isrbroker's broker client supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", mechanism)
	}
	return sec, nil
}

// interBrokerSecurity is the client side of cfg's inter-broker listener (inter.broker.listener.name):
// its security protocol, its ssl.* keys (the broker's keystore and truststore, host name
// verification as ssl.endpoint.identification.algorithm says) and, for SASL, the mechanism
// sasl.mechanism.inter.broker.protocol with the username and password of the listener's JAAS
// entry for it (Kafka's broker logs in with the same entry's username and password options).
func interBrokerSecurity(cfg *config.Config) (kproto.Security, error) {
	var l *config.Listener
	for i := range cfg.Listeners {
		if cfg.Listeners[i].Name == cfg.InterBrokerListenerName {
			l = &cfg.Listeners[i]
		}
	}
	if l == nil || l.SecurityProtocol == "PLAINTEXT" || l.SecurityProtocol == "" {
		return kproto.Security{}, nil
	}
	var tlsFor func(string) *tls.Config
	if l.SecurityProtocol == "SSL" || l.SecurityProtocol == "SASL_SSL" {
		r, err := tlsconf.NewReloadable(cfg.TLSKeys(*l), true)
		if err != nil {
			return kproto.Security{}, fmt.Errorf("inter-broker listener %s: %w", l.Name, err)
		}
		tlsFor = r.ClientConfig
	}
	var user, pass string
	if l.SecurityProtocol == "SASL_PLAINTEXT" || l.SecurityProtocol == "SASL_SSL" {
		mech := cfg.SaslMechanismInterBrokerProtocol
		entries, err := cfg.JAASEntries(l.Name, mech)
		if err != nil {
			return kproto.Security{}, fmt.Errorf("inter-broker listener %s, mechanism %s: %w", l.Name, mech, err)
		}
		for _, e := range entries {
			if u, p, err := e.Credentials(); err == nil && u != "" {
				user, pass = u, p
				break
			}
		}
	}
	return newInterBrokerSecurity(l.SecurityProtocol, tlsFor, cfg.SaslMechanismInterBrokerProtocol, user, pass)
}
