package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// TestSASLPlaintextListener: three brokers, each with a SASL_PLAINTEXT listener for clients
// (PLAIN users from the listener's JAAS config) beside the PLAINTEXT inter-broker listener
// (docs/security.md, "Listeners"). A kgo client with SASL/PLAIN creates a replicated topic,
// produces and consumes on the SASL listeners only; a wrong password gets
// SASL_AUTHENTICATION_FAILED; every broker registers both endpoints.
func TestSASLPlaintextListener(t *testing.T) {
	overrides := map[int32]map[string]string{}
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		plainPort, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		saslPort, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", saslPort))
		overrides[id] = map[string]string{
			"listeners":                  fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plainPort, saslPort),
			"inter.broker.listener.name": "PLAINTEXT",
			"sasl.enabled.mechanisms":    "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";`,
			"connection.failed.authentication.delay.ms": "50",
		}
	}
	c := cluster.Start(t, cluster.Options{Brokers: 3, BrokerOverrides: overrides})

	for _, id := range c.IDs() {
		data, _, err := c.ZK.Get(fmt.Sprintf("/brokers/ids/%d", id))
		if err != nil {
			t.Fatal(err)
		}
		if s := string(data); !strings.Contains(s, `"SASL_PLAINTEXT":"SASL_PLAINTEXT"`) || !strings.Contains(s, `"SASL_PLAINTEXT://127.0.0.1:`) {
			t.Fatalf("broker %d registration lacks the SASL_PLAINTEXT endpoint: %s", id, s)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Metadata on the SASL listener answers the brokers' SASL_PLAINTEXT endpoints.
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range meta.Brokers {
		found := false
		for _, s := range seeds {
			found = found || fmt.Sprintf("%s:%d", b.Host, b.Port) == s
		}
		if !found {
			t.Fatalf("metadata broker %d at %s:%d, not a SASL_PLAINTEXT endpoint %v", b.NodeID, b.Host, b.Port, seeds)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "sasl-topic"); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-topic", Value: []byte("first")}).FirstErr()
		return err == nil, fmt.Sprint(err)
	})
	for i := 0; i < 9; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-topic", Value: []byte{byte('0' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{"sasl-topic": {0: kgo.NewOffset().AtStart()}})
	var got []*kgo.Record
	for len(got) < 10 && ctx.Err() == nil {
		got = append(got, cl.PollFetches(ctx).Records()...)
	}
	if len(got) != 10 || string(got[0].Value) != "first" {
		t.Fatalf("consumed %d records", len(got))
	}

	bad, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestSASLInterBrokerListener: the brokers talk to each other over SASL_PLAINTEXT with PLAIN
// (inter.broker.listener.name, sasl.mechanism.inter.broker.protocol, the broker's own username
// and password from the listener's JAAS entry, docs/sasl.md §7): the controller's requests and
// the followers' fetches authenticate, so an RF=3 topic with min.insync.replicas=3 takes
// acks=all writes and keeps its full ISR. A PLAINTEXT listener stays for the test's own client.
func TestSASLInterBrokerListener(t *testing.T) {
	overrides := map[int32]map[string]string{}
	for id := int32(1); id <= 3; id++ {
		saslPort, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		overrides[id] = map[string]string{
			"listeners":                            fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://127.0.0.1:%d", cluster.AddrToken, saslPort),
			"inter.broker.listener.name":           "SASL_PLAINTEXT",
			"sasl.enabled.mechanisms":              "PLAIN",
			"sasl.mechanism.inter.broker.protocol": "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="broker" password="broker-pw" user_broker="broker-pw";`,
		}
	}
	c := cluster.Start(t, cluster.Options{Brokers: 3, BrokerOverrides: overrides})
	c.CreateTopicWithConfigs("ib", 1, 3, map[string]string{"min.insync.replicas": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ib", Value: []byte("x")}).FirstErr()
		return err == nil, fmt.Sprintf("acks=all with min.insync.replicas=3 over SASL replication: %v", err)
	})
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ib", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("acks=all record %d: %v", i, err)
		}
	}
	st, err := c.ZK.PartitionState("ib", 0)
	if err != nil || len(st.ISR) != 3 {
		t.Fatalf("ISR after acks=all writes over SASL replication: %+v %v", st, err)
	}
}
