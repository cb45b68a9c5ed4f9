// Package streamlog is the partitioned log behind stream topics as the stream path
// (package destinations) uses it: the Log interface and its own value types (records,
// partition counters, topic settings, group assignments and offsets) and errors.
//
// It is a leaf: it imports nothing of the project, so that an engine may implement Log
// in these very types, and records pass between the engine and the stream path with no
// copy. The embedded engine (kafkalog, whose Record and the rest are aliases of these)
// and Kafka's (kafkalog/kafkaengine) implement it; destinations, durable and the broker
// know no engine, only this package.
package streamlog

import (
	"context"
	"errors"
	"time"
)

// Log is the partitioned log behind stream topics. Consumer groups are named per call.
type Log interface {
	// Now is the log's clock, which stamps appended records.
	Now() time.Time
	Topics() []string
	// Partitions is the number of partitions of topic; 0 for one that does not exist.
	Partitions(topic string) int
	// CreateTopicWith creates a topic with n partitions and its settings, or replaces
	// the settings of one that exists with n partitions (ErrTopicExists otherwise).
	CreateTopicWith(name string, n int, c TopicConfig) error
	// Append writes recs (not empty: ErrEmptyBatch) at the end of the partition and
	// returns the offset of the first; a zero Timestamp is stamped with Now.
	Append(topic string, partition int, recs []Record) (base int64, err error)
	// Read returns records from offset on, about maxBytes of them (at least one if
	// any); an offset outside [OldestOffset, NextOffset] is ErrOffsetOutOfRange.
	Read(topic string, partition int, offset int64, maxBytes int) ([]Record, error)
	// Wait returns once the partition has a record at offset, or ctx ends.
	Wait(ctx context.Context, topic string, partition int, offset int64) error
	// OffsetForTime is the offset of the first record stamped at or after ms
	// (milliseconds since the Unix epoch).
	OffsetForTime(topic string, partition int, ms int64) (int64, error)
	HighWatermark(topic string, partition int) (int64, error)
	NextOffset(topic string, partition int) (int64, error)
	OldestOffset(topic string, partition int) (int64, error)
	Stats(topic string, partition int) (PartitionStats, error)

	// Consumer groups: membership with partition assignment, and committed offsets.

	// Join makes member a member of group consuming topic and returns its first
	// assignment; later ones come on Changes.
	Join(group, member, topic string) (Assignment, error)
	Changes(group, member string) (<-chan Assignment, error)
	// Leave ends a membership (ErrUnknownMember for one that did not join).
	Leave(group, member string) error
	// Committed is group's committed offset in the partition; false if none.
	Committed(group, topic string, partition int) (int64, bool, error)
	// CommitOffsets records several positions at once.
	CommitOffsets(offs []GroupOffset) error
}

// KeyPartitioner is an optional power of a Log whose topics other clients also write,
// such as Kafka's: it picks the partition of a message with a partition key the way
// those clients do (Kafka's murmur2), so that a key lands in one partition whoever
// sends it. Without it the broker hashes keys itself (FNV-1a).
type KeyPartitioner interface {
	PartitionForKey(topic string, key []byte, partitions int) int
}

// GroupLister is an optional power of a Log: it lists the groups that committed offsets
// in a topic. Without it only the groups seen since start are reported.
type GroupLister interface {
	CommittedGroups(topic string) []string
}

// Record is one message of a partition.
type Record struct {
	// Offset is the record's position in its partition, set by Read (ignored by Append).
	Offset int64
	// Timestamp is in milliseconds since the Unix epoch; Append stamps zero with the
	// current time.
	Timestamp int64
	// Key and Value are opaque; nil and empty are kept apart.
	Key, Value []byte
	// Headers are name/value pairs, in order.
	Headers [][2]string
}

// TopicConfig holds a topic's own settings; where a field is zero the log's defaults
// apply (Kafka's topic-level overrides of broker defaults).
type TopicConfig struct {
	// Retention deletes the topic's sealed segments whose newest record is older than
	// this. 0: the log's default; negative: keep segments whatever their age.
	Retention time.Duration
	// RetentionBytes deletes the oldest sealed segments of each partition of the topic
	// while the partition is larger than this. 0: the log's default; negative: no size
	// limit.
	RetentionBytes int64
}

// PartitionStats are counters of one partition, for tests and metrics (an engine
// leaves zero what it does not count).
type PartitionStats struct {
	Segments int   // segment files
	Bytes    int64 // total size of the segment logs
	Appends  int64 // Append calls since Open
	Syncs    int64 // fsyncs of the active segment by the append path since Open
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int
}

// Assignment is what a member of a group consumes in one generation of the group.
type Assignment struct {
	Generation int64
	Partitions []TopicPartition // sorted by topic, then partition
}

// GroupOffset is a group's position in one partition, as CommitOffsets records it.
type GroupOffset struct {
	Group, Topic string
	Partition    int
	Offset       int64
}

// The errors a Log returns (wrapped, with errors.Is) for the conditions its callers
// tell apart. An engine has more of its own.
var (
	// ErrClosed is returned by operations on a Log after Close.
	ErrClosed = errors.New("streamlog: log closed")
	// ErrUnknownTopic is returned for a topic that was never created.
	ErrUnknownTopic = errors.New("streamlog: unknown topic")
	// ErrUnknownPartition is returned for a partition number outside [0, Partitions).
	ErrUnknownPartition = errors.New("streamlog: unknown partition")
	// ErrTopicExists is returned by CreateTopicWith for a topic that exists with
	// another number of partitions.
	ErrTopicExists = errors.New("streamlog: topic already exists")
	// ErrEmptyBatch is returned by Append with no records.
	ErrEmptyBatch = errors.New("streamlog: empty batch")
	// ErrOffsetOutOfRange is returned by Read for an offset below the oldest retained
	// offset or above the next offset.
	ErrOffsetOutOfRange = errors.New("streamlog: offset out of range")
	// ErrUnknownMember is returned by group operations for a member that has not joined.
	ErrUnknownMember = errors.New("streamlog: unknown group member")
)

// maxTopicLen bounds a topic name (Kafka's limit is 249).
const maxTopicLen = 200

// ValidTopicName reports whether every engine takes name for a topic: 1 to 200 ASCII
// letters, digits, '.', '_' and '-', not "." or "..".
func ValidTopicName(name string) bool {
	if name == "" || len(name) > maxTopicLen || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
