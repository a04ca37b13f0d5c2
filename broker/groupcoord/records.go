package groupcoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// __consumer_offsets record formats (GroupMetadataManager.scala 2.4.1, docs/groups.md §5). Keys
// and values are kmsg's OffsetCommitKey / OffsetCommitValue / GroupMetadataKey /
// GroupMetadataValue; the batches are magic 2, CRC-32C, uncompressed, CREATE_TIME.
const (
	offsetCommitKeyVersion    = 1 // CURRENT_OFFSET_KEY_SCHEMA_VERSION
	groupMetadataKeyVersion   = 2 // CURRENT_GROUP_KEY_SCHEMA_VERSION
	offsetCommitValueVersion  = 3 // 2.4 (IBP >= 2.1-IV1) with no expire timestamp
	offsetCommitValueV1       = 1 // with an expire timestamp (OffsetCommit v1-v4 retention time)
	groupMetadataValueVersion = 3 // 2.4 (IBP >= 2.3-IV0)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// kv is one record: a null value is a tombstone.
type kv struct {
	key, value []byte
}

func offsetCommitKey(group string, k tp) []byte {
	key := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: k.topic, Partition: k.partition}
	return key.AppendTo(nil)
}

func offsetCommitValue(om offsetAndMetadata) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Offset = om.offset
	v.Metadata = om.metadata
	v.CommitTimestamp = om.commitTimestamp
	if om.expireTimestamp >= 0 {
		v.Version = offsetCommitValueV1
		v.ExpireTimestamp = om.expireTimestamp
	} else {
		v.Version = offsetCommitValueVersion
		v.LeaderEpoch = om.leaderEpoch
	}
	return v.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	key := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return key.AppendTo(nil)
}

// groupMetadataValue is the value GroupMetadataManager.groupMetadataValue writes for g with
// assignment (member id → assignment bytes).
func groupMetadataValue(g *group, assignment map[string][]byte) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	if g.protocolType != nil {
		v.ProtocolType = *g.protocolType
	}
	v.Generation = g.generation
	v.Protocol = g.protocol
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, m := range g.allMembers() {
		mm := kmsg.NewGroupMetadataValueMember()
		mm.MemberID = m.id
		mm.InstanceID = m.instanceID
		mm.ClientID = m.clientID
		mm.ClientHost = m.clientHost
		mm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		mm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		if g.protocol != nil {
			mm.Subscription = nonNilBytes(m.metadata(*g.protocol))
		} else {
			mm.Subscription = []byte{}
		}
		mm.Assignment = nonNilBytes(assignment[m.id])
		v.Members = append(v.Members, mm)
	}
	return v.AppendTo(nil)
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// encodeBatch builds one magic-2 record batch of records at timestamp ts (ms): base offset 0
// (the log assigns offsets), no producer, CRC-32C over attributes..end.
func encodeBatch(ts int64, records []kv) []byte {
	var recs []byte
	for i, r := range records {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1) // the zero Length took one varint byte
		recs = rec.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

// Batch attributes the loader looks at.
const (
	attrCompressionMask = 0x07
	attrControl         = 0x20
)

var errCompressed = errors.New("compressed batch")

// decodedBatch is one batch's records (a nil value is a tombstone).
type decodedBatch struct {
	baseOffset int64
	nextOffset int64
	control    bool
	records    []kv
}

// decodeBatches splits raw log bytes into batches and their records. A trailing partial batch
// is left out. A compressed batch is returned with errCompressed in skipped (isrbroker writes
// none; a batch written by other code is skipped with a warning by the caller).
func decodeBatches(raw []byte) (batches []decodedBatch, skipped []error, err error) {
	for len(raw) >= 12 {
		size := int(int32(binary.BigEndian.Uint32(raw[8:]))) + 12
		if size < 61 {
			return batches, skipped, fmt.Errorf("bad batch length %d", size)
		}
		if size > len(raw) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			return batches, skipped, fmt.Errorf("decoding batch: %w", err)
		}
		if b.LastOffsetDelta < 0 {
			// The load goes on at nextOffset: a batch ending before it starts would send the
			// read back to where it was (FuzzOffsetsLoader found it).
			return batches, skipped, fmt.Errorf("batch at %d: last offset delta %d", b.FirstOffset, b.LastOffsetDelta)
		}
		raw = raw[size:]
		db := decodedBatch{baseOffset: b.FirstOffset, nextOffset: b.FirstOffset + int64(b.LastOffsetDelta) + 1}
		if b.Magic != 2 {
			skipped = append(skipped, fmt.Errorf("batch at %d: magic %d", b.FirstOffset, b.Magic))
			batches = append(batches, db)
			continue
		}
		if b.Attributes&attrCompressionMask != 0 {
			skipped = append(skipped, fmt.Errorf("batch at %d: %w (codec %d)", b.FirstOffset, errCompressed, b.Attributes&attrCompressionMask))
			batches = append(batches, db)
			continue
		}
		db.control = b.Attributes&attrControl != 0
		recs := b.Records
		for i := int32(0); i < b.NumRecords && len(recs) > 0; i++ {
			l, n := binary.Varint(recs)
			if n <= 0 || l < 0 || int64(n)+l > int64(len(recs)) {
				return batches, skipped, fmt.Errorf("batch at %d: bad record length", b.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(l)]); err != nil {
				return batches, skipped, fmt.Errorf("batch at %d: decoding record: %w", b.FirstOffset, err)
			}
			recs = recs[n+int(l):]
			db.records = append(db.records, kv{key: r.Key, value: r.Value})
		}
		batches = append(batches, db)
	}
	return batches, skipped, nil
}

// Decoded keys.
type offsetKey struct {
	group string
	tp    tp
}

// parseKey returns an offsetKey, a group id (string) or an error for an unknown key version.
func parseKey(key []byte) (any, error) {
	if len(key) < 2 {
		return nil, errors.New("key shorter than its version")
	}
	version := int16(binary.BigEndian.Uint16(key))
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return nil, err
		}
		return offsetKey{group: k.Group, tp: tp{k.Topic, k.Partition}}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return nil, err
		}
		return k.Group, nil
	}
	return nil, fmt.Errorf("unknown key version %d", version)
}

// parseOffsetValue is readOffsetMessageValue (versions 0-3).
func parseOffsetValue(value []byte) (offsetAndMetadata, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return offsetAndMetadata{}, err
	}
	if v.Version < 0 || v.Version > 3 {
		return offsetAndMetadata{}, fmt.Errorf("unknown offset value version %d", v.Version)
	}
	om := offsetAndMetadata{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp, expireTimestamp: -1}
	if v.Version == 1 && v.ExpireTimestamp != -1 {
		om.expireTimestamp = v.ExpireTimestamp
	}
	if v.Version >= 3 && v.LeaderEpoch >= 0 {
		om.leaderEpoch = v.LeaderEpoch
	}
	return om, nil
}

// parseGroupValue is readGroupMessageValue (versions 0-3): the group as loaded, Stable with
// members or Empty without.
func parseGroupValue(groupID string, value []byte) (*group, error) {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return nil, err
	}
	if v.Version < 0 || v.Version > 3 {
		return nil, fmt.Errorf("unknown group metadata value version %d", v.Version)
	}
	g := newGroup(groupID, time.Time{})
	g.generation = v.Generation
	g.protocol = v.Protocol
	g.stateTimestamp = -1
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	// Kafka 2.4.1 reads current_state_timestamp for value version 2 only; isrbroker also reads
	// it from version 3, which 2.4 writes (docs/groups.md §5, deviation).
	if v.Version >= 2 && v.CurrentStateTimestamp != -1 {
		g.stateTimestamp = v.CurrentStateTimestamp
	}
	g.state = stateEmpty
	if len(v.Members) > 0 {
		g.state = stateStable
	}
	protocolName := ""
	if v.Protocol != nil {
		protocolName = *v.Protocol
	}
	for _, mm := range v.Members {
		rebalance := mm.RebalanceTimeoutMillis
		if v.Version == 0 {
			rebalance = mm.SessionTimeoutMillis
		}
		m := &member{
			id: mm.MemberID, instanceID: mm.InstanceID, clientID: mm.ClientID, clientHost: mm.ClientHost,
			rebalanceTimeout: msDuration(rebalance), sessionTimeout: msDuration(mm.SessionTimeoutMillis),
			protocolType: v.ProtocolType,
			protocols:    []protocol{{name: protocolName, metadata: mm.Subscription}},
			assignment:   mm.Assignment,
		}
		g.add(m, nil)
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	g.subscribed = g.computeSubscribedTopics()
	return g, nil
}
