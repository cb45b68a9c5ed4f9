package main

import (
	"strings"
	"time"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations"
)

// policies turns the configured destinationPolicy entries into the broker's policy
// lookup: among the entries whose pattern matches, the most specific wins (literal path
// elements beat *, which beats >), and a destination no entry matches gets the defaults.
func policies(entries []config.PolicyEntry) broker.PolicyFunc {
	return func(kind destinations.Kind, name string) broker.Policy {
		best, bestScore := -1, -1
		for i, e := range entries {
			pattern := e.Queue
			if kind.IsTopic() {
				pattern = e.Topic
			}
			if pattern == "" || !(pattern == name || destinations.Match(pattern, name)) {
				continue
			}
			if s := specificity(pattern); s > bestScore {
				best, bestScore = i, s
			}
		}
		if best < 0 {
			return toPolicy(config.DefaultPolicy(kind.IsTopic()))
		}
		return toPolicy(entries[best])
	}
}

// expirySweep is the shortest expireMessagesPeriod configured (ActiveMQ sweeps each
// destination on its own period; one sweeper at the shortest is a close equivalent).
func expirySweep(entries []config.PolicyEntry) time.Duration {
	d := config.DefaultPolicy(false).ExpireMessagesPeriod
	for _, e := range entries {
		if e.ExpireMessagesPeriod > 0 && e.ExpireMessagesPeriod < d {
			d = e.ExpireMessagesPeriod
		}
	}
	return d
}

func specificity(pattern string) int {
	score := 0
	for _, el := range strings.Split(pattern, ".") {
		switch el {
		case ">":
		case "*":
			score++
		default:
			score += 3
		}
	}
	return score
}

func toPolicy(e config.PolicyEntry) broker.Policy {
	p := broker.DefaultPolicy(e.IsTopic())
	if e.Prefetch > 0 {
		p.Prefetch = e.Prefetch
	}
	if e.DurableTopicPrefetch > 0 {
		p.DurableTopicPrefetch = e.DurableTopicPrefetch
	}
	p.MemoryLimit = e.MemoryLimit
	p.Prioritized = e.PrioritizedMessages
	p.DefaultTimeToLive = e.DefaultTimeToLive
	p.ExpirePeriod = e.ExpireMessagesPeriod
	switch e.NackPolicy {
	case config.NackRedeliver:
		p.Nack = broker.NackRedeliver
	case config.NackDiscard:
		p.Nack = broker.NackDiscard
	default:
		p.Nack = broker.NackDLQ
	}
	r := e.Redelivery
	p.Redelivery = broker.RedeliveryPolicy{
		MaximumRedeliveries:    r.MaximumRedeliveries,
		InitialRedeliveryDelay: r.InitialRedeliveryDelay,
		RedeliveryDelay:        r.RedeliveryDelay,
		UseExponentialBackOff:  r.UseExponentialBackOff,
		BackOffMultiplier:      r.BackOffMultiplier,
		MaximumRedeliveryDelay: r.MaximumRedeliveryDelay,
	}
	d := e.DeadLetter
	p.DeadLetter = broker.DeadLetterStrategy{
		Individual:                      d.Individual,
		QueuePrefix:                     d.QueuePrefix,
		QueueSuffix:                     d.QueueSuffix,
		TopicPrefix:                     d.TopicPrefix,
		TopicSuffix:                     d.TopicSuffix,
		UseTopicForQueueMessages:        !d.UseQueueForQueueMessages,
		UseTopicForTopicMessages:        !d.UseQueueForTopicMessages,
		DestinationPerDurableSubscriber: d.DestinationPerDurableSubscriber,
		ProcessExpired:                  d.ProcessExpired,
		ProcessNonPersistent:            d.ProcessNonPersistent,
		Discard:                         d.Discard,
	}
	p.AllExclusive = e.AllConsumersExclusiveByDefault
	p.MaxPendingMessages = e.MaxPendingMessages
	p.MaxPendingBytes = e.MaxPendingBytes
	p.OfflineTimeout = e.OfflineDurableSubscriberTimeout
	p.Stream = e.IsStream()
	p.Partitions = e.Partitions
	p.Retention = e.Retention
	p.RetentionBytes = e.RetentionBytes
	return p
}

// hasStreams reports whether any entry makes destinations streams, so the broker needs
// the stream log.
func hasStreams(entries []config.PolicyEntry) bool {
	for _, e := range entries {
		if e.IsStream() {
			return true
		}
	}
	return false
}
