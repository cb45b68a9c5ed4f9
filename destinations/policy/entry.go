package policy

import "time"

// Bytes is a size in bytes. It is a type of its own so that a reader of the
// configuration can tell a size ("64mb") from a count.
type Bytes int64

// Nack is what a NACK does to a message (nackPolicy); "" acts as NackDLQ.
type Nack string

const (
	// NackDLQ moves the message to the dead-letter destination at once (ActiveMQ's
	// poison ack).
	NackDLQ Nack = "dlq"
	// NackRedeliver gives it back for redelivery by the Redelivery policy; after the
	// last try it is dead-lettered.
	NackRedeliver Nack = "redeliver"
	// NackDiscard drops it (Artemis treats a NACK so).
	NackDiscard Nack = "discard"
)

// StreamType is Policy.Type of a stream: a topic kept as a partitioned log.
const StreamType = "stream"

// Defaults of a policy, as Default returns them, and the bounds Complete holds
// entries to.
const (
	DefaultQueuePrefetch        = 1000
	DefaultTopicPrefetch        = 32767
	DefaultDurableTopicPrefetch = 100
	// DefaultMaxPrefetch is the largest activemq.prefetchSize accepted: ActiveMQ's
	// largest default prefetch (topics', Short.MAX_VALUE).
	DefaultMaxPrefetch       = 32767
	DefaultMemoryLimit Bytes = 64 << 20 // ActiveMQ's per-destination limit
	// DefaultPrioritizedMessages differs from ActiveMQ (false): STOMP clients set
	// the priority header and expect it to matter.
	DefaultPrioritizedMessages     = true
	DefaultExpireMessagesPeriod    = 30 * time.Second
	DefaultNackPolicy              = NackDLQ
	DefaultInactiveTimeoutBeforeGC = 60 * time.Second // ActiveMQ's 60000 ms
	// DefaultIDCacheSize is how many duplicate-detection ids a destination remembers
	// (Artemis' id-cache-size).
	DefaultIDCacheSize = 20000

	// Of a stream.
	DefaultPartitions       = 1
	MaxPartitions           = 1024
	DefaultRetention        = 168 * time.Hour
	DefaultRebalanceTimeout = 30 * time.Second

	// Of abortSlowConsumerStrategy, as in ActiveMQ.
	DefaultMaxSlowDuration = 30 * time.Second
	DefaultMaxSlowCount    = -1
	DefaultSlowCheckPeriod = 30 * time.Second
)

// Policy is one destination's policy, ActiveMQ's <policyEntry>, and one element of
// activemq-style.yaml's destinationPolicy: each field's mapstructure tag is its key
// (see the package documentation for every key and its default). It applies whole
// to the destinations it matches (Select picks the most specific matching entry);
// entries are not merged. A field's activemq tag names the activemq.xml elements
// that carry an attribute of the key's name with its meaning, for the importer.
type Policy struct {
	// What the entry matches: exactly one of Queue (a pattern), Topic (a pattern),
	// TempQueue (every temporary queue) or TempTopic (every temporary topic) is set.
	// Patterns use ActiveMQ's wildcards (see Match). Default sets none of them.
	Queue     string `mapstructure:"queue"`
	Topic     string `mapstructure:"topic"`
	TempQueue bool   `mapstructure:"tempQueue"`
	TempTopic bool   `mapstructure:"tempTopic"`

	// Prefetch is the number of unacknowledged messages a subscription may hold
	// (default 1000 for queues, 32767 for topics; 0 in the file means the default).
	Prefetch int `mapstructure:"prefetch"`
	// MaxPrefetch is the largest activemq.prefetchSize a SUBSCRIBE may ask for
	// (default 32767); a larger one gets an ERROR. Prefetch and
	// DurableTopicPrefetch may not exceed it.
	MaxPrefetch int `mapstructure:"maxPrefetch"`
	// MemoryLimit caps the bytes of messages the destination holds in memory,
	// within the broker's memoryUsage (default 64mb; 0: no limit of its own).
	MemoryLimit Bytes `mapstructure:"memoryLimit" activemq:"policyEntry"`
	// PrioritizedMessages dispatches by message priority, FIFO within a priority
	// (default true; ActiveMQ's default is false).
	PrioritizedMessages bool `mapstructure:"prioritizedMessages" activemq:"policyEntry"`
	// DefaultTimeToLive expires messages sent without an expires header this long
	// after they arrive (default 0: never).
	DefaultTimeToLive time.Duration `mapstructure:"defaultTimeToLive"`
	// ExpireMessagesPeriod is how often the destination is swept for expired
	// messages (default 30s; 0: never, expiry is then noticed only at dispatch).
	ExpireMessagesPeriod time.Duration `mapstructure:"expireMessagesPeriod" activemq:"policyEntry"`
	// NackPolicy is what a NACK does: NackDLQ (default, as ActiveMQ), NackRedeliver
	// or NackDiscard.
	NackPolicy Nack `mapstructure:"nackPolicy"`
	// Redelivery is the redeliveryPolicy block.
	Redelivery Redelivery `mapstructure:"redeliveryPolicy"`
	// DeadLetter is the deadLetterStrategy block.
	DeadLetter DeadLetter `mapstructure:"deadLetterStrategy"`
	// AllConsumersExclusiveByDefault makes every subscription of a queue exclusive,
	// as the activemq.exclusive header does for one (default false).
	AllConsumersExclusiveByDefault bool `mapstructure:"allConsumersExclusiveByDefault" activemq:"policyEntry"`
	// GCInactiveDestinations removes a destination once it has had no messages, no
	// subscribers and nothing sent to it for InactiveTimeoutBeforeGC (default false,
	// as in ActiveMQ). Temporary destinations and streams are never removed this way.
	GCInactiveDestinations bool `mapstructure:"gcInactiveDestinations" activemq:"policyEntry"`
	// InactiveTimeoutBeforeGC is how long a destination must be inactive before
	// GCInactiveDestinations removes it (default 60s; more than 0).
	InactiveTimeoutBeforeGC time.Duration `mapstructure:"inactiveTimeoutBeforeGC" activemq:"policyEntry"`

	// Durable topic subscriptions:

	// DurableTopicPrefetch is the prefetch of a durable subscription (default 100; 0
	// in the file means the default).
	DurableTopicPrefetch int `mapstructure:"durableTopicPrefetch" activemq:"policyEntry"`
	// MaxPendingMessages caps the messages kept for one offline durable subscription
	// (default 0: unlimited).
	MaxPendingMessages int64 `mapstructure:"maxPendingMessages" activemq:"policyEntry"`
	// MaxPendingBytes caps the bytes kept for one offline durable subscription
	// (default 0: unlimited).
	MaxPendingBytes Bytes `mapstructure:"maxPendingBytes"`
	// OfflineDurableSubscriberTimeout removes a durable subscription offline for
	// longer than this (default 0: never; ActiveMQ's -1 is read as 0). The broker's
	// offlineDurableSubscriberTaskSchedule is how often this is checked.
	OfflineDurableSubscriberTimeout time.Duration `mapstructure:"offlineDurableSubscriberTimeout" activemq:"policyEntry"`

	// Streams (topic entries only):

	// Type is "" for a normal destination or StreamType.
	Type string `mapstructure:"type"`
	// Partitions is the stream's partition count (default 1; 1 to MaxPartitions); 0
	// when Type is not StreamType.
	Partitions int `mapstructure:"partitions"`
	// Retention drops stream segments older than this (default 168h for streams; 0:
	// kept whatever their age); 0 when Type is not StreamType.
	Retention time.Duration `mapstructure:"retention"`
	// RetentionBytes drops the oldest stream segments when a partition is larger
	// than this (default 0: no size limit).
	RetentionBytes Bytes `mapstructure:"retentionBytes"`
	// RebalanceTimeout is how long a consumer group member that loses a partition in
	// a rebalance may take to settle (ACK or NACK) the messages of it it holds; the
	// partition goes to its new owner once they are settled, or after this, when the
	// new owner gets the unsettled ones again (default 30s; more than 0; 0 when Type
	// is not StreamType). Kafka's rebalance timeout plays this part.
	RebalanceTimeout time.Duration `mapstructure:"rebalanceTimeout"`

	// Slow non-durable topic subscribers (topic entries only; see
	// destinations/slowconsumer.go): by default none is dropped or aborted, producers
	// are held back by MemoryLimit instead.

	// PendingMessageLimit is the pendingMessageLimitStrategy block.
	PendingMessageLimit PendingLimit `mapstructure:"pendingMessageLimitStrategy"`
	// SlowConsumer is the slowConsumerStrategy block.
	SlowConsumer SlowConsumerStrategy `mapstructure:"slowConsumerStrategy"`
	// AdvisoryForSlowConsumers announces a subscriber that falls behind on
	// ActiveMQ.Advisory.SlowConsumer.Topic.<name> (default false, as ActiveMQ). Only
	// topic subscribers are ever found behind; on a queue entry it does nothing.
	AdvisoryForSlowConsumers bool `mapstructure:"advisoryForSlowConsumers" activemq:"policyEntry"`

	// DuplicateDetection is the duplicateDetection block: ids sent in _AMQ_DUPL_ID
	// (or x-deduplication-header) that the destination remembers, to drop a
	// producer's retry of a message it already accepted (see package broker/dedup).
	DuplicateDetection DuplicateDetection `mapstructure:"duplicateDetection"`

	// Set holds the keys the configuration wrote for this entry, as paths below the
	// entry: "prefetch", "redeliveryPolicy.redeliveryDelay" (see Complete); nil for
	// Default.
	Set map[string]bool `mapstructure:"-"`
}

// IsTopic reports whether the entry is for topics (Topic or TempTopic).
func (p Policy) IsTopic() bool { return p.Topic != "" || p.TempTopic }

// IsStream reports whether the policy makes its topics streams.
func (p Policy) IsStream() bool { return p.Type == StreamType }

// Default is the policy of a destination that no entry matches, queue or topic:
// every setting at its default. It matches nothing itself.
func Default(topic bool) Policy {
	p := Policy{
		Prefetch:                DefaultQueuePrefetch,
		MaxPrefetch:             DefaultMaxPrefetch,
		MemoryLimit:             DefaultMemoryLimit,
		PrioritizedMessages:     DefaultPrioritizedMessages,
		ExpireMessagesPeriod:    DefaultExpireMessagesPeriod,
		NackPolicy:              DefaultNackPolicy,
		Redelivery:              DefaultRedelivery(),
		DeadLetter:              DefaultDeadLetter(),
		InactiveTimeoutBeforeGC: DefaultInactiveTimeoutBeforeGC,
		DurableTopicPrefetch:    DefaultDurableTopicPrefetch,
		SlowConsumer: SlowConsumerStrategy{Abort: AbortSlowConsumer{MaxSlowDuration: DefaultMaxSlowDuration,
			MaxSlowCount: DefaultMaxSlowCount, CheckPeriod: DefaultSlowCheckPeriod, IgnoreIdleConsumers: true}},
		DuplicateDetection: DuplicateDetection{Enabled: true, IDCacheSize: DefaultIDCacheSize},
	}
	if topic {
		p.Prefetch = DefaultTopicPrefetch
	}
	return p
}

// PendingLimit is a topic entry's pendingMessageLimitStrategy: how many messages a
// non-durable subscriber that is behind may have waiting beyond its prefetch
// before the oldest are dropped (ActiveMQ's oldest-message eviction), by one of
// ActiveMQ's two strategies. The default, the zero value, drops nothing: a subscriber that is
// behind holds the producers back through the topic's MemoryLimit instead
// (producer flow control), as ActiveMQ does when no strategy is configured.
type PendingLimit struct {
	Constant     ConstantLimit `mapstructure:"constantPendingMessageLimitStrategy"`
	PrefetchRate RateLimit     `mapstructure:"prefetchRatePendingMessageLimitStrategy"`
}

// ConstantLimit is constantPendingMessageLimitStrategy: at most Limit waiting
// messages (0: none may wait; -1: no limit).
type ConstantLimit struct {
	// Enabled: the entry writes a limit other than -1 (Complete sets it).
	Enabled bool `mapstructure:"-"`
	Limit   int  `mapstructure:"limit" activemq:"constantPendingMessageLimitStrategy"`
}

// RateLimit is prefetchRatePendingMessageLimitStrategy: at most prefetch ×
// Multiplier waiting messages (0, the default: no limit).
type RateLimit struct {
	Multiplier float64 `mapstructure:"multiplier" activemq:"prefetchRatePendingMessageLimitStrategy"`
}

// Configured reports whether a limit applies.
func (p PendingLimit) Configured() bool { return p.Constant.Enabled || p.PrefetchRate.Multiplier > 0 }

// Max is the most messages a subscriber with this prefetch keeps waiting, or -1.
func (p PendingLimit) Max(prefetch int32) int {
	switch {
	case p.Constant.Enabled:
		return p.Constant.Limit
	case p.PrefetchRate.Multiplier > 0:
		return int(float64(prefetch) * p.PrefetchRate.Multiplier)
	}
	return -1
}

// SlowConsumerStrategy is a topic entry's slowConsumerStrategy.
type SlowConsumerStrategy struct {
	Abort AbortSlowConsumer `mapstructure:"abortSlowConsumerStrategy"`
}

// AbortSlowConsumer is abortSlowConsumerStrategy: a non-durable subscriber that
// stays behind (its prefetch full and messages waiting) is aborted.
type AbortSlowConsumer struct {
	// Enabled: the entry has the strategy (Complete sets it when the entry writes the
	// block, even empty). By default no subscriber is aborted.
	Enabled bool `mapstructure:"-"`
	// AbortConnection closes the subscriber's whole connection with an ERROR; false
	// (the default) ends only the subscription, with a non-fatal ERROR.
	AbortConnection bool `mapstructure:"abortConnection" activemq:"abortSlowConsumerStrategy"`
	// MaxSlowDuration aborts a subscriber behind for this long (default 30s; 0: no
	// time limit).
	MaxSlowDuration time.Duration `mapstructure:"maxSlowDuration" activemq:"abortSlowConsumerStrategy"`
	// MaxSlowCount aborts a subscriber that fell behind more than this many times
	// (default -1: no count limit).
	MaxSlowCount int64 `mapstructure:"maxSlowCount" activemq:"abortSlowConsumerStrategy"`
	// CheckPeriod is how often subscribers are checked (default 30s).
	CheckPeriod time.Duration `mapstructure:"checkPeriod" activemq:"abortSlowConsumerStrategy"`
	// IgnoreIdleConsumers is accepted for activemq.xml's sake: a subscriber counts as
	// behind only while messages wait for it, so an idle one never does.
	IgnoreIdleConsumers bool `mapstructure:"ignoreIdleConsumers" activemq:"abortSlowConsumerStrategy"`
}

// DuplicateDetection is a destination's duplicate detection.
type DuplicateDetection struct {
	// Enabled (default true): a message without an id costs nothing.
	Enabled bool `mapstructure:"enabled"`
	// IDCacheSize is how many ids the destination remembers, the oldest forgotten
	// first (default 20000; at least 1).
	IDCacheSize int `mapstructure:"idCacheSize"`
	// Window forgets ids older than this (default 0: only IDCacheSize bounds them).
	Window time.Duration `mapstructure:"window"`
}
