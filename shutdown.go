package main

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord/agent"
)

// controllerLocator is what the controlled shutdown needs from ZooKeeper;
// shutdownLocator (wiring.go) implements it over the coordinator's roles.
type controllerLocator = agent.ControllerLocator

// shutdownSettings are the controlled.shutdown.* settings (K7) plus what reaching the
// controller needs.
type shutdownSettings struct {
	BrokerID     int32
	Listener     string        // inter.broker.listener.name
	MaxRetries   int           // controlled.shutdown.max.retries: the number of attempts, as in Kafka
	RetryBackoff time.Duration // controlled.shutdown.retry.backoff.ms
	Timeout      time.Duration // controller.socket.timeout.ms: connect + answer of one attempt
	// Security secures the connection to the controller (TLS, SASL of the inter-broker
	// listener); the zero value is PLAINTEXT.
	Security kproto.Security
}

// controlledShutdown runs the broker side of K7 (zkcoord/agent's controlled shutdown client)
// over the Kafka protocol connection of broker/kproto. It returns whether the shutdown was
// acknowledged.
func controlledShutdown(ctx context.Context, zk controllerLocator, s shutdownSettings, log logrus.FieldLogger) bool {
	return agent.ControlledShutdown(ctx, zk, agent.ShutdownSettings{
		BrokerID: s.BrokerID, Listener: s.Listener, MaxRetries: s.MaxRetries, RetryBackoff: s.RetryBackoff, Timeout: s.Timeout,
		Dial: func(ctx context.Context, addr, clientID string, timeout time.Duration) (agent.Requester, error) {
			c, err := kproto.DialSecurity(ctx, addr, "", clientID, timeout, s.Security)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}, log)
}
