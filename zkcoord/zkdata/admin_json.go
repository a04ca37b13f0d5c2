package zkdata

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PartitionReassignment is one entry of Kafka's reassignment JSON: the target replica list
// (RAR) of a partition. LogDirs ("any" per replica) is accepted and written back but not
// acted upon (JBOD moves are not supported).
type PartitionReassignment struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

type reassignZNode struct {
	Version    int32                   `json:"version"`
	Partitions []PartitionReassignment `json:"partitions"`
}

// EncodeReassignment renders Kafka's version 1 reassignment JSON
// ({"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..],"log_dirs":[..]}]}),
// the format of /admin/reassign_partitions and of the tool's files. Entries are sorted by
// topic and partition; log_dirs is filled with "any" when absent, as Kafka prints it.
func EncodeReassignment(parts []PartitionReassignment) []byte {
	z := reassignZNode{Version: 1, Partitions: make([]PartitionReassignment, 0, len(parts))}
	for _, p := range parts {
		q := PartitionReassignment{Topic: p.Topic, Partition: p.Partition, Replicas: append([]int32{}, p.Replicas...)}
		if len(p.LogDirs) == len(p.Replicas) {
			q.LogDirs = append([]string{}, p.LogDirs...)
		} else {
			q.LogDirs = make([]string, len(p.Replicas))
			for i := range q.LogDirs {
				q.LogDirs[i] = "any"
			}
		}
		z.Partitions = append(z.Partitions, q)
	}
	sort.Slice(z.Partitions, func(i, j int) bool {
		a, b := z.Partitions[i], z.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	b, _ := json.Marshal(z)
	return b
}

// ReassignmentFieldError names the entry and field of a reassignment JSON document that is
// missing or invalid ("partitions[2].replicas").
type ReassignmentFieldError struct {
	Field string
	Msg   string
}

func (e *ReassignmentFieldError) Error() string { return "field " + e.Field + ": " + e.Msg }

// DecodeReassignment parses Kafka's reassignment JSON. Syntax errors are returned as
// *json.SyntaxError / *json.UnmarshalTypeError (with their byte offsets), a missing or
// invalid field as *ReassignmentFieldError. It does not check the plan against the
// cluster (duplicates, brokers); see the admin API (zkcoord/admin).
func DecodeReassignment(data []byte) ([]PartitionReassignment, error) {
	var z struct {
		Version    *int32 `json:"version"`
		Partitions *[]struct {
			Topic     *string  `json:"topic"`
			Partition *int32   `json:"partition"`
			Replicas  *[]int32 `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, err
	}
	if z.Version != nil && *z.Version != 1 {
		return nil, &ReassignmentFieldError{Field: "version", Msg: fmt.Sprintf("unsupported version %d (want 1)", *z.Version)}
	}
	if z.Partitions == nil {
		return nil, &ReassignmentFieldError{Field: "partitions", Msg: "missing"}
	}
	out := make([]PartitionReassignment, 0, len(*z.Partitions))
	for i, p := range *z.Partitions {
		at := func(f string) string { return fmt.Sprintf("partitions[%d].%s", i, f) }
		switch {
		case p.Topic == nil || *p.Topic == "":
			return nil, &ReassignmentFieldError{Field: at("topic"), Msg: "missing"}
		case p.Partition == nil:
			return nil, &ReassignmentFieldError{Field: at("partition"), Msg: "missing"}
		case *p.Partition < 0:
			return nil, &ReassignmentFieldError{Field: at("partition"), Msg: fmt.Sprintf("negative partition %d", *p.Partition)}
		case p.Replicas == nil:
			return nil, &ReassignmentFieldError{Field: at("replicas"), Msg: "missing"}
		case p.LogDirs != nil && len(p.LogDirs) != len(*p.Replicas):
			return nil, &ReassignmentFieldError{Field: at("log_dirs"), Msg: fmt.Sprintf("%d log dirs for %d replicas", len(p.LogDirs), len(*p.Replicas))}
		}
		out = append(out, PartitionReassignment{Topic: *p.Topic, Partition: *p.Partition, Replicas: *p.Replicas, LogDirs: p.LogDirs})
	}
	return out, nil
}

// ---- /config/changes/config_change_<seq>: {"version":2,"entity_path":"topics/<t>"} ----

// DecodeConfigChange parses a notification: version 2 {"version":2,"entity_path":"topics/t"}
// or the old version 1 {"version":1,"entity_type":"topics","entity_name":"t"}.
func DecodeConfigChange(data []byte) (string, error) {
	var z struct {
		Version    int32  `json:"version"`
		EntityPath string `json:"entity_path"`
		EntityType string `json:"entity_type"`
		EntityName string `json:"entity_name"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return "", err
	}
	switch z.Version {
	case 1:
		if z.EntityType == "" || z.EntityName == "" {
			return "", errors.New("version 1 notification without entity_type/entity_name")
		}
		return z.EntityType + "/" + z.EntityName, nil
	case 2:
		if !strings.Contains(z.EntityPath, "/") {
			return "", fmt.Errorf("invalid entity_path %q", z.EntityPath)
		}
		return z.EntityPath, nil
	default:
		return "", fmt.Errorf("unsupported notification version %d", z.Version)
	}
}

func EncodeConfigChange(entityPath string) []byte {
	b, _ := json.Marshal(struct {
		Version    int32  `json:"version"`
		EntityPath string `json:"entity_path"`
	}{2, entityPath})
	return b
}

// ---- /latest_producer_id_block: {"version":1,"broker":<id>,"block_start":"<n>","block_end":"<m>"} ----
// Kafka 2.4's ProducerIdManager writes block_start and block_end as JSON strings.

// ProducerIDBlockSize is the number of producer ids a broker takes at once (Kafka's
// ProducerIdManager.PidBlockSize).
const ProducerIDBlockSize = 1000

type producerIDBlockJSON struct {
	Version    int32  `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

func EncodeProducerIDBlock(broker int32, start, end int64) []byte {
	b, _ := json.Marshal(producerIDBlockJSON{1, broker, strconv.FormatInt(start, 10), strconv.FormatInt(end, 10)})
	return b
}

// DecodeProducerIDBlock parses the znode; empty data (the znode as created at setup) means
// no block was handed out yet and is reported as end = -1.
func DecodeProducerIDBlock(data []byte) (start, end int64, err error) {
	if len(data) == 0 {
		return -1, -1, nil
	}
	var z producerIDBlockJSON
	if err := json.Unmarshal(data, &z); err != nil {
		return 0, 0, fmt.Errorf("zkcoord: %s: %w", PathProducerIDBlock, err)
	}
	if z.Version != 1 {
		return 0, 0, fmt.Errorf("zkcoord: %s: unsupported version %d", PathProducerIDBlock, z.Version)
	}
	start, err = strconv.ParseInt(z.BlockStart, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("zkcoord: %s block_start: %w", PathProducerIDBlock, err)
	}
	end, err = strconv.ParseInt(z.BlockEnd, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("zkcoord: %s block_end: %w", PathProducerIDBlock, err)
	}
	if end < start {
		return 0, 0, fmt.Errorf("zkcoord: %s: block_end %d < block_start %d", PathProducerIDBlock, end, start)
	}
	return start, end, nil
}
