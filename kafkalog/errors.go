package kafkalog

import (
	"errors"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// The errors of the stream log interface are streamlog's own, under a second name here
// (errors.Is matches either); the others are the embedded log's.
var (
	// ErrClosed is returned by operations on a Log after Close.
	ErrClosed = streamlog.ErrClosed
	// ErrUnknownTopic is returned for a topic that was never created.
	ErrUnknownTopic = streamlog.ErrUnknownTopic
	// ErrUnknownPartition is returned for a partition number outside [0, Partitions).
	ErrUnknownPartition = streamlog.ErrUnknownPartition
	// ErrTopicExists is returned by CreateTopic for a topic that already exists.
	ErrTopicExists = streamlog.ErrTopicExists
	// ErrInvalidTopic is returned for a topic name that is empty, too long, or has
	// characters other than ASCII letters, digits, '.', '_' and '-'.
	ErrInvalidTopic = errors.New("kafkalog: invalid topic name")
	// ErrEmptyBatch is returned by Append with no records.
	ErrEmptyBatch = streamlog.ErrEmptyBatch
	// ErrBatchTooLarge is returned by Append when the encoded batch exceeds MaxBatchBytes.
	ErrBatchTooLarge = errors.New("kafkalog: batch too large")
	// ErrCorrupt is returned when stored data fails its checksum or framing checks
	// somewhere recovery may not repair it (a batch decoder error, a damaged sealed
	// segment, a damaged offsets file).
	ErrCorrupt = errors.New("kafkalog: corrupt data")
	// ErrOffsetOutOfRange is returned by Read for an offset below the oldest retained
	// offset or above the next offset.
	ErrOffsetOutOfRange = streamlog.ErrOffsetOutOfRange
	// ErrPartitionFailed is returned by every write to a partition after a write or sync
	// of it failed: after a failed fsync the kernel may have dropped the dirty pages, so
	// the partition is unusable until the Log is reopened (and recovered).
	ErrPartitionFailed = errors.New("kafkalog: partition failed after a write error")
	// ErrUnknownMember is returned by Group operations for a member that has not joined.
	ErrUnknownMember = streamlog.ErrUnknownMember
	// ErrInvalidOptions is returned by Open for contradictory or out-of-range Options.
	ErrInvalidOptions = errors.New("kafkalog: invalid options")
)
