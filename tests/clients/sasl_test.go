package clients

import (
	"context"
	"crypto/sha512"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	kscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// startSASLSSL starts three brokers with a SASL_SSL listener for clients and between the brokers
// (SCRAM-SHA-512 as admin; alice has SCRAM credentials, carol is a PLAIN user), as
// tests/integration's SASL_SSL tests do.
func startSASLSSL(t *testing.T) (*cluster.Cluster, *cluster.SASLSSLListener) {
	t.Helper()
	l := &cluster.SASLSSLListener{TLS: cluster.MakeTLSFixtures(t), InterBrokerUser: "admin", InterBrokerPass: "admin-pw",
		PlainUsers: map[string]string{"carol": "carol-pw"}}
	c := cluster.Start(t, cluster.Options{Brokers: 3, BrokerOverrides: l.Overrides(t, 3), BeforeBrokers: func(z *cluster.ZooKeeper) {
		cluster.AddScramUser(t, z.Addr, "admin", "admin-pw")
		cluster.AddScramUser(t, z.Addr, "alice", "alice-pw")
	}})
	return c, l
}

// xdgSCRAM is sarama's SCRAMClient over xdg-go/scram (sarama ships no SCRAM client of its own).
type xdgSCRAM struct {
	gen  scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, password, authzID string) error {
	cl, err := x.gen.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = cl.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// TestSaramaSCRAMOverTLS: sarama with SCRAM-SHA-512 over TLS produces (acks=all, RF 3, replicated
// over SASL_SSL) and consumes on the SASL_SSL listeners; a wrong password fails the client.
func TestSaramaSCRAMOverTLS(t *testing.T) {
	c, l := startSASLSSL(t)
	const topic, n = "sarama-sasl", 30
	c.CreateTopic(topic, 3, 3)
	cfg := func(password string) *sarama.Config {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V2_4_0_0
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, l.TLS.ClientTLS(t)
		cfg.Net.SASL.Enable, cfg.Net.SASL.Handshake = true, true
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", password
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{gen: sha512.New} }
		cfg.Producer.Return.Successes = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		return cfg
	}
	prod, err := sarama.NewSyncProducer(l.Seeds(), cfg("alice-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < n; i++ {
		msg := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint("key-", i)), Value: sarama.StringEncoder(fmt.Sprint("value-", i))}
		if _, _, err := prod.SendMessage(msg); err != nil {
			t.Fatalf("sarama produce %d: %v", i, err)
		}
	}
	cons, err := sarama.NewConsumer(l.Seeds(), cfg("alice-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []consumed
	ends := waitEndOffsets(t, c, topic, n)
	for p, end := range ends {
		if end == 0 {
			continue
		}
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		timeout := time.After(30 * time.Second)
		for next := int64(0); next < end; {
			select {
			case m := <-pc.Messages():
				got = append(got, consumed{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
				next = m.Offset + 1
			case <-timeout:
				t.Fatalf("partition %d: consumed up to %d of %d", p, next, end)
			}
		}
		_ = pc.Close()
	}
	checkRoundTrip(t, n, got)

	b := sarama.NewBroker(l.Seeds()[0])
	if err := b.Open(cfg("wrong")); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Connected(); !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		t.Fatalf("sarama with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestKafkaGoSASLOverTLS: kafka-go's Writer and Reader over SASL_SSL with its sasl/plain (carol,
// a PLAIN user of the listener's JAAS config) and sasl/scram (alice, SCRAM-SHA-256) packages.
func TestKafkaGoSASLOverTLS(t *testing.T) {
	c, l := startSASLSSL(t)
	scramMech, err := kscram.Mechanism(kscram.SHA256, "alice", "alice-pw")
	if err != nil {
		t.Fatal(err)
	}
	for name, mech := range map[string]sasl.Mechanism{"plain": plain.Mechanism{Username: "carol", Password: "carol-pw"}, "scram": scramMech} {
		t.Run(name, func(t *testing.T) {
			topic := "kafka-go-" + name
			c.CreateTopic(topic, 1, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			w := &kafka.Writer{Addr: kafka.TCP(l.Seeds()...), Topic: topic, RequiredAcks: kafka.RequireAll,
				Transport: &kafka.Transport{TLS: l.TLS.ClientTLS(t), SASL: mech}}
			defer w.Close()
			const n = 10
			var msgs []kafka.Message
			for i := 0; i < n; i++ {
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("key-", i)), Value: []byte(fmt.Sprint("value-", i))})
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("kafka-go write with SASL %s: %v", name, err)
			}
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: l.Seeds(), Topic: topic, Partition: 0,
				Dialer: &kafka.Dialer{Timeout: 10 * time.Second, TLS: l.TLS.ClientTLS(t), SASLMechanism: mech}})
			defer r.Close()
			var got []consumed
			for len(got) < n {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("kafka-go read with SASL %s after %d records: %v", name, len(got), err)
				}
				got = append(got, consumed{Partition: int32(m.Partition), Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
			}
			checkRoundTrip(t, n, got)
		})
	}
}
