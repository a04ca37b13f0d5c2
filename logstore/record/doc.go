// Package record is the partition log's record format, shared by every layer that handles record
// batches without owning a log: the partition's name (TopicPartition), the v2 batch framing
// (NextBatch and the header offsets every walker reads) and file regions (FileRegion,
// FileRecords: whole batches of a segment file, sent with sendfile by broker/kproto). It
// imports nothing of the repository and no client or compression library, so the ZooKeeper
// data model (zkcoord/zkdata) and the wire helpers can name partitions and batches without
// depending on the storage engine (docs/design.md, "Layering").
package record
