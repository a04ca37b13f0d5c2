package broker

// Authorized operations (KIP-430) without an authorizer: Kafka 2.4 answers every operation a
// resource type supports (KafkaApis.authorizedOperations with authorizer None), as a bit field
// with bit n set for the ACL operation of code n (READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
// DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12).
// docs/compatibility.md lists where they are answered; DescribeGroups has
// groupcoord.GroupAuthorizedOperations.
const (
	// TopicAuthorizedOperations: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
	// DESCRIBE_CONFIGS, ALTER_CONFIGS.
	TopicAuthorizedOperations = int32(1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11)
	// ClusterAuthorizedOperations: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
	// ALTER_CONFIGS, IDEMPOTENT_WRITE.
	ClusterAuthorizedOperations = int32(1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12)
)
