package config

import (
	"math"
	"strings"
	"time"
)

// Defaults of a policy entry's redeliveryPolicy and deadLetterStrategy, as in
// ActiveMQ.
const (
	DefaultMaximumRedeliveries    = 6
	DefaultInitialRedeliveryDelay = time.Second
	DefaultRedeliveryDelay        = time.Second
	DefaultBackOffMultiplier      = 5.0

	// SharedDLQ is the dead-letter queue of every destination whose strategy is
	// not individual.
	SharedDLQ = "ActiveMQ.DLQ"
	// DefaultDLQQueuePrefix and DefaultDLQTopicPrefix name the dead-letter queue
	// of an individual strategy: prefix + the destination's name.
	DefaultDLQQueuePrefix = "ActiveMQ.DLQ.Queue."
	DefaultDLQTopicPrefix = "ActiveMQ.DLQ.Topic."
)

// RedeliveryPolicy is a policy entry's redeliveryPolicy block. In ActiveMQ it is
// a client-side JMS setting (or the broker's redeliveryPlugin); STOMP clients
// have none, so the broker applies it: to messages redelivered after a
// connection or subscription ends unacknowledged, a transaction aborts, or a
// NACK under NackRedeliver.
type RedeliveryPolicy struct {
	// MaximumRedeliveries is how many times a message is redelivered before it
	// goes to the dead-letter destination (default 6; -1: unlimited; 0: never
	// redelivered).
	MaximumRedeliveries int `mapstructure:"maximumRedeliveries"`
	// InitialRedeliveryDelay is the delay of the first redelivery (default 1s);
	// when 0, RedeliveryDelay is used instead.
	InitialRedeliveryDelay time.Duration `mapstructure:"initialRedeliveryDelay"`
	// RedeliveryDelay is the delay of later redeliveries without exponential
	// back-off, and of the first when InitialRedeliveryDelay is 0 (default 1s).
	RedeliveryDelay time.Duration `mapstructure:"redeliveryDelay"`
	// UseExponentialBackOff multiplies each delay by BackOffMultiplier (default
	// false).
	UseExponentialBackOff bool `mapstructure:"useExponentialBackOff"`
	// BackOffMultiplier is the factor of exponential back-off (default 5; at
	// least 1).
	BackOffMultiplier float64 `mapstructure:"backOffMultiplier"`
	// MaximumRedeliveryDelay caps the delays of exponential back-off (default 0:
	// no cap; ActiveMQ writes no cap as -1, which is read as 0).
	MaximumRedeliveryDelay time.Duration `mapstructure:"maximumRedeliveryDelay"`
}

func defaultRedeliveryPolicy() RedeliveryPolicy {
	return RedeliveryPolicy{
		MaximumRedeliveries:    DefaultMaximumRedeliveries,
		InitialRedeliveryDelay: DefaultInitialRedeliveryDelay,
		RedeliveryDelay:        DefaultRedeliveryDelay,
		BackOffMultiplier:      DefaultBackOffMultiplier,
	}
}

// Delay is how long to wait before redelivery number attempt (1 for the first
// redelivery), as ActiveMQ computes it: the first waits InitialRedeliveryDelay,
// or RedeliveryDelay when that is 0. Later ones wait RedeliveryDelay; with
// exponential back-off (and BackOffMultiplier above 1) each instead waits
// BackOffMultiplier times the one before, but no longer than
// MaximumRedeliveryDelay when that is more than 0. An attempt below 1 waits 0.
// Delay does not look at MaximumRedeliveries.
func (p RedeliveryPolicy) Delay(attempt int) time.Duration {
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
	if !p.UseExponentialBackOff || !(p.BackOffMultiplier > 1) {
		return p.RedeliveryDelay
	}
	if first <= 0 {
		return 0 // and not 0 × +Inf
	}
	d := float64(first) * math.Pow(p.BackOffMultiplier, float64(attempt-1))
	if p.MaximumRedeliveryDelay > 0 && d > float64(p.MaximumRedeliveryDelay) {
		return p.MaximumRedeliveryDelay
	}
	if d >= math.MaxInt64 { // also +Inf
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// DeadLetterStrategy is a policy entry's deadLetterStrategy block: where
// messages go that expired, or were redelivered too often or NACKed (see
// PolicyEntry.NackPolicy).
type DeadLetterStrategy struct {
	// Individual gives each destination its own dead-letter queue, named by
	// QueuePrefix or TopicPrefix (ActiveMQ's individualDeadLetterStrategy); when
	// false (the default) every destination shares SharedDLQ (ActiveMQ's
	// sharedDeadLetterStrategy).
	Individual bool
	// QueuePrefix and TopicPrefix start the name of a queue's or a topic's
	// individual dead-letter queue (defaults "ActiveMQ.DLQ.Queue." and
	// "ActiveMQ.DLQ.Topic."). The key prefix sets both; a queuePrefix or
	// topicPrefix written beside it wins for its kind.
	QueuePrefix string
	TopicPrefix string
	// QueueSuffix and TopicSuffix end those names (default none).
	QueueSuffix string
	TopicSuffix string
	// UseQueueForQueueMessages and UseQueueForTopicMessages make the individual
	// dead-letter destination of a queue's or a topic's messages a queue (both
	// default true); false makes it a topic.
	UseQueueForQueueMessages bool
	UseQueueForTopicMessages bool
	// DestinationPerDurableSubscriber gives each durable topic subscription its
	// own individual dead-letter destination: the topic's name followed by
	// "." + client-id + ":" + subscription name (default false), as ActiveMQ
	// names it.
	DestinationPerDurableSubscriber bool
	// ProcessExpired dead-letters expired messages instead of dropping them
	// (default true).
	ProcessExpired bool
	// ProcessNonPersistent dead-letters non-persistent messages too; when false
	// (the default), they are dropped instead.
	ProcessNonPersistent bool
	// Discard drops every message instead of dead-lettering it, ActiveMQ's
	// <discarding/> (default false). DLQName does not look at it.
	Discard bool
}

func defaultDeadLetterStrategy() DeadLetterStrategy {
	return DeadLetterStrategy{
		QueuePrefix:              DefaultDLQQueuePrefix,
		TopicPrefix:              DefaultDLQTopicPrefix,
		UseQueueForQueueMessages: true,
		UseQueueForTopicMessages: true,
		ProcessExpired:           true,
		ProcessNonPersistent:     false,
	}
}

// DLQName is the name of the dead-letter destination of destination dest, a
// queue or, when kind is "topic" (or "tempTopic"), a topic: SharedDLQ unless the
// strategy is individual, else QueuePrefix or TopicPrefix, dest, and QueueSuffix
// or TopicSuffix. Whether it is a queue or a topic says UseQueueForQueueMessages
// or UseQueueForTopicMessages; the name of a durable subscription's own one
// (DestinationPerDurableSubscriber) is the broker's to make.
func (s DeadLetterStrategy) DLQName(kind, dest string) string {
	if !s.Individual {
		return SharedDLQ
	}
	if strings.EqualFold(kind, "topic") || strings.EqualFold(kind, "tempTopic") {
		return s.TopicPrefix + dest + s.TopicSuffix
	}
	return s.QueuePrefix + dest + s.QueueSuffix
}

// deadLetterSection is deadLetterStrategy as written, with the prefix alias.
type deadLetterSection struct {
	Individual                      bool   `mapstructure:"individual"`
	Prefix                          string `mapstructure:"prefix"`
	QueuePrefix                     string `mapstructure:"queuePrefix"`
	TopicPrefix                     string `mapstructure:"topicPrefix"`
	QueueSuffix                     string `mapstructure:"queueSuffix"`
	TopicSuffix                     string `mapstructure:"topicSuffix"`
	UseQueueForQueueMessages        bool   `mapstructure:"useQueueForQueueMessages"`
	UseQueueForTopicMessages        bool   `mapstructure:"useQueueForTopicMessages"`
	DestinationPerDurableSubscriber bool   `mapstructure:"destinationPerDurableSubscriber"`
	ProcessExpired                  bool   `mapstructure:"processExpired"`
	ProcessNonPersistent            bool   `mapstructure:"processNonPersistent"`
	Discard                         bool   `mapstructure:"discard"`
}

// buildRedelivery validates a redeliveryPolicy block at path and completes it
// with defaults; set holds the entry's written keys.
func (c *checker) buildRedelivery(path string, r RedeliveryPolicy, set map[string]bool) (RedeliveryPolicy, *Error) {
	key := func(k string) string { return joinKey(path, k) }
	p := defaultRedeliveryPolicy()
	if err := c.intRange(key("maximumRedeliveries"), int64(r.MaximumRedeliveries), -1, math.MaxInt32, "-1 for unlimited"); err != nil {
		return p, err
	}
	take(set, "redeliveryPolicy.maximumRedeliveries", &p.MaximumRedeliveries, r.MaximumRedeliveries)
	for _, d := range []struct {
		k   string
		v   time.Duration
		dst *time.Duration
	}{
		{"initialRedeliveryDelay", r.InitialRedeliveryDelay, &p.InitialRedeliveryDelay},
		{"redeliveryDelay", r.RedeliveryDelay, &p.RedeliveryDelay},
	} {
		if err := c.nonNegative(key(d.k), d.v, "no delay"); err != nil {
			return p, err
		}
		take(set, "redeliveryPolicy."+d.k, d.dst, d.v)
	}
	take(set, "redeliveryPolicy.useExponentialBackOff", &p.UseExponentialBackOff, r.UseExponentialBackOff)
	if set["redeliveryPolicy.backOffMultiplier"] {
		m := r.BackOffMultiplier
		if math.IsNaN(m) || math.IsInf(m, 0) || m < 1 {
			return p, c.invalid(key("backOffMultiplier"), "must be a number of at least 1", "a decimal number >= 1, e.g. 2 or 1.5")
		}
		p.BackOffMultiplier = m
	}
	var err *Error
	if p.MaximumRedeliveryDelay, err = c.noneOrPositive(key("maximumRedeliveryDelay"), r.MaximumRedeliveryDelay, "no cap"); err != nil {
		return p, err
	}
	return p, nil
}

// buildDeadLetter validates a deadLetterStrategy block at path and completes it
// with defaults. The prefix alias is resolved, in set too.
func (c *checker) buildDeadLetter(path string, d deadLetterSection, set map[string]bool) (DeadLetterStrategy, *Error) {
	const in = "deadLetterStrategy."
	s := defaultDeadLetterStrategy()
	take(set, in+"individual", &s.Individual, d.Individual)
	// prefix sets both; the specific keys win.
	for _, p := range []struct {
		key     string
		written string
		dst     *string
	}{{"queuePrefix", d.QueuePrefix, &s.QueuePrefix}, {"topicPrefix", d.TopicPrefix, &s.TopicPrefix}} {
		from := ""
		switch {
		case set[in+p.key]:
			*p.dst, from = p.written, p.key
		case set[in+"prefix"]:
			*p.dst, from = d.Prefix, "prefix"
		}
		if !s.Individual || from == "" {
			continue // the defaults are valid; unused prefixes need not be
		}
		const allowed = "a non-empty destination name prefix without wildcards, e.g. DLQ."
		switch {
		case strings.TrimSpace(*p.dst) == "":
			return s, c.invalid(joinKey(path, from),
				"must not be empty with individual: true (the dead-letter queue would be the destination itself)", allowed)
		case strings.ContainsAny(*p.dst, "*>"):
			return s, c.invalid(joinKey(path, from), "a dead-letter queue name cannot contain a wildcard", allowed)
		}
	}
	if set[in+"prefix"] {
		delete(set, in+"prefix")
		set[in+"queuePrefix"], set[in+"topicPrefix"] = true, true
	}
	for _, p := range []struct {
		key, written string
		dst          *string
	}{{"queueSuffix", d.QueueSuffix, &s.QueueSuffix}, {"topicSuffix", d.TopicSuffix, &s.TopicSuffix}} {
		take(set, in+p.key, p.dst, p.written)
		if strings.ContainsAny(*p.dst, "*>") {
			return s, c.invalid(joinKey(path, p.key), "a dead-letter queue name cannot contain a wildcard",
				"a destination name suffix without wildcards, e.g. .DLQ")
		}
	}
	take(set, in+"useQueueForQueueMessages", &s.UseQueueForQueueMessages, d.UseQueueForQueueMessages)
	take(set, in+"useQueueForTopicMessages", &s.UseQueueForTopicMessages, d.UseQueueForTopicMessages)
	take(set, in+"destinationPerDurableSubscriber", &s.DestinationPerDurableSubscriber, d.DestinationPerDurableSubscriber)
	take(set, in+"processExpired", &s.ProcessExpired, d.ProcessExpired)
	take(set, in+"processNonPersistent", &s.ProcessNonPersistent, d.ProcessNonPersistent)
	take(set, in+"discard", &s.Discard, d.Discard)
	return s, nil
}
