package config

import (
	"math"
	"strings"
	"time"
)

// Defaults of a topic entry's slow-consumer handling, as in ActiveMQ's
// abortSlowConsumerStrategy.
const (
	DefaultMaxSlowDuration = 30 * time.Second
	DefaultSlowCheckPeriod = 30 * time.Second
)

// PendingMessageLimit is a topic entry's pendingMessageLimitStrategy: how many
// messages a non-durable subscriber that is behind may have waiting beyond its
// prefetch before the oldest are dropped (ActiveMQ's oldest-message eviction).
// The zero value, the default, drops nothing: a subscriber that is behind holds
// the producers back through the topic's memoryLimit instead (producer flow
// control), as ActiveMQ does when no strategy is configured.
type PendingMessageLimit struct {
	// Constant is set by constantPendingMessageLimitStrategy (with a limit
	// other than -1, ActiveMQ's "none"): at most Limit waiting messages (0: none
	// may wait).
	Constant bool
	Limit    int
	// Multiplier is prefetchRatePendingMessageLimitStrategy's multiplier: at
	// most prefetch × Multiplier waiting messages; 0 when not configured.
	Multiplier float64
}

// Configured reports whether a limit applies.
func (p PendingMessageLimit) Configured() bool { return p.Constant || p.Multiplier > 0 }

// AbortSlowConsumer is a topic entry's slowConsumerStrategy
// abortSlowConsumerStrategy: a non-durable subscriber that stays behind (its
// prefetch full and messages waiting) is aborted.
type AbortSlowConsumer struct {
	// AbortConnection closes the subscriber's whole connection with an ERROR;
	// false (the default) ends only the subscription, with a non-fatal ERROR.
	AbortConnection bool `mapstructure:"abortConnection"`
	// MaxSlowDuration aborts a subscriber behind for this long (default 30s;
	// 0: no time limit).
	MaxSlowDuration time.Duration `mapstructure:"maxSlowDuration"`
	// MaxSlowCount aborts a subscriber that fell behind more than this many
	// times (default -1: no count limit).
	MaxSlowCount int64 `mapstructure:"maxSlowCount"`
	// CheckPeriod is how often subscribers are checked (default 30s).
	CheckPeriod time.Duration `mapstructure:"checkPeriod"`
	// IgnoreIdleConsumers is accepted for activemq.xml's sake: a subscriber
	// counts as behind only while messages wait for it, so an idle one never
	// does.
	IgnoreIdleConsumers bool `mapstructure:"ignoreIdleConsumers"`
}

// pendingLimitSection is pendingMessageLimitStrategy as written: one of
// ActiveMQ's two strategies.
type pendingLimitSection struct {
	Constant struct {
		Limit int `mapstructure:"limit"`
	} `mapstructure:"constantPendingMessageLimitStrategy"`
	PrefetchRate struct {
		Multiplier float64 `mapstructure:"multiplier"`
	} `mapstructure:"prefetchRatePendingMessageLimitStrategy"`
}

// slowConsumerSection is slowConsumerStrategy as written.
type slowConsumerSection struct {
	Abort AbortSlowConsumer `mapstructure:"abortSlowConsumerStrategy"`
}

const (
	pendingLimitKey = "pendingMessageLimitStrategy"
	constantKey     = pendingLimitKey + ".constantPendingMessageLimitStrategy.limit"
	rateKey         = pendingLimitKey + ".prefetchRatePendingMessageLimitStrategy.multiplier"
	slowKey         = "slowConsumerStrategy.abortSlowConsumerStrategy"
)

// buildSlowConsumers sets the pending-message limit and slow-consumer strategy
// of p from the entry at path: topic entries only (streams excepted), since they
// concern non-durable topic subscribers.
func (c *checker) buildSlowConsumers(at string, e policyEntry, set map[string]bool, p *PolicyEntry) *Error {
	key := func(k string) string { return joinKey(at, k) }
	abortWritten := set[slowKey]
	for k := range set {
		abortWritten = abortWritten || strings.HasPrefix(k, slowKey+".")
	}
	if !set[constantKey] && !set[rateKey] && !abortWritten {
		return nil
	}
	if !p.IsTopic() || p.IsStream() {
		k := pendingLimitKey
		if abortWritten {
			k = "slowConsumerStrategy"
		}
		return c.invalid(key(k), "applies to non-durable topic subscribers, and this entry is not for (non-stream) topics",
			"move it to a topic: or tempTopic: entry")
	}
	if set[constantKey] && set[rateKey] {
		return c.invalid(key(pendingLimitKey), "has both strategies; it takes one",
			"constantPendingMessageLimitStrategy: {limit: N} or prefetchRatePendingMessageLimitStrategy: {multiplier: X}")
	}
	if set[constantKey] {
		if err := c.intRange(key(constantKey), int64(e.PendingMessageLimitStrategy.Constant.Limit), -1, math.MaxInt32, "-1: no limit"); err != nil {
			return err
		}
		if l := e.PendingMessageLimitStrategy.Constant.Limit; l >= 0 {
			p.PendingMessageLimit = PendingMessageLimit{Constant: true, Limit: l}
		}
	}
	if set[rateKey] {
		m := e.PendingMessageLimitStrategy.PrefetchRate.Multiplier
		if m < 0 || math.IsNaN(m) || math.IsInf(m, 0) {
			return c.invalid(key(rateKey), "must not be negative", "a number of at least 0 (0: no limit), e.g. 2.5")
		}
		p.PendingMessageLimit.Multiplier = m
	}
	if !abortWritten {
		return nil
	}
	a := e.SlowConsumerStrategy.Abort
	s := AbortSlowConsumer{MaxSlowDuration: DefaultMaxSlowDuration, MaxSlowCount: -1, CheckPeriod: DefaultSlowCheckPeriod, IgnoreIdleConsumers: true}
	take(set, slowKey+".abortConnection", &s.AbortConnection, a.AbortConnection)
	take(set, slowKey+".ignoreIdleConsumers", &s.IgnoreIdleConsumers, a.IgnoreIdleConsumers)
	if set[slowKey+".maxSlowDuration"] {
		d, err := c.noneOrPositive(key(slowKey+".maxSlowDuration"), a.MaxSlowDuration, "no time limit")
		if err != nil {
			return err
		}
		s.MaxSlowDuration = d
	}
	if set[slowKey+".maxSlowCount"] {
		if err := c.intRange(key(slowKey+".maxSlowCount"), a.MaxSlowCount, -1, math.MaxInt64, "-1: no count limit"); err != nil {
			return err
		}
		s.MaxSlowCount = a.MaxSlowCount
	}
	if set[slowKey+".checkPeriod"] {
		if err := c.positive(key(slowKey+".checkPeriod"), a.CheckPeriod); err != nil {
			return err
		}
		s.CheckPeriod = a.CheckPeriod
	}
	if s.MaxSlowDuration == 0 && s.MaxSlowCount < 0 {
		return c.invalid(key(slowKey), "would never abort anyone: maxSlowDuration and maxSlowCount are both off",
			"maxSlowDuration > 0 or maxSlowCount >= 0")
	}
	p.SlowConsumer = &s
	return nil
}
