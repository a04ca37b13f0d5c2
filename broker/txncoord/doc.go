// Package txncoord is the transaction coordinator of a broker (Kafka's TransactionCoordinator,
// TransactionStateManager and the marker side of TransactionMarkerChannelManager,
// docs/transactions.md): the transactional ids whose __transaction_state partition this broker
// leads, each with its producer id and epoch, timeout, state, partitions and timestamps; the
// state machine (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
// Dead, PrepareEpochFence) with Kafka 2.4's transitions; the __transaction_state record
// formats; loading and unloading of partitions; the abort of timed-out transactions and the
// expiration of idle transactional ids.
//
// It serves the transaction API keys (one handler file per key: 22_init_producer_id.go,
// 24_add_partitions_to_txn.go, 25_add_offsets_to_txn.go, 26_end_txn.go); request and response
// bodies are kmsg types. It is not yet registered in the broker nor built by main.
//
// What it does not own: the __transaction_state logs and their replication (the replica
// manager, reached through Replicas: appends with acks=all, loads through ReadLocal), producer
// ids (ProducerIDs, ZooKeeper's /latest_producer_id_block), the writing of markers to the
// partition leaders (MarkerSender), the cluster metadata (Metadata) and the placement of groups
// (GroupPartitioner, the group coordinator).
//
// Structure, along Kafka's lines: Coordinator (coordinator.go, transactions.go) handles the
// requests; its stateManager (state_manager.go, loading.go) is TransactionStateManager; a
// txnMetadata (metadata.go) is TransactionMetadata with its pending state; markers.go sends the
// markers and completes; expiry.go runs the periodic tasks.
//
// Concurrency: stateManager.mu guards the cache and the loading partitions; each txnMetadata
// has its own mu. Order: stateManager.mu → txnMetadata.mu; Coordinator.mu (active and the
// timers) is a leaf. No lock is held while calling Replicas, ProducerIDs (except while a new
// producer id is taken under a transactional id's lock, as Kafka does) or MarkerSender,
// because their completions may run before the call returns. Timers come from an injected
// Clock; loads run in order on one goroutine (loadScheduler).
package txncoord
