package sslprincipal

import (
	"crypto/tls"
	"fmt"
)

// Anonymous is Kafka's KafkaPrincipal.ANONYMOUS as text: the principal of a PLAINTEXT connection
// and of an SSL connection whose client sent no certificate.
const Anonymous = "User:ANONYMOUS"

// PrincipalError is returned when the client certificate's DN cannot be mapped; the message is
// Kafka's ("Failed to map name for '<dn>' based on SSL principal mapping rules.").
type PrincipalError struct {
	DN  string
	Err error
}

func (e *PrincipalError) Error() string {
	return fmt.Sprintf("Failed to map name for '%s' based on SSL principal mapping rules.: %v", e.DN, e.Err)
}

func (e *PrincipalError) Unwrap() error { return e.Err }

// Principal is the principal of a completed handshake on an SSL listener, as Kafka 2.4's
// DefaultKafkaPrincipalBuilder builds it: "User:" + the mapped RFC 2253 DN of the client's leaf
// certificate, or Anonymous when the client sent none (docs/security.md §2). The certificate must
// have been verified by the handshake: the caller's tls.Config uses VerifyClientCertIfGiven or
// RequireAndVerifyClientCert (ssl.client.auth requested/required), never an unverified mode.
// A SASL_SSL listener takes its principal from SASL instead and never calls this.
func Principal(cs *tls.ConnectionState, m *Mapper) (string, error) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := FormatDN(cs.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", &PrincipalError{Err: err}
	}
	name, err := m.Name(dn)
	if err != nil {
		return "", &PrincipalError{DN: dn, Err: err}
	}
	return "User:" + name, nil
}
