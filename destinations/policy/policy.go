package policy

import (
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of a redelivery policy and a dead-letter strategy, as in ActiveMQ.
const (
	DefaultMaximumRedeliveries      = 6
	DefaultInitialRedeliveryDelay   = time.Second
	DefaultRedeliveryDelay          = time.Second
	DefaultBackOffMultiplier        = 5.0
	DefaultCollisionAvoidanceFactor = 0.15

	// SharedDLQ is the dead-letter queue of every destination whose strategy is not
	// individual (ActiveMQ's sharedDeadLetterStrategy).
	SharedDLQ = "ActiveMQ.DLQ"
	// DefaultDLQQueuePrefix and DefaultDLQTopicPrefix name the dead-letter queue of an
	// individual strategy: prefix + the destination's name.
	DefaultDLQQueuePrefix = "ActiveMQ.DLQ.Queue."
	DefaultDLQTopicPrefix = "ActiveMQ.DLQ.Topic."
)

// Redelivery is a destination's redelivery policy (ActiveMQ's redeliveryPolicy). In
// ActiveMQ it is a client-side JMS setting (or the broker's redeliveryPlugin); STOMP
// clients have none, so the broker applies it: to messages redelivered after a
// connection or subscription ends unacknowledged, a transaction aborts, or a NACK under
// the redeliver NACK policy.
type Redelivery struct {
	// MaximumRedeliveries is how many times a message is redelivered before it goes to
	// the dead-letter destination (default 6; -1: unlimited; 0: never redelivered).
	MaximumRedeliveries int `mapstructure:"maximumRedeliveries" activemq:"redeliveryPolicy"`
	// InitialRedeliveryDelay is the delay of the first redelivery (default 1s); when 0,
	// RedeliveryDelay is used instead.
	InitialRedeliveryDelay time.Duration `mapstructure:"initialRedeliveryDelay" activemq:"redeliveryPolicy"`
	// RedeliveryDelay is the delay of later redeliveries without exponential back-off,
	// and of the first when InitialRedeliveryDelay is 0 (default 1s).
	RedeliveryDelay time.Duration `mapstructure:"redeliveryDelay" activemq:"redeliveryPolicy"`
	// UseExponentialBackOff multiplies each delay by BackOffMultiplier (default false).
	UseExponentialBackOff bool `mapstructure:"useExponentialBackOff" activemq:"redeliveryPolicy"`
	// BackOffMultiplier is the factor of exponential back-off (default 5; back-off needs
	// more than 1).
	BackOffMultiplier float64 `mapstructure:"backOffMultiplier" activemq:"redeliveryPolicy"`
	// MaximumRedeliveryDelay caps the delays of exponential back-off (0: no cap;
	// ActiveMQ writes no cap as -1).
	MaximumRedeliveryDelay time.Duration `mapstructure:"maximumRedeliveryDelay" activemq:"redeliveryPolicy"`
	// UseCollisionAvoidance moves each delay after the first by a random fraction of
	// itself, up to CollisionAvoidanceFactor either way, so that messages failed
	// together are not all redelivered at the same instant (default false).
	UseCollisionAvoidance bool `mapstructure:"useCollisionAvoidance" activemq:"redeliveryPolicy"`
	// CollisionAvoidanceFactor is the largest fraction collision avoidance moves a
	// delay by (default 0.15, from 0 to 1).
	CollisionAvoidanceFactor float64 `mapstructure:"collisionAvoidanceFactor" activemq:"redeliveryPolicy"`
}

// DefaultRedelivery returns ActiveMQ's default redelivery policy.
func DefaultRedelivery() Redelivery {
	return Redelivery{
		MaximumRedeliveries:      DefaultMaximumRedeliveries,
		InitialRedeliveryDelay:   DefaultInitialRedeliveryDelay,
		RedeliveryDelay:          DefaultRedeliveryDelay,
		BackOffMultiplier:        DefaultBackOffMultiplier,
		CollisionAvoidanceFactor: DefaultCollisionAvoidanceFactor,
	}
}

// Exceeded reports whether a message delivered deliveries times may not be delivered
// again: it was redelivered MaximumRedeliveries times already.
func (p Redelivery) Exceeded(deliveries int) bool {
	return p.MaximumRedeliveries >= 0 && deliveries > p.MaximumRedeliveries
}

// Delay is how long to wait before redelivery number attempt (1 for the first), as
// ActiveMQ's RedeliveryPolicy computes it (its redeliveryPlugin starts from the initial
// delay and applies getNextRedeliveryDelay once per earlier redelivery):
//
//   - The first waits InitialRedeliveryDelay, or RedeliveryDelay when that is 0.
//   - Each later one waits RedeliveryDelay; with UseExponentialBackOff and a
//     BackOffMultiplier above 1 it waits instead the first delay times
//     BackOffMultiplier^(attempt-1), and when that is above a positive
//     MaximumRedeliveryDelay, the larger of MaximumRedeliveryDelay and RedeliveryDelay.
//   - With UseCollisionAvoidance each later one is then moved by a uniformly random
//     fraction of itself between -CollisionAvoidanceFactor and +CollisionAvoidanceFactor.
//
// An attempt below 1 waits 0; a delay too long for a time.Duration is the longest one.
// Delay does not look at MaximumRedeliveries (see Exceeded).
func (p Redelivery) Delay(attempt int) time.Duration {
	return p.delay(attempt, rand.Float64())
}

// delay is Delay with the random number of collision avoidance, u in [0, 1), given.
func (p Redelivery) delay(attempt int, u float64) time.Duration {
	if attempt < 1 {
		return 0
	}
	first := p.InitialRedeliveryDelay
	if first == 0 {
		first = p.RedeliveryDelay
	}
	if attempt == 1 {
		return first
	}
	d := float64(p.RedeliveryDelay)
	if p.UseExponentialBackOff && p.BackOffMultiplier > 1 && first > 0 {
		d = float64(first) * math.Pow(p.BackOffMultiplier, float64(attempt-1))
		if p.MaximumRedeliveryDelay > 0 && d > float64(p.MaximumRedeliveryDelay) {
			d = float64(max(p.MaximumRedeliveryDelay, p.RedeliveryDelay))
		}
	}
	if p.UseCollisionAvoidance {
		d += d * p.CollisionAvoidanceFactor * (2*u - 1)
	}
	switch {
	case d >= math.MaxInt64: // also +Inf; float64(math.MaxInt64) is 2^63
		return math.MaxInt64
	case d <= 0: // also NaN
		return 0
	}
	return time.Duration(d)
}

// DeadLetter is a destination's dead-letter strategy (ActiveMQ's deadLetterStrategy):
// where messages go that expired, or were redelivered too often or NACKed.
type DeadLetter struct {
	// Individual gives each destination its own dead-letter queue, named by QueuePrefix
	// or TopicPrefix (ActiveMQ's individualDeadLetterStrategy); when false (the default)
	// every destination shares SharedDLQ (ActiveMQ's sharedDeadLetterStrategy).
	Individual bool `mapstructure:"individual"`
	// Prefix is the file's shorthand for both prefixes: Complete moves it into
	// QueuePrefix and TopicPrefix where the entry does not write those, and clears it.
	Prefix string `mapstructure:"prefix"`
	// QueuePrefix and TopicPrefix start the name of a queue's or a topic's individual
	// dead-letter queue (defaults "ActiveMQ.DLQ.Queue." and "ActiveMQ.DLQ.Topic.").
	QueuePrefix string `mapstructure:"queuePrefix" activemq:"individualDeadLetterStrategy"`
	TopicPrefix string `mapstructure:"topicPrefix" activemq:"individualDeadLetterStrategy"`
	// QueueSuffix and TopicSuffix end those names (default none).
	QueueSuffix string `mapstructure:"queueSuffix" activemq:"individualDeadLetterStrategy"`
	TopicSuffix string `mapstructure:"topicSuffix" activemq:"individualDeadLetterStrategy"`
	// UseQueueForQueueMessages and UseQueueForTopicMessages make the individual
	// dead-letter destination of a queue's or a topic's messages a queue (both
	// default true); false makes it a topic.
	UseQueueForQueueMessages bool `mapstructure:"useQueueForQueueMessages" activemq:"individualDeadLetterStrategy"`
	UseQueueForTopicMessages bool `mapstructure:"useQueueForTopicMessages" activemq:"individualDeadLetterStrategy"`
	// DestinationPerDurableSubscriber gives each durable topic subscription its own
	// individual dead-letter destination: the topic's name followed by "." +
	// client-id + ":" + subscription name (default false), as ActiveMQ names it.
	DestinationPerDurableSubscriber bool `mapstructure:"destinationPerDurableSubscriber" activemq:"individualDeadLetterStrategy"`
	// ProcessExpired dead-letters expired messages instead of dropping them (default
	// true).
	ProcessExpired bool `mapstructure:"processExpired" activemq:"individualDeadLetterStrategy,sharedDeadLetterStrategy"`
	// ProcessNonPersistent dead-letters non-persistent messages too; when false (the
	// default), they are dropped instead.
	ProcessNonPersistent bool `mapstructure:"processNonPersistent" activemq:"individualDeadLetterStrategy,sharedDeadLetterStrategy"`
	// Discard drops every message instead of dead-lettering it, ActiveMQ's
	// <discarding/> (default false). DLQName does not look at it.
	Discard bool `mapstructure:"discard"`
}

// DefaultDeadLetter returns ActiveMQ's default dead-letter strategy: shared, expired
// messages dead-lettered, non-persistent ones dropped.
func DefaultDeadLetter() DeadLetter {
	return DeadLetter{
		QueuePrefix:              DefaultDLQQueuePrefix,
		TopicPrefix:              DefaultDLQTopicPrefix,
		UseQueueForQueueMessages: true,
		UseQueueForTopicMessages: true,
		ProcessExpired:           true,
	}
}

// DLQName is the name of the dead-letter destination of the queue, or when topic is
// set the topic, called name: SharedDLQ unless the strategy is individual, else
// QueuePrefix or TopicPrefix, name, and QueueSuffix or TopicSuffix. Whether it is a
// queue or a topic says ToTopic.
func (s DeadLetter) DLQName(topic bool, name string) string {
	return s.DurableDLQName(name, topic, "")
}

// DurableDLQName is DLQName for a message a durable subscription gave up; sub is
// the subscription as ActiveMQ's SubscriptionKey prints it (client-id ":" name), "" for
// any other message. With DestinationPerDurableSubscriber the topic's name is followed
// by "." + sub, as ActiveMQ's IndividualDeadLetterStrategy names it.
func (s DeadLetter) DurableDLQName(name string, topic bool, sub string) string {
	switch {
	case !s.Individual:
		return SharedDLQ
	case topic:
		if s.DestinationPerDurableSubscriber && sub != "" {
			name += "." + sub
		}
		return s.TopicPrefix + name + s.TopicSuffix
	}
	return s.QueuePrefix + name + s.QueueSuffix
}

// ToTopic reports whether the dead-letter destination of a queue's (topic false) or a
// topic's messages is a topic: only an individual strategy with
// useQueueFor...Messages false makes it one.
func (s DeadLetter) ToTopic(topic bool) bool {
	if !s.Individual {
		return false
	}
	if topic {
		return !s.UseQueueForTopicMessages
	}
	return !s.UseQueueForQueueMessages
}
