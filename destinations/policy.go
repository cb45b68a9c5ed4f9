package destinations

import (
	"time"

	"github.com/activemq-go/broker/destinations/policy"
)

// Default prefetch sizes, ActiveMQ's for STOMP subscriptions.
const (
	DefaultQueuePrefetch = 1000
	DefaultTopicPrefetch = 32767
	// DefaultMaxPrefetch is the largest prefetch a subscription may ask for unless its
	// policy says otherwise.
	DefaultMaxPrefetch = 32767
)

// DefaultDedupCacheSize is how many duplicate-detection ids a destination remembers.
const DefaultDedupCacheSize = 20000

// DefaultDestinationMemoryLimit is ActiveMQ's per-destination memory limit, 64 MiB.
const DefaultDestinationMemoryLimit = 64 << 20

// NackPolicy is what a NACK does to a message.
type NackPolicy uint8

const (
	// NackDLQ moves the message to the dead-letter queue (ActiveMQ's poison ack).
	NackDLQ NackPolicy = iota
	// NackRedeliver gives it back for redelivery through the redelivery policy.
	NackRedeliver
	// NackDiscard drops it (Artemis' behaviour).
	NackDiscard
)

// Policy is the per-destination policy (ActiveMQ's policyEntry).
type Policy struct {
	Prefetch             int
	MaxPrefetch          int // the largest prefetch a subscription may ask for
	DurableTopicPrefetch int
	MemoryLimit          int64
	Prioritized          bool
	DefaultTimeToLive    time.Duration
	ExpirePeriod         time.Duration
	Nack                 NackPolicy
	Redelivery           policy.Redelivery
	DeadLetter           policy.DeadLetter
	AllExclusive         bool
	// GCInactive removes the destination after InactiveTimeout without messages,
	// subscribers or sends (gcInactiveDestinations; see the broker's gc.go).
	GCInactive      bool
	InactiveTimeout time.Duration

	// Durable subscriptions (topics).
	MaxPendingMessages int64
	MaxPendingBytes    int64
	OfflineTimeout     time.Duration

	// Non-durable topic subscribers that are behind (slowconsumer.go): by default
	// none loses a message; the topic's MemoryLimit holds its producers back.
	// PendingLimit, when set, drops the oldest waiting messages of such a
	// subscriber instead (pendingMessageLimitStrategy), and SlowConsumer aborts it
	// (slowConsumerStrategy).
	PendingLimit PendingLimit
	SlowConsumer *SlowConsumerPolicy
	// AdvisoryForSlowConsumers announces a subscriber that falls behind on the
	// ActiveMQ.Advisory.SlowConsumer topic (Env.Advise).
	AdvisoryForSlowConsumers bool

	// Duplicate detection (package broker/dedup): DedupEnabled drops a message whose
	// duplicate-detection id the destination accepted before; it remembers
	// DedupCacheSize ids (the oldest forgotten first), none older than DedupWindow
	// (0: no age limit).
	DedupEnabled   bool
	DedupCacheSize int
	DedupWindow    time.Duration

	// Streams (topics): Stream keeps the topic's messages in the stream log, in
	// Partitions partitions (at least 1), for Retention (0: whatever their age) and
	// within RetentionBytes per partition (0: no size limit). See stream.go.
	// RebalanceTimeout bounds how long a consumer group member that loses a partition
	// in a rebalance may take to settle the messages of it it holds before the
	// partition goes to its new owner anyway, which gets them again (0:
	// DefaultRebalanceTimeout). See streamgroup.go.
	Stream           bool
	Partitions       int
	Retention        time.Duration
	RetentionBytes   int64
	RebalanceTimeout time.Duration
}

// DefaultPolicy is what applies to a destination no configured entry matches:
// ActiveMQ's defaults, with priority ordering on.
func DefaultPolicy(topic bool) Policy {
	p := Policy{
		Prefetch:             DefaultQueuePrefetch,
		MaxPrefetch:          DefaultMaxPrefetch,
		DurableTopicPrefetch: 100,
		MemoryLimit:          DefaultDestinationMemoryLimit,
		Prioritized:          true,
		ExpirePeriod:         30 * time.Second,
		Nack:                 NackDLQ,
		Redelivery:           policy.DefaultRedelivery(),
		DeadLetter:           policy.DefaultDeadLetter(),
		InactiveTimeout:      60 * time.Second,
		DedupEnabled:         true,
		DedupCacheSize:       DefaultDedupCacheSize,
	}
	if topic {
		p.Prefetch = DefaultTopicPrefetch
	}
	return p
}

// PolicyFunc picks the policy of a destination.
type PolicyFunc func(kind Kind, name string) Policy

// PendingLimit is a pendingMessageLimitStrategy: Constant (with Limit), or Multiplier
// times the subscriber's prefetch. The zero value sets no limit.
type PendingLimit struct {
	Constant   bool
	Limit      int
	Multiplier float64
}

// Max is the most messages a subscriber with this prefetch keeps waiting, or -1.
func (p PendingLimit) Max(prefetch int32) int {
	switch {
	case p.Constant:
		return p.Limit
	case p.Multiplier > 0:
		return int(float64(prefetch) * p.Multiplier)
	}
	return -1
}

// SlowConsumerPolicy is an abortSlowConsumerStrategy.
type SlowConsumerPolicy struct {
	AbortConnection bool
	MaxSlowDuration time.Duration // 0: no time limit
	MaxSlowCount    int64         // < 0: no count limit
	CheckPeriod     time.Duration
}
