package config

import (
	"math"
	"strings"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
)

// redeliverySection is redeliveryPolicy as written; buildRedelivery makes the
// policy.Redelivery of it.
type redeliverySection struct {
	MaximumRedeliveries      int           `mapstructure:"maximumRedeliveries"`
	InitialRedeliveryDelay   time.Duration `mapstructure:"initialRedeliveryDelay"`
	RedeliveryDelay          time.Duration `mapstructure:"redeliveryDelay"`
	UseExponentialBackOff    bool          `mapstructure:"useExponentialBackOff"`
	BackOffMultiplier        float64       `mapstructure:"backOffMultiplier"`
	MaximumRedeliveryDelay   time.Duration `mapstructure:"maximumRedeliveryDelay"`
	UseCollisionAvoidance    bool          `mapstructure:"useCollisionAvoidance"`
	CollisionAvoidanceFactor float64       `mapstructure:"collisionAvoidanceFactor"`
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
func (c *checker) buildRedelivery(path string, r redeliverySection, set map[string]bool) (policy.Redelivery, *Error) {
	key := func(k string) string { return joinKey(path, k) }
	p := policy.DefaultRedelivery()
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
	take(set, "redeliveryPolicy.useCollisionAvoidance", &p.UseCollisionAvoidance, r.UseCollisionAvoidance)
	if set["redeliveryPolicy.collisionAvoidanceFactor"] {
		f := r.CollisionAvoidanceFactor
		if math.IsNaN(f) || f < 0 || f > 1 {
			return p, c.invalid(key("collisionAvoidanceFactor"), "must be a number from 0 to 1", "a decimal fraction from 0 to 1, e.g. 0.15")
		}
		p.CollisionAvoidanceFactor = f
	}
	return p, nil
}

// buildDeadLetter validates a deadLetterStrategy block at path and completes it
// with defaults. The prefix alias is resolved, in set too.
func (c *checker) buildDeadLetter(path string, d deadLetterSection, set map[string]bool) (policy.DeadLetter, *Error) {
	const in = "deadLetterStrategy."
	s := policy.DefaultDeadLetter()
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
