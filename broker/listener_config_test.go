package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/security/sasl"
)

func parseConfig(t *testing.T, kv ...string) *config.Config {
	t.Helper()
	props := map[string]string{"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": t.TempDir(),
		"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094"}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	cfg, _, err := config.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The listener security main builds from server.properties: PLAIN users from the listener's
// JAAS config, OAUTHBEARER with the unsecured validator, connections.max.reauth.ms per
// mechanism; SCRAM without a credential store is refused.
func TestListenerSecurityFromConfig(t *testing.T) {
	cfg := parseConfig(t,
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config",
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_erin="erin-pw";`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config",
		`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms", "600000",
	)
	l := cfg.Listeners[1]
	sec, err := NewListenerSecurity(cfg, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sec.mechanismNames(), ","); got != "PLAIN,OAUTHBEARER" || sec.Mechanisms[1].MaxReauth != 10*time.Minute || sec.Mechanisms[0].MaxReauth != 0 {
		t.Fatalf("mechanisms %s, reauth %v %v", got, sec.Mechanisms[0].MaxReauth, sec.Mechanisms[1].MaxReauth)
	}
	if plainSec, err := NewListenerSecurity(cfg, cfg.Listeners[0], nil); err != nil || plainSec.usesSASL() || plainSec.usesTLS() {
		t.Fatalf("PLAINTEXT listener: %+v %v", plainSec, err)
	}

	e := startSecureServer(t, l.Name, sec, nil)
	e.createTopicOn(l.Name, "cfg", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: "erin", Pass: "erin-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cfg", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// OAUTHBEARER: the token's exp bounds session_lifetime_ms below connections.max.reauth.ms.
	jws, err := sasl.UnsecuredJWS(map[string]any{"sub": "frank", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	ocl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(oauth.Auth{Token: jws}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer ocl.Close()
	if err := ocl.ProduceSync(ctx, &kgo.Record{Topic: "cfg", Value: []byte("o")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if !hasPrincipal(e, "User:frank") {
		t.Fatalf("principals %v", e.principals())
	}

	scram := parseConfig(t, "sasl.enabled.mechanisms", "SCRAM-SHA-256",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required;`)
	if _, err := NewListenerSecurity(scram, scram.Listeners[1], nil); err == nil || !strings.Contains(err.Error(), "needs a SCRAM credential store") {
		t.Fatalf("SCRAM without a store: %v", err)
	}
	if _, err := NewListenerSecurity(scram, scram.Listeners[1], &memCredentials{}); err != nil {
		t.Fatal(err)
	}
}
