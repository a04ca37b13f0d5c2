// Package broker owns the Kafka wire server of isrbroker: the TCP listeners, one reader
// goroutine and one in-order response stream per connection, dispatch by API key (one
// handler file per key, named like kfake's: 00_produce.go, 01_fetch.go, …), and the metadata
// cache, which is fed only by UpdateMetadata requests from the controller, as in Kafka.
//
// The package owns no partition state. Every request body is decoded and every response
// body encoded by kmsg; data requests go to the replica manager (Replicas), topic creation
// and deletion go to the ZooKeeper coordinator (Admin). New receives every collaborator a
// handler uses as an interface field of Deps (interfaces.go; an optional one says what the
// handlers answer without it); main wires the implementations and asserts them at compile
// time. Malformed input (a frame above socket.request.max.bytes, an unknown API key or
// version, a body kmsg cannot decode, trailing bytes) closes only the connection it came in
// on; nothing on input panics.
//
// Concurrency: the reader of a connection decodes and dispatches requests one after the
// other; a handler may complete later on another goroutine (an acks=-1 produce parked in
// the purgatory, a delayed fetch), so requests of one connection overlap, but responses go
// out strictly in request order: written by whichever goroutine finds the oldest one ready,
// with non-blocking writes, or by the connection's writer goroutine where a write would wait
// (conn_write.go). At most maxInFlight requests per connection are outstanding. The
// metadata cache is a copy-on-write snapshot behind an atomic pointer.
package broker
