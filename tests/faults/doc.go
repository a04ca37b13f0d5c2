// Package faults is the fault-injection tier: it owns the scenarios of the fault matrix in
// docs/reliability.md and a workload and checker that do not use the broker's code.
//
// Every scenario starts a real ZooKeeper and three real broker processes through tests/cluster,
// each broker on its own loopback address 127.0.0.(10+id) with its outgoing connections bound to it
// (isrbroker.local.address), so a fault can be a signal (SIGKILL, SIGSTOP/SIGCONT, SIGTERM), a
// damaged file, or an iptables rule cutting one link. Rules are tagged
// `-m comment --comment isrbroker-faults-<pid>` and always removed in t.Cleanup.
//
// The workload is franz-go producers (acks=all, idempotent when the broker offers
// InitProducerId) writing unique values at a steady rate and logging every acknowledgement
// with partition, offset and time, plus an assign-mode consumer reading during the run. After
// healing, a fresh client reads every partition from the start and the checker reports, from
// its own records and its own parsing of the log files and znodes:
//
//	L  acknowledged values missing from the final read (lost)
//	D  values read more than once (duplicates; a failure only for idempotent producers)
//	O  two values seen at one partition offset (counted as divergent)
//	M  offsets a consumer saw going backwards within a partition
//	R  replicas' log start offsets differ, or their batches below the HW differ (offset,
//	   leader epoch, CRC, length; divergent)
//	E  leader_epoch or controller_epoch going back in ZooKeeper
//	U  not everything readable within 60 s of healing
//	S  an idempotent producer's sequence numbers not rising with the offsets in a partition
//	X  a write the broker refused (row 14's malformed batches) present in the final read
//	G  (row 15, consumer groups) a committed offset going back, a record below the final
//	   commit never processed, a member starting a partition below a commit acknowledged
//	   before, final commits not at the end offsets (cluster.GroupJournal)
//
// Each scenario prints one line to stdout:
//
//	scenario=<name> acked=N lost=N duplicates=N divergent=N new_leader=<dur> unavailable=<dur> [extra=...]
//
// which scripts/faults.sh collects into docs/reliability.md. The short tier (kill leader,
// zombie leader, torn tail, bad input) runs in the ordinary `go test ./tests/...`; `-short` skips
// it. ISRBROKER_FAULTS_DIR, when set, receives every scenario's acknowledgement log.
package faults
