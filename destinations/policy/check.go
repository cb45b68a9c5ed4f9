package policy

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Error is a value of an entry that is not allowed, or an entry that matches no
// destination or more than one kind.
type Error struct {
	// Key is the key's path below the entry ("prefetch",
	// "redeliveryPolicy.backOffMultiplier"), "" for the entry itself.
	Key     string
	Problem string
	// Allowed says what is allowed. When Duration is set it is to be followed by the
	// syntax of a duration, which is the reader's (the configuration's) business.
	Allowed  string
	Duration bool
}

func (e *Error) Error() string {
	s := e.Problem + " (allowed: " + e.Allowed
	if e.Duration {
		s += "a duration"
	}
	s += ")"
	if e.Key == "" {
		return s
	}
	return e.Key + ": " + s
}

const (
	matchAllowed = "exactly one of queue: <pattern>, topic: <pattern>, tempQueue: true, tempTopic: true"
	// PatternAllowed describes a queue: or topic: pattern.
	PatternAllowed = `a destination name with ActiveMQ wildcards: elements separated by ".", ` +
		`"*" for one element, ">" as the last element for one or more, e.g. "ORDERS.>", "PRICE.*.IBM", ">"`
	prefetchNote = "0 for the default"
)

// Complete checks an entry that a reader of the configuration decoded over
// Default (so that each key set holds was written over its default), and completes
// what depends on what was written: the prefetch of a topic entry, a prefetch over
// maxPrefetch, the stream settings of a stream, the slow-consumer strategy, the
// dead-letter prefix shorthand. set holds the paths of the keys written below the
// entry ("prefetch", "redeliveryPolicy.redeliveryDelay"), an empty block as its own
// key; it becomes p.Set, with deadLetterStrategy.prefix replaced by the two keys it
// sets. The first problem found is returned.
func (p *Policy) Complete(set map[string]bool) *Error {
	if err := p.checkMatch(set); err != nil {
		return err
	}
	p.Set = set
	def := Default(p.IsTopic())
	if err := intRange("prefetch", int64(p.Prefetch), 0, math.MaxInt32, prefetchNote); err != nil {
		return err
	}
	writtenPrefetch := p.Prefetch
	if !set["prefetch"] || p.Prefetch == 0 {
		p.Prefetch, writtenPrefetch = def.Prefetch, 0
	}
	for _, d := range []struct {
		key  string
		v    time.Duration
		zero string
	}{{"defaultTimeToLive", p.DefaultTimeToLive, "never expire"}, {"expireMessagesPeriod", p.ExpireMessagesPeriod, "no sweep"}} {
		if err := nonNegative(d.key, d.v, d.zero); err != nil {
			return err
		}
	}
	if set["nackPolicy"] {
		v, err := oneOf("nackPolicy", string(p.NackPolicy), string(NackDLQ), string(NackRedeliver), string(NackDiscard))
		if err != nil {
			return err
		}
		p.NackPolicy = Nack(v)
	}
	if err := p.Redelivery.complete("redeliveryPolicy."); err != nil {
		return err
	}
	if err := p.DeadLetter.complete("deadLetterStrategy.", set); err != nil {
		return err
	}
	if set["duplicateDetection.idCacheSize"] {
		if err := intRange("duplicateDetection.idCacheSize", int64(p.DuplicateDetection.IDCacheSize), 1, math.MaxInt32, ""); err != nil {
			return err
		}
	}
	if err := nonNegative("duplicateDetection.window", p.DuplicateDetection.Window, "no age limit"); err != nil {
		return err
	}
	if set["inactiveTimeoutBeforeGC"] {
		if err := positive("inactiveTimeoutBeforeGC", p.InactiveTimeoutBeforeGC); err != nil {
			return err
		}
	}
	if err := p.completePrefetch(set, writtenPrefetch); err != nil {
		return err
	}
	if err := intRange("maxPendingMessages", p.MaxPendingMessages, 0, math.MaxInt64, "0 for unlimited"); err != nil {
		return err
	}
	var err *Error
	if p.OfflineDurableSubscriberTimeout, err = noneOrPositive("offlineDurableSubscriberTimeout",
		p.OfflineDurableSubscriberTimeout, "never remove"); err != nil {
		return err
	}
	if err := p.completeStream(set); err != nil {
		return err
	}
	return p.completeSlowConsumers(set)
}

// checkMatch checks what the entry matches: exactly one kind, and a pattern that is
// one.
func (p *Policy) checkMatch(set map[string]bool) *Error {
	var found []string
	for _, m := range []struct {
		key string
		on  bool
	}{{"queue", set["queue"]}, {"topic", set["topic"]}, {"tempQueue", p.TempQueue}, {"tempTopic", p.TempTopic}} {
		if m.on {
			found = append(found, m.key)
		}
	}
	switch len(found) {
	case 0:
		return &Error{Problem: "the entry matches nothing: it needs one of queue, topic, tempQueue or tempTopic", Allowed: matchAllowed}
	case 1:
	default:
		return &Error{Problem: "the entry has both " + strings.Join(found, " and ") + "; it may match one kind of destination", Allowed: matchAllowed}
	}
	for _, k := range []struct{ key, pattern string }{{"queue", p.Queue}, {"topic", p.Topic}} {
		if set[k.key] {
			if problem := CheckPattern(k.pattern); problem != "" {
				return &Error{Key: k.key, Problem: problem, Allowed: PatternAllowed}
			}
		}
	}
	return nil
}

// completePrefetch checks maxPrefetch and holds the prefetches to it: a default
// prefetch over it is lowered to it, a written one (writtenPrefetch, 0 for none)
// is an error.
func (p *Policy) completePrefetch(set map[string]bool, writtenPrefetch int) *Error {
	if err := intRange("durableTopicPrefetch", int64(p.DurableTopicPrefetch), 0, math.MaxInt32, prefetchNote); err != nil {
		return err
	}
	writtenDurable := p.DurableTopicPrefetch
	if !set["durableTopicPrefetch"] || p.DurableTopicPrefetch == 0 {
		p.DurableTopicPrefetch, writtenDurable = DefaultDurableTopicPrefetch, 0
	}
	if set["maxPrefetch"] {
		if err := intRange("maxPrefetch", int64(p.MaxPrefetch), 1, math.MaxInt32, ""); err != nil {
			return err
		}
	}
	for _, k := range []struct {
		key     string
		n       *int
		written int
	}{{"prefetch", &p.Prefetch, writtenPrefetch}, {"durableTopicPrefetch", &p.DurableTopicPrefetch, writtenDurable}} {
		if *k.n <= p.MaxPrefetch {
			continue
		}
		if k.written == 0 {
			*k.n = p.MaxPrefetch
			continue
		}
		return &Error{Key: k.key, Problem: fmt.Sprintf("%d is over the entry's maxPrefetch %d", *k.n, p.MaxPrefetch),
			Allowed: fmt.Sprintf("at most maxPrefetch (%d); raise maxPrefetch for more", p.MaxPrefetch)}
	}
	return nil
}

// completeStream checks the stream keys: only a topic entry may be a stream, and
// the stream keys belong to streams only. A stream's unwritten ones take their
// defaults.
func (p *Policy) completeStream(set map[string]bool) *Error {
	if set["type"] {
		v, err := oneOf("type", p.Type, "", StreamType)
		if err != nil {
			return err
		}
		p.Type = v
	}
	if !p.IsStream() {
		for _, k := range []string{"partitions", "retention", "retentionBytes", "rebalanceTimeout"} {
			if set[k] {
				return &Error{Key: k, Problem: k + " applies only to streams, and this entry is not one",
					Allowed: "add type: " + StreamType + " to the entry (a topic entry), or remove " + k}
			}
		}
		return nil
	}
	if p.Topic == "" {
		kind := "a queue entry"
		if p.TempTopic {
			kind = "a tempTopic entry"
		} else if p.TempQueue {
			kind = "a tempQueue entry"
		}
		return &Error{Key: "type", Problem: "a stream is a topic, and this is " + kind,
			Allowed: `type: ` + StreamType + ` on a topic: entry; "" (the default) here`}
	}
	if !set["partitions"] {
		p.Partitions = DefaultPartitions
	}
	if err := intRange("partitions", int64(p.Partitions), 1, MaxPartitions, ""); err != nil {
		return err
	}
	if !set["retention"] {
		p.Retention = DefaultRetention
	}
	if err := nonNegative("retention", p.Retention, "keep whatever the age"); err != nil {
		return err
	}
	if !set["rebalanceTimeout"] {
		p.RebalanceTimeout = DefaultRebalanceTimeout
	}
	return positive("rebalanceTimeout", p.RebalanceTimeout)
}

const (
	pendingLimitKey = "pendingMessageLimitStrategy"
	constantKey     = pendingLimitKey + ".constantPendingMessageLimitStrategy.limit"
	rateKey         = pendingLimitKey + ".prefetchRatePendingMessageLimitStrategy.multiplier"
	slowKey         = "slowConsumerStrategy.abortSlowConsumerStrategy"
)

// completeSlowConsumers checks the pending-message limit and slow-consumer strategy:
// topic entries only (streams excepted), since they concern non-durable topic
// subscribers.
func (p *Policy) completeSlowConsumers(set map[string]bool) *Error {
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
		return &Error{Key: k, Problem: "applies to non-durable topic subscribers, and this entry is not for (non-stream) topics",
			Allowed: "move it to a topic: or tempTopic: entry"}
	}
	if set[constantKey] && set[rateKey] {
		return &Error{Key: pendingLimitKey, Problem: "has both strategies; it takes one",
			Allowed: "constantPendingMessageLimitStrategy: {limit: N} or prefetchRatePendingMessageLimitStrategy: {multiplier: X}"}
	}
	if c := &p.PendingMessageLimit.Constant; set[constantKey] {
		if err := intRange(constantKey, int64(c.Limit), -1, math.MaxInt32, "-1: no limit"); err != nil {
			return err
		}
		c.Enabled = c.Limit >= 0
	}
	if m := p.PendingMessageLimit.PrefetchRate.Multiplier; m < 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return &Error{Key: rateKey, Problem: "must not be negative", Allowed: "a number of at least 0 (0: no limit), e.g. 2.5"}
	}
	if !abortWritten {
		return nil
	}
	a := &p.SlowConsumer.Abort
	a.Enabled = true
	var err *Error
	if a.MaxSlowDuration, err = noneOrPositive(slowKey+".maxSlowDuration", a.MaxSlowDuration, "no time limit"); err != nil {
		return err
	}
	if err := intRange(slowKey+".maxSlowCount", a.MaxSlowCount, -1, math.MaxInt64, "-1: no count limit"); err != nil {
		return err
	}
	if err := positive(slowKey+".checkPeriod", a.CheckPeriod); err != nil {
		return err
	}
	if a.MaxSlowDuration == 0 && a.MaxSlowCount < 0 {
		return &Error{Key: slowKey, Problem: "would never abort anyone: maxSlowDuration and maxSlowCount are both off",
			Allowed: "maxSlowDuration > 0 or maxSlowCount >= 0"}
	}
	return nil
}

// complete checks a redeliveryPolicy block whose keys are below prefix.
func (r *Redelivery) complete(prefix string) *Error {
	if err := intRange(prefix+"maximumRedeliveries", int64(r.MaximumRedeliveries), -1, math.MaxInt32, "-1 for unlimited"); err != nil {
		return err
	}
	for _, d := range []struct {
		k string
		v time.Duration
	}{{"initialRedeliveryDelay", r.InitialRedeliveryDelay}, {"redeliveryDelay", r.RedeliveryDelay}} {
		if err := nonNegative(prefix+d.k, d.v, "no delay"); err != nil {
			return err
		}
	}
	if m := r.BackOffMultiplier; math.IsNaN(m) || math.IsInf(m, 0) || m < 1 {
		return &Error{Key: prefix + "backOffMultiplier", Problem: "must be a number of at least 1", Allowed: "a decimal number >= 1, e.g. 2 or 1.5"}
	}
	var err *Error
	if r.MaximumRedeliveryDelay, err = noneOrPositive(prefix+"maximumRedeliveryDelay", r.MaximumRedeliveryDelay, "no cap"); err != nil {
		return err
	}
	if f := r.CollisionAvoidanceFactor; math.IsNaN(f) || f < 0 || f > 1 {
		return &Error{Key: prefix + "collisionAvoidanceFactor", Problem: "must be a number from 0 to 1", Allowed: "a decimal fraction from 0 to 1, e.g. 0.15"}
	}
	return nil
}

// complete checks a deadLetterStrategy block whose keys are below prefix, and
// resolves the prefix shorthand, in set too: the specific keys win over it.
func (s *DeadLetter) complete(prefix string, set map[string]bool) *Error {
	for _, p := range []struct {
		key string
		dst *string
	}{{"queuePrefix", &s.QueuePrefix}, {"topicPrefix", &s.TopicPrefix}} {
		from := ""
		switch {
		case set[prefix+p.key]:
			from = p.key
		case set[prefix+"prefix"]:
			*p.dst, from = s.Prefix, "prefix"
		}
		if !s.Individual || from == "" {
			continue // the defaults are valid; unused prefixes need not be
		}
		const allowed = "a non-empty destination name prefix without wildcards, e.g. DLQ."
		switch {
		case strings.TrimSpace(*p.dst) == "":
			return &Error{Key: prefix + from, Problem: "must not be empty with individual: true (the dead-letter queue would be the destination itself)", Allowed: allowed}
		case strings.ContainsAny(*p.dst, "*>"):
			return &Error{Key: prefix + from, Problem: "a dead-letter queue name cannot contain a wildcard", Allowed: allowed}
		}
	}
	s.Prefix = ""
	if set[prefix+"prefix"] {
		delete(set, prefix+"prefix")
		set[prefix+"queuePrefix"], set[prefix+"topicPrefix"] = true, true
	}
	for _, p := range []struct{ key, v string }{{"queueSuffix", s.QueueSuffix}, {"topicSuffix", s.TopicSuffix}} {
		if strings.ContainsAny(p.v, "*>") {
			return &Error{Key: prefix + p.key, Problem: "a dead-letter queue name cannot contain a wildcard",
				Allowed: "a destination name suffix without wildcards, e.g. .DLQ"}
		}
	}
	return nil
}

// intRange checks an integer.
func intRange(key string, n, lo, hi int64, note string) *Error {
	if n >= lo && n <= hi {
		return nil
	}
	allowed := fmt.Sprintf("an integer from %d to %d", lo, hi)
	if hi == math.MaxInt64 {
		allowed = fmt.Sprintf("an integer of at least %d", lo)
	}
	if note != "" {
		allowed += " (" + note + ")"
	}
	return &Error{Key: key, Problem: fmt.Sprintf("%d is out of range", n), Allowed: allowed}
}

// nonNegative checks a duration for which 0 means none or never.
func nonNegative(key string, d time.Duration, zero string) *Error {
	if d < 0 {
		return &Error{Key: key, Problem: "must not be negative", Allowed: "0 (" + zero + ") or more: ", Duration: true}
	}
	return nil
}

// positive checks a duration that must be more than 0.
func positive(key string, d time.Duration) *Error {
	if d <= 0 {
		return &Error{Key: key, Problem: "must be more than 0", Duration: true}
	}
	return nil
}

// noneOrPositive checks a duration for which ActiveMQ writes "none" as -1 (an
// integer is milliseconds); 0 means the same here. Both are returned as 0.
func noneOrPositive(key string, d time.Duration, none string) (time.Duration, *Error) {
	switch {
	case d == -time.Millisecond || d == 0:
		return 0, nil
	case d < 0:
		return 0, &Error{Key: key, Problem: "must be -1, 0 or positive", Allowed: "-1 or 0 (" + none + "), or ", Duration: true}
	}
	return d, nil
}

// oneOf checks a value against a closed set of names, case-insensitively, and
// returns it in the set's spelling.
func oneOf(key, v string, names ...string) (string, *Error) {
	quoted := make([]string, len(names))
	for i, n := range names {
		if strings.EqualFold(strings.TrimSpace(v), n) {
			return n, nil
		}
		quoted[i] = n
		if n == "" {
			quoted[i] = `"" (none)`
		}
	}
	return "", &Error{Key: key, Problem: "unknown value", Allowed: strings.Join(quoted, ", ")}
}
