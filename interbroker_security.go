package main

import (
	"crypto/tls"
	"fmt"

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
// Not called yet: broker/config does not parse those keys on this branch, so the broker's
// connections stay PLAINTEXT. GSSAPI (docs/sasl.md §5) and OAUTHBEARER are refused.
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
