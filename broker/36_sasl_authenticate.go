package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslAuthenticate: v0-1.
//
// Behavior:
//   - After a SaslHandshake v1 on a SASL listener, the connection's authenticator serves it
//     (sasl_conn.go): each token goes to the mechanism; SASL_AUTHENTICATION_FAILED with the
//     mechanism's text; session_lifetime_ms (v1) from connections.max.reauth.ms (KIP-368).
//   - Reaching this handler (no handshake in progress): ILLEGAL_SASL_STATE, as Kafka's
//     KafkaApis.handleSaslAuthenticateRequest answers.

func init() { regKey(kmsg.SASLAuthenticate, 0, 1, handleSaslAuthenticate) }

func handleSaslAuthenticate(_ *Server, r *request, kreq kmsg.Request) {
	resp := kreq.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	r.respond(resp)
}
