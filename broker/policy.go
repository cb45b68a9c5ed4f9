package broker

import (
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
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

// RedeliveryPolicy bounds how often a message is redelivered and how long it waits
// before each redelivery.
type RedeliveryPolicy struct {
	MaximumRedeliveries    int // -1: unlimited
	InitialRedeliveryDelay time.Duration
	RedeliveryDelay        time.Duration // when InitialRedeliveryDelay is 0
	UseExponentialBackOff  bool
	BackOffMultiplier      float64
	MaximumRedeliveryDelay time.Duration // <= 0: no cap
}

// Delay is the wait before redelivery number attempt (1 = the first redelivery), as
// ActiveMQ's RedeliveryPolicy computes it: the first waits InitialRedeliveryDelay (or
// RedeliveryDelay when that is 0); later ones RedeliveryDelay, or with exponential
// back-off the previous delay times BackOffMultiplier, capped by MaximumRedeliveryDelay.
func (p RedeliveryPolicy) Delay(attempt int) time.Duration {
	d := p.InitialRedeliveryDelay
	if d == 0 || (attempt > 1 && !p.UseExponentialBackOff) {
		d = p.RedeliveryDelay
	}
	if p.UseExponentialBackOff && p.BackOffMultiplier > 1 {
		for i := 1; i < attempt; i++ {
			d = time.Duration(float64(d) * p.BackOffMultiplier)
			if p.MaximumRedeliveryDelay > 0 && d >= p.MaximumRedeliveryDelay {
				break
			}
		}
	}
	if p.MaximumRedeliveryDelay > 0 && d > p.MaximumRedeliveryDelay {
		d = p.MaximumRedeliveryDelay
	}
	return d
}

// exceeded reports whether a message delivered deliveries times may not be redelivered.
func (p RedeliveryPolicy) exceeded(deliveries uint32) bool {
	return p.MaximumRedeliveries >= 0 && int(deliveries) > p.MaximumRedeliveries
}

// DeadLetterStrategy says where dead messages go: ActiveMQ's sharedDeadLetterStrategy
// (the queue DLQName) unless Individual, its individualDeadLetterStrategy otherwise.
type DeadLetterStrategy struct {
	Individual bool
	// An individual dead-letter destination is named prefix + the destination's name
	// (+ the durable subscription, see DestinationPerDurableSubscriber) + suffix.
	QueuePrefix, QueueSuffix string
	TopicPrefix, TopicSuffix string
	// UseTopicForQueueMessages and UseTopicForTopicMessages make the individual
	// dead-letter destination a topic (ActiveMQ's useQueueForQueueMessages and
	// useQueueForTopicMessages set to false).
	UseTopicForQueueMessages bool
	UseTopicForTopicMessages bool
	// DestinationPerDurableSubscriber gives each durable subscription its own: the
	// topic's name is followed by "." + client-id + ":" + subscription name.
	DestinationPerDurableSubscriber bool
	ProcessExpired                  bool
	ProcessNonPersistent            bool
	Discard                         bool
}

// destination is where a dead message from dest goes; sub is the durable subscription
// that gave it up (nil for a queue's message). It follows ActiveMQ's
// IndividualDeadLetterStrategy.createDestination.
func (s DeadLetterStrategy) destination(dest destinations.Name, sub *persistence.SubKey) destinations.Name {
	if !s.Individual {
		return destinations.Name{Kind: destinations.Queue, Name: DLQName}
	}
	prefix, suffix, useTopic := s.QueuePrefix, s.QueueSuffix, s.UseTopicForQueueMessages
	if dest.Kind.IsTopic() {
		prefix, suffix, useTopic = s.TopicPrefix, s.TopicSuffix, s.UseTopicForTopicMessages
	}
	name := prefix + dest.Name
	if s.DestinationPerDurableSubscriber && sub != nil {
		// ActiveMQ's SubscriptionKey.toString(): client-id, ":", name.
		name += "." + sub.ClientID + ":" + sub.Name
	}
	name += suffix
	if useTopic {
		return destinations.Name{Kind: destinations.Topic, Name: name}
	}
	return destinations.Name{Kind: destinations.Queue, Name: name}
}

// Policy is the per-destination policy (ActiveMQ's policyEntry).
type Policy struct {
	Prefetch             int
	DurableTopicPrefetch int
	MemoryLimit          int64
	Prioritized          bool
	DefaultTimeToLive    time.Duration
	ExpirePeriod         time.Duration
	Nack                 NackPolicy
	Redelivery           RedeliveryPolicy
	DeadLetter           DeadLetterStrategy
	AllExclusive         bool

	// Durable subscriptions (topics).
	MaxPendingMessages int64
	MaxPendingBytes    int64
	OfflineTimeout     time.Duration

	// Streams (topics): Stream keeps the topic's messages in the stream log, in
	// Partitions partitions (at least 1), for Retention (0: whatever their age) and
	// within RetentionBytes per partition (0: no size limit). See stream.go.
	Stream         bool
	Partitions     int
	Retention      time.Duration
	RetentionBytes int64
}

// DefaultPolicy is what applies to a destination no configured entry matches:
// ActiveMQ's defaults, with priority ordering on.
func DefaultPolicy(topic bool) Policy {
	p := Policy{
		Prefetch:             DefaultQueuePrefetch,
		DurableTopicPrefetch: 100,
		MemoryLimit:          DefaultDestinationMemoryLimit,
		Prioritized:          true,
		ExpirePeriod:         30 * time.Second,
		Nack:                 NackDLQ,
		Redelivery: RedeliveryPolicy{
			MaximumRedeliveries:    6,
			InitialRedeliveryDelay: time.Second,
			RedeliveryDelay:        time.Second,
			BackOffMultiplier:      5,
		},
		DeadLetter: DeadLetterStrategy{
			QueuePrefix:    "ActiveMQ.DLQ.Queue.",
			TopicPrefix:    "ActiveMQ.DLQ.Topic.",
			ProcessExpired: true,
		},
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
