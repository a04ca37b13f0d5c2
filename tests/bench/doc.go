// Package bench owns the whole-cluster produce benchmarks: a real ZooKeeper and three real
// isrbroker processes (tests/cluster) driven by a default franz-go producer on the same machine.
// It holds only Benchmark functions (and a TestMain that removes the broker binary), so
// `go test ./...` starts no cluster here; run them explicitly, e.g.
//
//	go test -run XXX -bench . -benchtime 200000x ./tests/bench
//
// docs/performance.md records the results and compares them with the published anchors.
package bench
