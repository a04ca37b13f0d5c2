package logstore

import (
	"errors"
	"math"
	"strings"
	"time"
)

// Config is the per-log configuration (broker `log.*` defaults, overridable per topic).
type Config struct {
	SegmentBytes          int64         // log.segment.bytes / segment.bytes (default 1073741824)
	SegmentMs             time.Duration // log.roll.ms (default 168h); roll when the active segment's first batch is older
	RetentionMs           int64         // log.retention.ms; -1 = unlimited (default 604800000)
	RetentionBytes        int64         // log.retention.bytes per partition; -1 = unlimited
	IndexIntervalBytes    int32         // log.index.interval.bytes (4096)
	MaxMessageBytes       int32         // message.max.bytes: max size of one record batch (1048588)
	FlushIntervalMessages int64         // log.flush.interval.messages; fsync after this many messages (default math.MaxInt64 = never)
	FlushInterval         time.Duration // log.flush.interval.ms; 0 = never by time
	FileDeleteDelay       time.Duration // file.delete.delay.ms (60000): delay before removing .deleted files / -delete dirs (tests use 0)

	// Log compaction (docs/compaction.md). The zero CleanupPolicy is "delete", so a Config
	// built without these fields keeps today's delete-only behaviour.
	CleanupPolicy      CleanupPolicy // cleanup.policy / log.cleanup.policy (delete)
	MinCleanableRatio  float64       // min.cleanable.dirty.ratio / log.cleaner.min.cleanable.ratio (0.5)
	MinCompactionLagMs int64         // min.compaction.lag.ms / log.cleaner.min.compaction.lag.ms (0)
	MaxCompactionLagMs int64         // max.compaction.lag.ms / log.cleaner.max.compaction.lag.ms (Long.MaxValue); <= 0 means unlimited
	DeleteRetentionMs  int64         // delete.retention.ms / log.cleaner.delete.retention.ms (86400000): tombstone lifetime after cleaning
}

// CleanupPolicy is cleanup.policy: which of retention (delete) and compaction apply.
type CleanupPolicy uint8

const (
	PolicyDelete        CleanupPolicy = iota // "delete": time and size retention only (Kafka's default)
	PolicyCompact                            // "compact": the log cleaner only; retention only below the log start offset
	PolicyCompactDelete                      // "compact,delete": both (KIP-71)
)

// Compact reports whether the log cleaner compacts the log.
func (p CleanupPolicy) Compact() bool { return p == PolicyCompact || p == PolicyCompactDelete }

// Delete reports whether time and size retention delete segments.
func (p CleanupPolicy) Delete() bool { return p == PolicyDelete || p == PolicyCompactDelete }

// String renders the policy as Kafka's comma-separated list.
func (p CleanupPolicy) String() string {
	switch p {
	case PolicyCompact:
		return "compact"
	case PolicyCompactDelete:
		return "compact,delete"
	default:
		return "delete"
	}
}

// ParseCleanupPolicy reads Kafka's list form ("delete", "compact", "compact,delete" in any
// order, spaces allowed). ok is false for an empty list or an unknown entry.
func ParseCleanupPolicy(items []string) (CleanupPolicy, bool) {
	var compact, del bool
	for _, it := range items {
		switch strings.TrimSpace(strings.ToLower(it)) {
		case "compact":
			compact = true
		case "delete":
			del = true
		case "":
		default:
			return PolicyDelete, false
		}
	}
	switch {
	case compact && del:
		return PolicyCompactDelete, true
	case compact:
		return PolicyCompact, true
	case del:
		return PolicyDelete, true
	}
	return PolicyDelete, false
}

// DefaultConfig returns Kafka 2.4's defaults (kafka-zk-reference §5).
func DefaultConfig() Config {
	return Config{
		SegmentBytes:          1073741824,
		SegmentMs:             168 * time.Hour,
		RetentionMs:           604800000,
		RetentionBytes:        -1,
		IndexIntervalBytes:    4096,
		MaxMessageBytes:       1048588,
		FlushIntervalMessages: math.MaxInt64,
		FlushInterval:         0,
		FileDeleteDelay:       60 * time.Second,
		CleanupPolicy:         PolicyDelete,
		MinCleanableRatio:     0.5,
		MinCompactionLagMs:    0,
		MaxCompactionLagMs:    math.MaxInt64,
		DeleteRetentionMs:     86400000,
	}
}

// sanitized replaces values that would break the log (zero or negative sizes) by defaults.
func (c Config) sanitized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.FlushIntervalMessages <= 0 {
		c.FlushIntervalMessages = d.FlushIntervalMessages
	}
	if c.FileDeleteDelay < 0 {
		c.FileDeleteDelay = 0
	}
	if c.MinCleanableRatio < 0 || c.MinCleanableRatio > 1 {
		c.MinCleanableRatio = d.MinCleanableRatio
	}
	if c.MinCompactionLagMs < 0 {
		c.MinCompactionLagMs = 0
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = 0
	}
	return c
}

// Sentinel errors; callers map them to Kafka error codes at the edge (style.md §8).
var (
	// ErrCorruptMessage: bad CRC, bad magic or a malformed batch -> CORRUPT_MESSAGE (2).
	ErrCorruptMessage = errors.New("logstore: corrupt record batch")
	// ErrMessageTooLarge: a batch larger than max.message.bytes -> MESSAGE_TOO_LARGE (10).
	ErrMessageTooLarge = errors.New("logstore: record batch larger than max.message.bytes")
	// ErrInvalidRecord: structurally valid but inconsistent batch -> INVALID_RECORD (87).
	ErrInvalidRecord = errors.New("logstore: invalid record batch")
	// ErrOffsetOutOfRange: a read below the log start offset or above the LEO -> OFFSET_OUT_OF_RANGE (1).
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrUnexpectedOffset: a follower append whose first offset is not the LEO.
	ErrUnexpectedOffset = errors.New("logstore: follower append does not start at the log end offset")
	// ErrClosed: the log or manager was closed (or the log deleted).
	ErrClosed = errors.New("logstore: log closed")
)
