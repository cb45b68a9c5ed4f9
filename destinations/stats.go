package destinations

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
	// Dispatched counts, for a queue, the messages delivered and not yet acknowledged,
	// Expired those that expired on it since start, and OldestTimestamp is the
	// timestamp (ms since the epoch) of its oldest waiting message (0 when none waits,
	// or while it is being read from the store).
	Dispatched      int64 `json:"Dispatched,omitempty"`
	Expired         int64 `json:"Expired,omitempty"`
	OldestTimestamp int64 `json:"OldestTimestamp,omitempty"`
	// Partitions describes a stream's partitions (nil for other destinations). For a
	// stream, Enqueued counts every message its log holds or held, Stored those it holds,
	// Dequeued the messages written to subscribers since start, and Pending those
	// waiting to be appended.
	Partitions []StreamPartitionStats `json:"Partitions,omitempty"`
}
