package record

// TopicPartition names one partition; replicamanager aliases it.
type TopicPartition struct {
	Topic     string
	Partition int32
}
