package destinations

import (
	"context"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/kafkalog"
)

// StreamLog is the partitioned log behind stream topics, as the stream path uses it.
// kafkalog's Log satisfies it through a thin adapter of the broker's (consumer groups
// are named per call); another engine can stand behind it. Its value types are
// kafkalog's.
type StreamLog interface {
	// Now is the log's clock, which stamps appended records.
	Now() time.Time
	Topics() []string
	Partitions(topic string) int
	CreateTopicWith(name string, partitions int, c kafkalog.TopicConfig) error
	Append(topic string, partition int, recs []kafkalog.Record) (base int64, err error)
	Read(topic string, partition int, offset int64, maxBytes int) ([]kafkalog.Record, error)
	// Wait returns once the partition has a record at offset, or ctx ends.
	Wait(ctx context.Context, topic string, partition int, offset int64) error
	OffsetForTime(topic string, partition int, ms int64) (int64, error)
	HighWatermark(topic string, partition int) (int64, error)
	NextOffset(topic string, partition int) (int64, error)
	OldestOffset(topic string, partition int) (int64, error)
	Stats(topic string, partition int) (kafkalog.PartitionStats, error)

	// Consumer groups: membership with partition assignment, and committed offsets.
	Join(group, member, topic string) (kafkalog.Assignment, error)
	Changes(group, member string) (<-chan kafkalog.Assignment, error)
	Leave(group, member string) error
	Committed(group, topic string, partition int) (int64, bool, error)
	CommitOffsets(offs []kafkalog.GroupOffset) error
}

// KeyPartitioner is an optional power of a StreamLog whose topics other clients also
// write, such as Kafka's: it picks the partition of a message with a partition key the
// way those clients do (Kafka's murmur2), so that a key lands in one partition
// whoever sends it. Without it the broker hashes keys itself (FNV-1a).
type KeyPartitioner interface {
	PartitionForKey(topic string, key []byte, partitions int) int
}

// Streams is the stream side of the broker: the log, and the committer that writes the
// consumer groups' positions to it.
type Streams struct {
	log       StreamLog
	committer *committer
}

// NewStreams starts serving streams from log; Close stops it.
func NewStreams(log StreamLog, logger *slog.Logger) *Streams {
	return &Streams{log: log, committer: newCommitter(log, logger)}
}

// Log is the stream log.
func (s *Streams) Log() StreamLog { return s.log }

// Now is the time by the log's clock, which stamps stream messages as they are
// appended.
func (s *Streams) Now() time.Time { return s.log.Now() }

// Close writes the groups' last positions. The streams are closed before (their
// subscriptions commit as they stop); the log itself is the caller's to close.
func (s *Streams) Close() { s.committer.close() }

// BrokerTopicName is the broker topic kept in log topic ln; false for a name the broker
// never makes (logTopicName escapes topic names reversibly).
func BrokerTopicName(ln string) (string, bool) { return brokerTopicName(ln) }
