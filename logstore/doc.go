// Package logstore owns the on-disk partition log, laid out like Kafka's (docs/kafka-facts.md §6, S1):
// one directory `<topic>-<partition>` per partition holding segments named by their 20-digit base
// offset (`.log` with record batches stored exactly as received, a sparse `.index` and a
// `.timeindex`), the per-partition `leader-epoch-checkpoint` (K1), and, per log dir,
// `meta.properties`, `recovery-point-offset-checkpoint`, `replication-offset-checkpoint`,
// `log-start-offset-checkpoint` and the `.kafka_cleanshutdown` marker.
//
// It owns segment rolling (by size and time), retention (by time and bytes, whole segments,
// moving the log start offset), flushing (`log.flush.*`; by default never fsync per write:
// durability comes from replication), starting the kernel's writeback of appended data once it
// is half a second old, paced in 100 ms steps, so that it never comes in one burst (writeback.go), appends and reads of
// resident data issued without the scheduler's system-call hooks (directio.go), where the last
// batches of the active segment start, so a fetch at the tail reads no header (recent.go), recovery
// after an unclean shutdown (batches past the
// recovery point are re-validated and a torn or corrupt tail is truncated), offline log dirs (an
// I/O error takes the dir offline: none of its logs is written, fsynced or read again until a
// restart, and the dir is reported on LogDirFailures; logdir_failure.go), and the leader
// epoch cache. Every file-system call goes through the FS of fs.go, so that the tests can fail
// any of them (docs/design.md, "File-system seam"). It is a leaf: it knows nothing about ZooKeeper, requests or replication
// state beyond the numbers the replica manager hands it.
//
// It also owns the log cleaner (cleaner*.go, docs/compaction.md): compaction of logs whose
// cleanup.policy includes compact, the `cleaner-offset-checkpoint` per log dir, and the
// `.cleaned`/`.swap` protocol that swaps cleaned segments in and is completed or rolled back
// when a log is opened after a crash.
//
// Batches are stored as received. A produce is validated as Kafka's LogValidator does
// (validate.go, docs/kafka-facts.md §13): the header and CRC-32C, then a walk over every
// record, decompressing compressed batches through pooled streaming decoders, that reads only
// varints and allocates nothing per record. Offsets are assigned by rewriting only the
// header's baseOffset and partitionLeaderEpoch (both lie before the CRC'd range); a follower's
// append checks framing and CRCs only, as Kafka's does; a fetch returns raw stored bytes
// located through the sparse offset index. The cleaner decodes the segments it rewrites
// (records.go).
//
// Locking (per Log): appendMu serialises every mutation (append, truncation, roll, retention,
// config); flushMu serialises flushes with structural changes; mu guards the published state
// (segment list, sizes, in-memory indexes, LEO, log start, epoch cache). truncMu serialises
// truncations from their preparation (the copy of the kept bytes, which holds none of the other
// locks: truncate_swap.go) to their commit. Order: truncMu < appendMu < flushMu < mu. Readers hold only mu.RLock, for the duration of a read, so an append
// writes its bytes to the file without blocking readers and publishes them under a short lock.
//
// Its one sub-package, logstore/record, is the record format the other layers share without
// the log (TopicPartition, batch framing, file regions); nothing else lives under logstore/.
package logstore
