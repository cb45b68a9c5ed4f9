package destinations

import "sync/atomic"

// Stats is a snapshot of one destination's counters.
type Stats struct {
	Name      string // as clients name it: /queue/X or /topic/X
	Pending   int    // waiting for a consumer
	Consumers int
	Enqueued  int64
	Dequeued  int64 // acknowledged (queues) or delivered (topics)
	Stored    int64 // messages in the store
	// MemoryBytes is what the destination's messages occupy in memory.
	MemoryBytes int64
	// Dropped and Aborted count, for a topic, the messages its pendingMessageLimitStrategy
	// dropped and the subscribers its slowConsumerStrategy aborted.
	Dropped int64 `json:"Dropped,omitempty"`
	Aborted int64 `json:"Aborted,omitempty"`
	// Duplicates counts the messages dropped as duplicates (duplicate detection) since
	// start.
	Duplicates int64 `json:"Duplicates,omitempty"`
	// For a queue: Dispatched counts the deliveries to consumers since start
	// (redeliveries included), InFlight the messages dispatched and not yet
	// acknowledged, Expired the messages that expired waiting; OldestTimestamp is the
	// Message.Timestamp (ms) of the message that has waited longest among those held in
	// memory (0: none), and MemoryLimit the queue's own memory limit (0: none, the
	// broker-wide memoryUsage only).
	Dispatched      int64 `json:"Dispatched,omitempty"`
	InFlight        int   `json:"InFlight,omitempty"`
	Expired         int64 `json:"Expired,omitempty"`
	OldestTimestamp int64 `json:"OldestTimestamp,omitempty"`
	MemoryLimit     int64 `json:"MemoryLimit,omitempty"`
	// Partitions describes a stream's partitions (nil for other destinations). For a
	// stream, Enqueued counts every message its log holds or held, Stored those it holds,
	// Dequeued the messages written to subscribers since start, and Pending those
	// waiting to be appended.
	Partitions []StreamPartitionStats `json:"Partitions,omitempty"`
	// Groups are a stream's consumer groups with their positions (see StreamGroupStats).
	Groups []StreamGroupStats `json:"Groups,omitempty"`
}

// DeadLetterReason is why a message was sent to a dead-letter queue.
type DeadLetterReason uint8

// The dead-letter reasons.
const (
	DeadLetterNack            DeadLetterReason = iota // a client NACKed it (ActiveMQ's poison ack)
	DeadLetterExpired                                 // it expired, and processExpired sends expired messages there
	DeadLetterMaxRedeliveries                         // it was redelivered more often than the redelivery policy allows
	NumDeadLetterReasons
)

func (r DeadLetterReason) String() string {
	switch r {
	case DeadLetterNack:
		return "nack"
	case DeadLetterExpired:
		return "expired"
	case DeadLetterMaxRedeliveries:
		return "max_redeliveries"
	}
	return "unknown"
}

// DiscardReason is why a message was dropped without being consumed or dead-lettered.
type DiscardReason uint8

// The discard reasons.
const (
	// DiscardSlowConsumer: a topic subscriber that was behind had it dropped by its
	// pendingMessageLimitStrategy.
	DiscardSlowConsumer DiscardReason = iota
	// DiscardDeadLetterStrategy: it was to go to a dead-letter queue and the
	// dead-letter strategy dropped it instead (the discarding strategy; a
	// non-persistent message without processNonPersistent; a dead message of a
	// dead-letter queue itself).
	DiscardDeadLetterStrategy
	// DiscardNack: a client NACKed it under the discard NACK policy.
	DiscardNack
	NumDiscardReasons
)

func (r DiscardReason) String() string {
	switch r {
	case DiscardSlowConsumer:
		return "slow_consumer"
	case DiscardDeadLetterStrategy:
		return "dead_letter_strategy"
	case DiscardNack:
		return "nack"
	}
	return "unknown"
}

// Counters are broker-wide totals of what destinations did to messages, for metrics.
// They only grow: a destination that is removed takes nothing away from them. The
// broker hands one in Env.Counters; its methods do nothing on a nil Counters.
type Counters struct {
	Expired      atomic.Int64 // expired before they were consumed (queues; topics count their own in the broker)
	DeadLettered [NumDeadLetterReasons]atomic.Int64
	Discarded    [NumDiscardReasons]atomic.Int64
}

func (c *Counters) expired(n int) {
	if c != nil && n > 0 {
		c.Expired.Add(int64(n))
	}
}

func (c *Counters) deadLettered(r DeadLetterReason, n int) {
	if c != nil && n > 0 {
		c.DeadLettered[r].Add(int64(n))
	}
}

func (c *Counters) discarded(r DiscardReason, n int) {
	if c != nil && n > 0 {
		c.Discarded[r].Add(int64(n))
	}
}
