package broker

import (
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
)

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
	// subscribers or sends (gcInactiveDestinations; see gc.go).
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
	}
	if topic {
		p.Prefetch = DefaultTopicPrefetch
	}
	return p
}

// PolicyFunc picks the policy of a destination.
type PolicyFunc func(kind destinations.Kind, name string) Policy

func (b *Broker) policyFor(kind destinations.Kind, name string) Policy {
	if b.policies == nil {
		p := DefaultPolicy(kind.IsTopic())
		if b.destMemoryLimit > 0 {
			p.MemoryLimit = b.destMemoryLimit
		}
		return p
	}
	return b.policies(kind, name)
}
