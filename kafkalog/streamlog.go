package kafkalog

import "github.com/activemq-go/broker/destinations/streamlog"

// A Log is a streamlog.Log: the embedded engine behind stream topics. Its value types
// are streamlog's, so records pass between the log and the stream path as they are.
var (
	_ streamlog.Log         = (*Log)(nil)
	_ streamlog.GroupLister = (*Log)(nil)
)

type (
	// Record is one message of a partition.
	Record = streamlog.Record
	// TopicConfig holds a topic's own settings; where a field is zero the Log's Options
	// (Retention, RetentionBytes) apply.
	TopicConfig = streamlog.TopicConfig
	// PartitionStats are counters of one partition, for tests and metrics.
	PartitionStats = streamlog.PartitionStats
	// TopicPartition names one partition.
	TopicPartition = streamlog.TopicPartition
	// Assignment is what a member of a group consumes in one generation of the group.
	Assignment = streamlog.Assignment
	// GroupOffset is a group's position in one partition, as Commit records it.
	GroupOffset = streamlog.GroupOffset
)

// Join is Group(group).Join(member, topic).
func (l *Log) Join(group, member, topic string) (Assignment, error) {
	return l.Group(group).Join(member, topic)
}

// Changes is Group(group).Changes(member).
func (l *Log) Changes(group, member string) (<-chan Assignment, error) {
	return l.Group(group).Changes(member)
}

// Leave is Group(group).Leave(member).
func (l *Log) Leave(group, member string) error { return l.Group(group).Leave(member) }
