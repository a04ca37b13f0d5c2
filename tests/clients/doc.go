// Package clients runs stock Kafka clients that the main module does not depend on (IBM/sarama,
// segmentio/kafka-go) against a real isrbroker cluster started by tests/cluster. It is a separate
// Go module so that these client libraries stay out of the broker's go.mod; scripts/test.sh runs
// it after the main module's tests.
package clients
