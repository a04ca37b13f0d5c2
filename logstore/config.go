package logstore

import (
	"errors"
	"math"
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
