package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/sirupsen/logrus"
)

// TestStartBrokerBuildsInterBrokerSecurity: startBroker builds the inter-broker listener's client
// side (interBrokerSecurity) before it connects anywhere, so a SASL inter-broker listener whose
// JAAS entry gives the broker no username of its own stops start-up with that error. Seen failing
// when startBroker never called interBrokerSecurity: the broker went on to ZooKeeper (and would
// have dialled the other brokers in plaintext).
func TestStartBrokerBuildsInterBrokerSecurity(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	body := strings.Join([]string{
		"broker.id=1",
		"listeners=SASL_PLAINTEXT://127.0.0.1:1", // never bound: start-up stops first
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="pw";`,
		"log.dirs=" + filepath.Join(dir, "logs"),
		"zookeeper.connect=127.0.0.1:1",
		"zookeeper.connection.timeout.ms=1000",
		"",
	}, "\n")
	if err := os.WriteFile(props, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.LoadAll(config.Sources{Path: props})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := logrus.New()
	log.SetOutput(testWriter{t})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := startBroker(ctx, cfg, logrus.NewEntry(log))
	if err == nil {
		b.shutdown()
		t.Fatal("startBroker succeeded")
	}
	if !strings.Contains(err.Error(), "names no username") {
		t.Fatalf("startBroker: %v; want the inter-broker listener's missing username", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
