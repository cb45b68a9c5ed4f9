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
// A temporary destination takes the first tempQueue or tempTopic entry; queue and topic
// patterns never match one (as in ActiveMQ, whose ">" matches no temporary destination).
func policies(entries []config.PolicyEntry) destinations.PolicyFunc {
	return func(kind destinations.Kind, name string) destinations.Policy {
		if kind == destinations.TempQueue || kind == destinations.TempTopic {
			for _, e := range entries {
				if (kind == destinations.TempQueue && e.TempQueue) || (kind == destinations.TempTopic && e.TempTopic) {
					return toPolicy(e)
				}
			}
			return toPolicy(config.DefaultPolicy(kind.IsTopic()))
		}
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

// expirySweep is how often the broker's expiry sweeper wakes: the shortest
// expireMessagesPeriod configured (or the default's, for destinations no entry matches).
// Each destination is swept on its own period; one of 0 is never swept.
func expirySweep(entries []config.PolicyEntry) time.Duration {
	d := config.DefaultPolicy(false).ExpireMessagesPeriod
	for _, e := range entries {
		if e.ExpireMessagesPeriod > 0 && e.ExpireMessagesPeriod < d {
			d = e.ExpireMessagesPeriod
		}
	}
	return d
}

// destinationGCPeriod is how often the broker looks for inactive destinations: never
// when no entry has gcInactiveDestinations, otherwise every half of the shortest
// inactiveTimeoutBeforeGC of those that do, at most every 10s.
func destinationGCPeriod(entries []config.PolicyEntry) time.Duration {
	d := time.Duration(-1)
	for _, e := range entries {
		if !e.GCInactiveDestinations {
			continue
		}
		p := min(max(e.InactiveTimeoutBeforeGC/2, 10*time.Millisecond), broker.DefaultDestinationGCPeriod)
		if d < 0 || p < d {
			d = p
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

func toPolicy(e config.PolicyEntry) destinations.Policy {
	p := destinations.DefaultPolicy(e.IsTopic())
	if e.Prefetch > 0 {
		p.Prefetch = e.Prefetch
	}
	if e.DurableTopicPrefetch > 0 {
		p.DurableTopicPrefetch = e.DurableTopicPrefetch
	}
	if e.MaxPrefetch > 0 {
		p.MaxPrefetch = e.MaxPrefetch
	}
	p.MemoryLimit = e.MemoryLimit
	p.Prioritized = e.PrioritizedMessages
	p.DefaultTimeToLive = e.DefaultTimeToLive
	p.ExpirePeriod = e.ExpireMessagesPeriod
	switch e.NackPolicy {
	case config.NackRedeliver:
		p.Nack = destinations.NackRedeliver
	case config.NackDiscard:
		p.Nack = destinations.NackDiscard
	default:
		p.Nack = destinations.NackDLQ
	}
	p.Redelivery = e.Redelivery
	p.DeadLetter = e.DeadLetter
	p.AllExclusive = e.AllConsumersExclusiveByDefault
	p.GCInactive = e.GCInactiveDestinations
	p.InactiveTimeout = e.InactiveTimeoutBeforeGC
	p.MaxPendingMessages = e.MaxPendingMessages
	p.MaxPendingBytes = e.MaxPendingBytes
	p.OfflineTimeout = e.OfflineDurableSubscriberTimeout
	p.PendingLimit = destinations.PendingLimit{Constant: e.PendingMessageLimit.Constant,
		Limit: e.PendingMessageLimit.Limit, Multiplier: e.PendingMessageLimit.Multiplier}
	if a := e.SlowConsumer; a != nil {
		p.SlowConsumer = &destinations.SlowConsumerPolicy{AbortConnection: a.AbortConnection,
			MaxSlowDuration: a.MaxSlowDuration, MaxSlowCount: a.MaxSlowCount, CheckPeriod: a.CheckPeriod}
	}
	p.AdvisoryForSlowConsumers = e.AdvisoryForSlowConsumers
	p.DedupEnabled = e.DuplicateDetection.Enabled
	p.DedupCacheSize = e.DuplicateDetection.IDCacheSize
	p.DedupWindow = e.DuplicateDetection.Window
	p.Stream = e.IsStream()
	p.Partitions = e.Partitions
	p.Retention = e.Retention
	p.RetentionBytes = e.RetentionBytes
	p.RebalanceTimeout = e.RebalanceTimeout
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
