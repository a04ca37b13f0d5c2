// Package integration holds the whole-cluster tests: a real ZooKeeper and real isrbroker processes
// (started by tests/cluster), driven by stock clients (franz-go kgo, kcat). Each test checks one
// "done when" item of the project's issues; they are skipped with -short.
package integration
