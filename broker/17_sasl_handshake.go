package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake: v0-1.
//
// Behavior:
//   - On a SASL listener's connection before authentication, and for a KIP-368
//     re-authentication, the connection's authenticator serves it (sasl_conn.go): the
//     mechanism list, UNSUPPORTED_SASL_MECHANISM, v1 turning on SaslAuthenticate framing.
//   - Reaching this handler (a PLAINTEXT or SSL listener, an authenticated connection that
//     cannot re-authenticate now): ILLEGAL_SASL_STATE with no mechanisms, as Kafka's
//     KafkaApis.handleSaslHandshakeRequest answers.

func init() { regKey(kmsg.SASLHandshake, 0, 1, handleSaslHandshake) }

func handleSaslHandshake(_ *Server, r *request, kreq kmsg.Request) {
	resp := kreq.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	r.respond(resp)
}
