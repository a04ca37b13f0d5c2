package controller

// evKind names a controller event (Kafka's ControllerEvent classes).
type evKind int

const (
	evElect                 evKind = iota // startup, new session, retry after an error (Startup/Reelect)
	evControllerChange                    // /controller changed or vanished (ControllerChange)
	evExpire                              // the session expired (Expire)
	evBrokerChange                        // /brokers/ids children (BrokerChange)
	evTopicChange                         // /brokers/topics children (TopicChange)
	evPartitionModification               // /brokers/topics/<t> data (PartitionModifications)
	evDeleteTopics                        // /admin/delete_topics children (TopicDeletion)
	evIsrChange                           // /isr_change_notification children (IsrChangeNotification)
	evStaleEpoch                          // a broker answered STALE_CONTROLLER_EPOCH
	evControlledShutdown                  // a ControlledShutdown request (ControlledShutdown, K7)
	evPreferredElection                   // /admin/preferred_replica_election (ReplicaLeaderElection)
	evAutoRebalance                       // leader imbalance check timer (AutoPreferredReplicaLeaderElection)
	evReassignPartitions                  // /admin/reassign_partitions exists watch (PartitionReassignment)
	evReassignIsrChange                   // state znode of a reassigning partition (PartitionReassignmentIsrChange)
	evReassignAPI                         // Alter/ListPartitionReassignments (ApiPartitionReassignment, ListPartitionReassignments)
	evShutdown                            // Close
	evElectLeaders                        // an ElectLeaders request (ReplicaLeaderElection(AdminClientTriggered), KIP-460)
	evUncleanEnable                       // unclean.leader.election.enable turned on (TopicUncleanLeaderElectionEnable)
	evLogDirEvent                         // /log_dir_event_notification children (LogDirEventNotification, logdir.go)
	evLeaderAndIsrResponse                // a broker's LeaderAndIsr answer named partitions (LeaderAndIsrResponseReceived)
	evStopReplicaAnswer                   // a StopReplica(delete=true) answer (TopicDeletionStopReplicaResponseReceived)
)

var evNames = [...]string{"Elect", "ControllerChange", "Expire", "BrokerChange", "TopicChange",
	"PartitionModifications", "TopicDeletion", "IsrChangeNotification", "StaleControllerEpoch",
	"ControlledShutdown", "ReplicaLeaderElection", "AutoPreferredReplicaLeaderElection",
	"PartitionReassignment", "PartitionReassignmentIsrChange", "ApiPartitionReassignment", "Shutdown",
	"ReplicaLeaderElection(AdminClient)", "TopicUncleanLeaderElectionEnable", "LogDirEventNotification",
	"LeaderAndIsrResponseReceived", "TopicDeletionStopReplicaResponseReceived"}

func (k evKind) String() string {
	if int(k) < len(evNames) {
		return evNames[k]
	}
	return "Unknown"
}

// event is one entry of the controller's queue.
type event struct {
	kind  evKind
	key   string // watch key, for watch events
	token uint64 // watch registration, for watch events
	topic string
	epoch int32

	shutdown *shutdownReq       // evControlledShutdown
	elect    *electReq          // evElectLeaders
	call     func()             // evReassignAPI: runs on the controller goroutine and answers its caller
	lair     *lairAnswer        // evLeaderAndIsrResponse
	stop     *stopReplicaAnswer // evStopReplicaAnswer (epoch: the request's controller epoch)
	// preempt answers the caller of a request event NOT_CONTROLLER when the event is dropped
	// from the queue unprocessed (Kafka's ControllerEvent.preempt, on clearAndPut). Kafka 2.4
	// preempts ControlledShutdown and ReplicaLeaderElection; the KIP-455 calls are preempted
	// here too rather than left unanswered.
	preempt func()
}
