package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";`

// saslListener is a SASL_PLAINTEXT client listener beside the PLAINTEXT inter-broker one.
func saslListener(kv ...string) map[string]string {
	return with(append([]string{
		"listeners", "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094",
	}, kv...)...)
}

func TestSecurityKeys(t *testing.T) {
	c, warnings, err := Parse(saslListener(
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"connections.max.reauth.ms", "60000",
		"listener.name.sasl_plaintext.plain.connections.max.reauth.ms", "5000",
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "listener.name.") {
			t.Errorf("prefixed security key warned: %s", w)
		}
	}
	if got := strings.Join(c.SASLMechanisms("SASL_PLAINTEXT"), ","); got != "PLAIN,SCRAM-SHA-256" {
		t.Errorf("mechanisms %s", got)
	}
	if got := strings.Join(c.SASLMechanisms("PLAINTEXT"), ","); got != "GSSAPI" {
		t.Errorf("default mechanisms %s, want Kafka's GSSAPI", got)
	}
	if d := c.MaxReauth("SASL_PLAINTEXT", "PLAIN"); d != 5*time.Second {
		t.Errorf("PLAIN reauth %v", d)
	}
	if d := c.MaxReauth("SASL_PLAINTEXT", "SCRAM-SHA-256"); d != time.Minute {
		t.Errorf("SCRAM reauth %v", d)
	}
	if c.ConnectionFailedAuthenticationDelay != 100*time.Millisecond || c.SaslMechanismInterBrokerProtocol != "GSSAPI" {
		t.Errorf("defaults: delay %v, inter-broker mechanism %s", c.ConnectionFailedAuthenticationDelay, c.SaslMechanismInterBrokerProtocol)
	}
	if e, err := c.JAASEntries("SASL_PLAINTEXT", "PLAIN"); err != nil || e[0].Options["user_alice"] != "alice-pw" {
		t.Errorf("JAAS %v %v", e, err)
	}
}

func TestSecurityErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		props map[string]string
		kind  error
		want  string
	}{
		{"GSSAPI default", saslListener(), ErrInvalidValue,
			`invalid value "GSSAPI" for "sasl.enabled.mechanisms": listener SASL_PLAINTEXT (SASL_PLAINTEXT): SASL mechanism GSSAPI needs a Kerberos KDC`},
		{"unknown mechanism", saslListener("sasl.enabled.mechanisms", "PLAIN,DIGEST-MD5"), ErrInvalidValue,
			`unknown SASL mechanism "DIGEST-MD5"`},
		{"no JAAS", saslListener("sasl.enabled.mechanisms", "PLAIN"), ErrMissing,
			`missing required config "listener.name.sasl_plaintext.plain.sasl.jaas.config"`},
		{"bad JAAS", saslListener("sasl.enabled.mechanisms", "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config", "nonsense"), ErrInvalidValue,
			`invalid value "[hidden]" for "listener.name.sasl_plaintext.plain.sasl.jaas.config"`},
		{"PLAIN needs PlainLoginModule", saslListener("sasl.enabled.mechanisms", "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required;`), ErrInvalidValue,
			`SASL mechanism PLAIN needs org.apache.kafka.common.security.plain.PlainLoginModule`},
		{"inter-broker mechanism", saslListener("sasl.enabled.mechanisms", "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS, "inter.broker.listener.name", "SASL_PLAINTEXT"), ErrInvalidValue,
			`invalid value "GSSAPI" for "sasl.mechanism.inter.broker.protocol": must be included in sasl.enabled.mechanisms of the inter-broker listener SASL_PLAINTEXT (PLAIN)`},
		{"prefixed value", saslListener("listener.name.ssl.ssl.client.auth", "maybe"), ErrInvalidValue,
			`invalid value "maybe" for "listener.name.ssl.ssl.client.auth": must be one of required, requested, none`},
		{"delay", with("connection.failed.authentication.delay.ms", "-1"), ErrInvalidValue,
			`invalid value "-1" for "connection.failed.authentication.delay.ms": must be at least 0`},
		{"SSL keystore", with("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
			"listener.name.ssl.ssl.keystore.location", "/nonexistent/ks.p12", "listener.name.ssl.ssl.keystore.type", "PKCS12",
			"listener.name.ssl.ssl.keystore.password", "pw"), ErrInvalidValue,
			`for "listener.name.ssl.ssl.keystore.location": listener SSL: ssl.keystore.location`},
		{"SSL without a keystore", with("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"), ErrMissing,
			`missing required config "ssl.keystore.location"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Parse(c.props)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got  %v\nwant %v containing %s", err, c.kind, c.want)
			}
		})
	}
}
