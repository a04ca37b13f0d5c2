package logstore

import (
	"errors"
	"math"
	"strings"
	"time"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

// Config is the per-log configuration (broker `log.*` defaults, overridable per topic). The
// keys, their defaults and validators are declared in package configdef; the comments name
// the broker key and its topic synonym.
type Config struct {
	SegmentBytes          int64         // log.segment.bytes / segment.bytes
	SegmentMs             time.Duration // log.roll.ms / segment.ms: roll when the active segment's first batch is older
	RetentionMs           int64         // log.retention.ms / retention.ms; -1 = unlimited
	RetentionBytes        int64         // log.retention.bytes / retention.bytes per partition; -1 = unlimited
	IndexIntervalBytes    int32         // log.index.interval.bytes / index.interval.bytes
	MaxMessageBytes       int32         // message.max.bytes / max.message.bytes: max size of one record batch
	FlushIntervalMessages int64         // log.flush.interval.messages / flush.messages; fsync after this many messages
	FlushInterval         time.Duration // log.flush.interval.ms / flush.ms; 0 = never by time
	FileDeleteDelay       time.Duration // log.segment.delete.delay.ms / file.delete.delay.ms: delay before removing .deleted files / -delete dirs (tests use 0)

	// Log compaction (docs/compaction.md). The zero CleanupPolicy is "delete", so a Config
	// built without these fields keeps today's delete-only behaviour.
	CleanupPolicy      CleanupPolicy // cleanup.policy / log.cleanup.policy (delete)
	MinCleanableRatio  float64       // min.cleanable.dirty.ratio / log.cleaner.min.cleanable.ratio (0.5)
	MinCompactionLagMs int64         // min.compaction.lag.ms / log.cleaner.min.compaction.lag.ms (0)
	MaxCompactionLagMs int64         // max.compaction.lag.ms / log.cleaner.max.compaction.lag.ms (Long.MaxValue); <= 0 means unlimited
	DeleteRetentionMs  int64         // delete.retention.ms / log.cleaner.delete.retention.ms (86400000): tombstone lifetime after cleaning

	// Timestamps (docs/live-configs.md §4). The zero values keep the
	// producer's timestamps unchecked (CreateTime, no difference limit).
	TimestampType TimestampType // message.timestamp.type / log.message.timestamp.type (CreateTime)
	// TimestampDiffLimited says whether TimestampDiffMaxMs applies: false for Kafka's default
	// Long.MaxValue (no check), so the common append path decodes nothing.
	TimestampDiffLimited bool
	TimestampDiffMaxMs   int64 // message.timestamp.difference.max.ms / log.message.timestamp.difference.max.ms
}

// TimestampType is message.timestamp.type: the producer's timestamps (CreateTime) or the
// leader's clock at append (LogAppendTime).
type TimestampType uint8

const (
	CreateTime    TimestampType = iota // keep the producer's timestamps
	LogAppendTime                      // the leader stamps each batch with its clock
)

// String renders the type as Kafka names it.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// ParseTimestampType reads "CreateTime" or "LogAppendTime" (case-sensitive, as Kafka's ValidString).
func ParseTimestampType(s string) (TimestampType, bool) {
	switch s {
	case "CreateTime":
		return CreateTime, true
	case "LogAppendTime":
		return LogAppendTime, true
	}
	return CreateTime, false
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

// DefaultConfig returns the broker-level defaults of the log keys, taken from the configdef
// table (log.segment.bytes, log.roll.hours, log.retention.hours, message.max.bytes, ...).
func DefaultConfig() Config {
	b := configdef.Broker
	return Config{
		SegmentBytes:          configdef.IntDefault("log.segment.bytes", b),
		SegmentMs:             configdef.DurationDefault("log.roll.hours", b),
		RetentionMs:           configdef.IntDefault("log.retention.hours", b) * 3600 * 1000,
		RetentionBytes:        configdef.IntDefault("log.retention.bytes", b),
		IndexIntervalBytes:    int32(configdef.IntDefault("log.index.interval.bytes", b)),
		MaxMessageBytes:       int32(configdef.IntDefault("message.max.bytes", b)),
		FlushIntervalMessages: configdef.IntDefault("log.flush.interval.messages", b),
		FlushInterval:         0, // log.flush.scheduler.interval.ms is Long.MaxValue: never by time
		FileDeleteDelay:       configdef.DurationDefault("log.segment.delete.delay.ms", b),
		CleanupPolicy:         PolicyDelete, // log.cleanup.policy "delete"
		MinCleanableRatio:     configdef.DoubleDefault("log.cleaner.min.cleanable.ratio", b),
		MinCompactionLagMs:    configdef.IntDefault("log.cleaner.min.compaction.lag.ms", b),
		MaxCompactionLagMs:    configdef.IntDefault("log.cleaner.max.compaction.lag.ms", b),
		DeleteRetentionMs:     configdef.IntDefault("log.cleaner.delete.retention.ms", b),
		TimestampType:         CreateTime, // log.message.timestamp.type
		TimestampDiffMaxMs:    configdef.IntDefault("log.message.timestamp.difference.max.ms", b),
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
	if c.TimestampDiffMaxMs < 0 || c.TimestampDiffMaxMs == math.MaxInt64 {
		c.TimestampDiffLimited = false
	}
	return c
}

// Sentinel errors; callers map them to Kafka error codes at the edge (docs/design.md, "Conventions").
var (
	// ErrCorruptMessage: bad CRC, bad magic or a malformed batch -> CORRUPT_MESSAGE (2).
	ErrCorruptMessage = errors.New("logstore: corrupt record batch")
	// ErrMessageTooLarge: a batch larger than max.message.bytes -> MESSAGE_TOO_LARGE (10).
	ErrMessageTooLarge = errors.New("logstore: record batch larger than max.message.bytes")
	// ErrInvalidRecord: structurally valid but inconsistent batch -> INVALID_RECORD (87).
	ErrInvalidRecord = errors.New("logstore: invalid record batch")
	// ErrOffsetOutOfRange: a read below the log start offset or above the LEO -> OFFSET_OUT_OF_RANGE (1).
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrUnexpectedOffset: a follower append whose first offset is below the LEO (Kafka's
	// UnexpectedAppendOffsetException; above it is a compaction gap, which is appended).
	ErrUnexpectedOffset = errors.New("logstore: follower append starts below the log end offset")
	// ErrInvalidTimestamp: a batch timestamp too far from the broker's clock
	// (message.timestamp.difference.max.ms), or a producer batch claiming LogAppendTime
	// -> INVALID_TIMESTAMP (32).
	ErrInvalidTimestamp = errors.New("logstore: invalid timestamp")
	// ErrClosed: the log or manager was closed (or the log deleted).
	ErrClosed = errors.New("logstore: log closed")
)
