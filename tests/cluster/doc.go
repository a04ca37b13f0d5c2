// Package cluster is the whole-cluster test harness: it owns the integration tier's real processes.
//
// For one test it starts a real ZooKeeper (through zkcoord/zktest) and N real `isrbroker broker`
// processes, each with its own temporary log dir, free listener and metrics ports, a generated
// server.properties and per-test `--override key=value` settings. The broker binary is built once per
// test process from the module root. Every process the harness starts runs in its own process group
// and is killed in t.Cleanup; the tail of each broker's output is printed when the test fails.
//
// The harness reads cluster state straight from ZooKeeper with its own go-zookeeper client and
// decodes Kafka's znode JSON itself (docs/kafka-facts.md §1), so checks do not trust the code under
// test. Waiting is always polling with a deadline (WaitFor); nothing sleeps to synchronise.
//
// A Cluster's roles have types of their own: c.ZK is the ZooKeeper (its process and the znodes
// read from it), c.Broker(id) one broker process and the requests sent to it alone, c.Groups the
// consumer-group client; Cluster's own methods are the client side and the checks over every broker.
//
// Security fixtures (security.go): MakeTLSFixtures makes a CA with openssl and a JKS broker
// keystore with keytool; SASLSSLListener adds a SASL_SSL listener, also the inter-broker one
// (SCRAM-SHA-512), beside the harness's PLAINTEXT listener; Options.BeforeBrokers with
// AddScramUser writes SCRAM credentials before the brokers start.
//
// Environment:
//   - ISRBROKER_BIN: use this broker binary instead of building one.
//   - ISRBROKER_RACE=1: build the broker with the race detector.
//   - ISRBROKER_TEST_LOGS=1: print every broker's output tail at cleanup, even when the test passed.
package cluster
