package logstore

import "github.com/isrbroker/isrbroker/logstore/record"

// TopicPartition names one partition; it is the record format's (logstore/record), aliased
// here because the log's own code names partitions everywhere.
type TopicPartition = record.TopicPartition
