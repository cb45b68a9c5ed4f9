package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
)

// PolicyEntry.NackPolicy values: what a STOMP NACK does to the message.
const (
	NackDLQ       = "dlq"       // to the dead-letter destination at once (ActiveMQ's poison ack)
	NackRedeliver = "redeliver" // redelivered by the entry's RedeliveryPolicy, dead-lettered after the last try
	NackDiscard   = "discard"   // dropped (Artemis treats a NACK so)
)

// StreamType is PolicyEntry.Type of a stream: a topic kept as a partitioned log.
const StreamType = "stream"

// Defaults of a policy entry, as DefaultPolicy returns them.
const (
	DefaultQueuePrefetch        = 1000
	DefaultTopicPrefetch        = 32767
	DefaultDurableTopicPrefetch = 100
	// DefaultMaxPrefetch is the largest activemq.prefetchSize accepted: ActiveMQ's
	// largest default prefetch (topics', Short.MAX_VALUE).
	DefaultMaxPrefetch = 32767
	DefaultMemoryLimit = 64 << 20 // 64mb
	// DefaultPrioritizedMessages differs from ActiveMQ (false): STOMP clients set
	// the priority header and expect it to matter.
	DefaultPrioritizedMessages  = true
	DefaultExpireMessagesPeriod = 30 * time.Second
	DefaultNackPolicy           = NackDLQ
	// DefaultInactiveTimeoutBeforeGC is how long a destination must be inactive
	// before gcInactiveDestinations removes it (ActiveMQ's 60000 ms).
	DefaultInactiveTimeoutBeforeGC = 60 * time.Second
	DefaultPartitions              = 1 // of a stream
	DefaultRetention               = 168 * time.Hour
	DefaultRebalanceTimeout        = 30 * time.Second // of a stream's consumer groups
	MaxPartitions                  = 1024
)

// PolicyEntry is one element of destinationPolicy, ActiveMQ's <policyEntry>,
// complete: what the file leaves out has its default. It applies whole to the
// destinations it matches (the broker picks the most specific matching entry);
// entries are not merged.
type PolicyEntry struct {
	// What the entry matches: exactly one of Queue (a pattern), Topic (a
	// pattern), TempQueue (every temporary queue) or TempTopic (every temporary
	// topic) is set. Patterns use ActiveMQ's wildcards: "." separates elements,
	// "*" matches one element, ">" as the last element matches one or more.
	Queue     string
	Topic     string
	TempQueue bool
	TempTopic bool

	// Prefetch is the number of unacknowledged messages a subscription may hold
	// (default 1000 for queues, 32767 for topics; 0 in the file means the
	// default).
	Prefetch int
	// MaxPrefetch is the largest activemq.prefetchSize a SUBSCRIBE may ask for
	// (default 32767); a larger one gets an ERROR. Prefetch and
	// DurableTopicPrefetch may not exceed it.
	MaxPrefetch int
	// MemoryLimit caps the bytes of messages the destination holds in memory,
	// within SystemUsage.MemoryUsage (default 64mb; 0: no limit of its own).
	MemoryLimit int64
	// PrioritizedMessages dispatches by message priority, FIFO within a priority
	// (default true; ActiveMQ's default is false).
	PrioritizedMessages bool
	// DefaultTimeToLive expires messages sent without an expires header this
	// long after they arrive (default 0: never).
	DefaultTimeToLive time.Duration
	// ExpireMessagesPeriod is how often the destination is swept for expired
	// messages (default 30s; 0: never, expiry is then noticed only at dispatch).
	ExpireMessagesPeriod time.Duration
	// NackPolicy is what a NACK does: NackDLQ (default, as ActiveMQ),
	// NackRedeliver or NackDiscard.
	NackPolicy string
	// Redelivery is the redeliveryPolicy block.
	Redelivery policy.Redelivery
	// DeadLetter is the deadLetterStrategy block.
	DeadLetter policy.DeadLetter
	// AllConsumersExclusiveByDefault makes every subscription of a queue
	// exclusive, as the activemq.exclusive header does for one (default false).
	AllConsumersExclusiveByDefault bool
	// GCInactiveDestinations removes a destination once it has had no messages,
	// no subscribers and nothing sent to it for InactiveTimeoutBeforeGC (default
	// false, as in ActiveMQ). Temporary destinations and streams are never removed
	// this way.
	GCInactiveDestinations bool
	// InactiveTimeoutBeforeGC is how long a destination must be inactive before
	// GCInactiveDestinations removes it (default 60s; more than 0).
	InactiveTimeoutBeforeGC time.Duration

	// Durable topic subscriptions:

	// DurableTopicPrefetch is the prefetch of a durable subscription (default
	// 100; 0 in the file means the default).
	DurableTopicPrefetch int
	// MaxPendingMessages caps the messages kept for one offline durable
	// subscription (default 0: unlimited).
	MaxPendingMessages int64
	// MaxPendingBytes caps the bytes kept for one offline durable subscription
	// (default 0: unlimited).
	MaxPendingBytes int64
	// OfflineDurableSubscriberTimeout removes a durable subscription offline for
	// longer than this (default 0: never; ActiveMQ's -1 is read as 0).
	// Broker.OfflineDurableSubscriberTaskSchedule is how often this is checked.
	OfflineDurableSubscriberTimeout time.Duration

	// Streams (topic entries only):

	// Type is "" for a normal destination or StreamType.
	Type string
	// Partitions is the stream's partition count (default 1; 1 to 1024); 0 when
	// Type is not StreamType.
	Partitions int
	// Retention drops stream segments older than this (default 168h for streams;
	// 0: kept whatever their age); 0 when Type is not StreamType.
	Retention time.Duration
	// RetentionBytes drops the oldest stream segments when a partition is larger
	// than this (default 0: no size limit).
	RetentionBytes int64
	// RebalanceTimeout is how long a consumer group member that loses a partition
	// in a rebalance may take to settle (ACK or NACK) the messages of it it holds;
	// the partition goes to its new owner once they are settled, or after this,
	// when the new owner gets the unsettled ones again (default 30s; more than 0;
	// 0 when Type is not StreamType). Kafka's rebalance timeout plays this part.
	RebalanceTimeout time.Duration

	// Slow non-durable topic subscribers (topic entries only; see
	// destinations/slowconsumer.go): by default none is dropped or aborted, producers are
	// held back instead.

	// PendingMessageLimit is the pendingMessageLimitStrategy block.
	PendingMessageLimit PendingMessageLimit
	// SlowConsumer is the slowConsumerStrategy block; nil: none.
	SlowConsumer *AbortSlowConsumer
	// AdvisoryForSlowConsumers announces a subscriber that falls behind on
	// ActiveMQ.Advisory.SlowConsumer.Topic.<name> (default false, as ActiveMQ). Only
	// topic subscribers are ever found behind; on a queue entry it does nothing.
	AdvisoryForSlowConsumers bool

	// DuplicateDetection is the duplicateDetection block: ids sent in _AMQ_DUPL_ID (or
	// x-deduplication-header) that the destination remembers, to drop a producer's
	// retry of a message it already accepted (see package broker/dedup).
	DuplicateDetection DuplicateDetection

	// Set holds the keys the file or the environment wrote for this entry, as
	// canonical paths below the entry: "prefetch", "redeliveryPolicy.redeliveryDelay".
	// A key written with no value is not set. deadLetterStrategy.prefix is
	// recorded as the two keys it sets, deadLetterStrategy.queuePrefix and
	// deadLetterStrategy.topicPrefix.
	Set map[string]bool
}

// IsTopic reports whether the entry is for topics (Topic or TempTopic).
func (p PolicyEntry) IsTopic() bool { return p.Topic != "" || p.TempTopic }

// IsStream reports whether the entry makes its topics streams.
func (p PolicyEntry) IsStream() bool { return p.Type == StreamType }

// DefaultPolicy is what applies to a destination that no entry matches: every
// setting at its default, matching every queue (Queue ">") or, for topic, every
// topic (Topic ">").
func DefaultPolicy(topic bool) PolicyEntry {
	p := PolicyEntry{
		Queue:                ">",
		Prefetch:             DefaultQueuePrefetch,
		MaxPrefetch:          DefaultMaxPrefetch,
		MemoryLimit:          DefaultMemoryLimit,
		PrioritizedMessages:  DefaultPrioritizedMessages,
		ExpireMessagesPeriod: DefaultExpireMessagesPeriod,
		NackPolicy:           DefaultNackPolicy,
		Redelivery:           policy.DefaultRedelivery(),
		DeadLetter:           policy.DefaultDeadLetter(),
		DurableTopicPrefetch: DefaultDurableTopicPrefetch,

		InactiveTimeoutBeforeGC: DefaultInactiveTimeoutBeforeGC,
		DuplicateDetection:      DuplicateDetection{Enabled: true, IDCacheSize: DefaultIDCacheSize},
	}
	if topic {
		p.Queue, p.Topic = "", ">"
		p.Prefetch = DefaultTopicPrefetch
	}
	return p
}

// policyEntry is one destinationPolicy element as written.
type policyEntry struct {
	Queue                           string              `mapstructure:"queue"`
	Topic                           string              `mapstructure:"topic"`
	TempQueue                       bool                `mapstructure:"tempQueue"`
	TempTopic                       bool                `mapstructure:"tempTopic"`
	Prefetch                        int                 `mapstructure:"prefetch"`
	MaxPrefetch                     int                 `mapstructure:"maxPrefetch"`
	MemoryLimit                     byteSize            `mapstructure:"memoryLimit"`
	PrioritizedMessages             bool                `mapstructure:"prioritizedMessages"`
	DefaultTimeToLive               time.Duration       `mapstructure:"defaultTimeToLive"`
	ExpireMessagesPeriod            time.Duration       `mapstructure:"expireMessagesPeriod"`
	NackPolicy                      string              `mapstructure:"nackPolicy"`
	RedeliveryPolicy                redeliverySection   `mapstructure:"redeliveryPolicy"`
	DeadLetterStrategy              deadLetterSection   `mapstructure:"deadLetterStrategy"`
	AllConsumersExclusiveByDefault  bool                `mapstructure:"allConsumersExclusiveByDefault"`
	GCInactiveDestinations          bool                `mapstructure:"gcInactiveDestinations"`
	InactiveTimeoutBeforeGC         time.Duration       `mapstructure:"inactiveTimeoutBeforeGC"`
	DurableTopicPrefetch            int                 `mapstructure:"durableTopicPrefetch"`
	MaxPendingMessages              int64               `mapstructure:"maxPendingMessages"`
	MaxPendingBytes                 byteSize            `mapstructure:"maxPendingBytes"`
	OfflineDurableSubscriberTimeout time.Duration       `mapstructure:"offlineDurableSubscriberTimeout"`
	Type                            string              `mapstructure:"type"`
	Partitions                      int                 `mapstructure:"partitions"`
	Retention                       time.Duration       `mapstructure:"retention"`
	RetentionBytes                  byteSize            `mapstructure:"retentionBytes"`
	PendingMessageLimitStrategy     pendingLimitSection `mapstructure:"pendingMessageLimitStrategy"`
	SlowConsumerStrategy            slowConsumerSection `mapstructure:"slowConsumerStrategy"`
	AdvisoryForSlowConsumers        bool                `mapstructure:"advisoryForSlowConsumers"`
	RebalanceTimeout                time.Duration       `mapstructure:"rebalanceTimeout"`
	DuplicateDetection              dedupSection        `mapstructure:"duplicateDetection"`
}

// DefaultIDCacheSize is how many duplicate-detection ids a destination remembers by
// default (Artemis' id-cache-size).
const DefaultIDCacheSize = 20000

// DuplicateDetection is a destination's duplicate detection.
type DuplicateDetection struct {
	// Enabled (default true): a message without an id costs nothing.
	Enabled bool
	// IDCacheSize is how many ids the destination remembers, the oldest forgotten
	// first (default 20000; at least 1).
	IDCacheSize int
	// Window forgets ids older than this (default 0: only IDCacheSize bounds them).
	Window time.Duration
}

// dedupSection is duplicateDetection as written.
type dedupSection struct {
	Enabled     bool          `mapstructure:"enabled"`
	IDCacheSize int           `mapstructure:"idCacheSize"`
	Window      time.Duration `mapstructure:"window"`
}

const (
	policyPath     = "destinationPolicy"
	matchAllowed   = "exactly one of queue: <pattern>, topic: <pattern>, tempQueue: true, tempTopic: true"
	patternAllowed = `a destination name with ActiveMQ wildcards: elements separated by ".", ` +
		`"*" for one element, ">" as the last element for one or more, e.g. "ORDERS.>", "PRICE.*.IBM", ">"`
	prefetchNote = "0 for the default"
)

// buildPolicies validates the destinationPolicy entries and completes each with
// defaults. Which keys were written comes from the settings tree.
func (c *checker) buildPolicies(entries []policyEntry) ([]PolicyEntry, *Error) {
	if len(entries) == 0 {
		return nil, nil
	}
	elem := schema.mustField(policyPath).node.elem
	list, _ := c.tree[strings.ToLower(policyPath)].([]any)
	out := make([]PolicyEntry, 0, len(entries))
	for i, e := range entries {
		set := map[string]bool{}
		if i < len(list) {
			m, _ := list[i].(map[string]any)
			writtenKeys(m, elem, "", set)
		}
		p, err := c.buildPolicy(joinIndex(policyPath, i), e, set)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// writtenKeys adds to set the canonical path of every value written in m.
func writtenKeys(m map[string]any, n *schemaNode, prefix string, set map[string]bool) {
	for k, v := range m {
		f, ok := n.field(k)
		if !ok || v == nil {
			continue
		}
		if sub, isMap := v.(map[string]any); isMap && f.node.kind == sectionNode {
			if len(sub) == 0 {
				// An empty block (all defaults, as in abortSlowConsumerStrategy: {})
				// is recorded as its own key.
				set[joinKey(prefix, f.name)] = true
			}
			writtenKeys(sub, f.node, joinKey(prefix, f.name), set)
			continue
		}
		set[joinKey(prefix, f.name)] = true
	}
}

func (c *checker) buildPolicy(at string, e policyEntry, set map[string]bool) (PolicyEntry, *Error) {
	key := func(k string) string { return joinKey(at, k) }
	var found []string
	for _, m := range []struct {
		key string
		on  bool
	}{{"queue", set["queue"]}, {"topic", set["topic"]}, {"tempQueue", e.TempQueue}, {"tempTopic", e.TempTopic}} {
		if m.on {
			found = append(found, m.key)
		}
	}
	switch len(found) {
	case 0:
		return PolicyEntry{}, c.invalid(at, "the entry matches nothing: it needs one of queue, topic, tempQueue or tempTopic", matchAllowed)
	case 1:
	default:
		return PolicyEntry{}, c.invalid(at, "the entry has both "+strings.Join(found, " and ")+"; it may match one kind of destination", matchAllowed)
	}
	for _, k := range []string{"queue", "topic"} {
		if set[k] {
			pattern := e.Queue
			if k == "topic" {
				pattern = e.Topic
			}
			if err := c.checkPattern(key(k), pattern); err != nil {
				return PolicyEntry{}, err
			}
		}
	}

	p := DefaultPolicy(set["topic"] || e.TempTopic)
	p.Queue, p.Topic, p.TempQueue, p.TempTopic = e.Queue, e.Topic, e.TempQueue, e.TempTopic
	p.Set = set

	if err := c.intRange(key("prefetch"), int64(e.Prefetch), 0, math.MaxInt32, prefetchNote); err != nil {
		return PolicyEntry{}, err
	}
	if e.Prefetch != 0 {
		p.Prefetch = e.Prefetch
	}
	take(set, "memoryLimit", &p.MemoryLimit, int64(e.MemoryLimit))
	take(set, "prioritizedMessages", &p.PrioritizedMessages, e.PrioritizedMessages)
	if err := c.nonNegative(key("defaultTimeToLive"), e.DefaultTimeToLive, "never expire"); err != nil {
		return PolicyEntry{}, err
	}
	take(set, "defaultTimeToLive", &p.DefaultTimeToLive, e.DefaultTimeToLive)
	if err := c.nonNegative(key("expireMessagesPeriod"), e.ExpireMessagesPeriod, "no sweep"); err != nil {
		return PolicyEntry{}, err
	}
	take(set, "expireMessagesPeriod", &p.ExpireMessagesPeriod, e.ExpireMessagesPeriod)
	if set["nackPolicy"] {
		v, err := c.oneOf(key("nackPolicy"), e.NackPolicy, NackDLQ, NackRedeliver, NackDiscard)
		if err != nil {
			return PolicyEntry{}, err
		}
		p.NackPolicy = v
	}
	var err *Error
	if p.Redelivery, err = c.buildRedelivery(key("redeliveryPolicy"), e.RedeliveryPolicy, set); err != nil {
		return PolicyEntry{}, err
	}
	if p.DeadLetter, err = c.buildDeadLetter(key("deadLetterStrategy"), e.DeadLetterStrategy, set); err != nil {
		return PolicyEntry{}, err
	}
	take(set, "allConsumersExclusiveByDefault", &p.AllConsumersExclusiveByDefault, e.AllConsumersExclusiveByDefault)
	take(set, "advisoryForSlowConsumers", &p.AdvisoryForSlowConsumers, e.AdvisoryForSlowConsumers)
	take(set, "gcInactiveDestinations", &p.GCInactiveDestinations, e.GCInactiveDestinations)
	take(set, "duplicateDetection.enabled", &p.DuplicateDetection.Enabled, e.DuplicateDetection.Enabled)
	if set["duplicateDetection.idCacheSize"] {
		if err := c.intRange(key("duplicateDetection.idCacheSize"), int64(e.DuplicateDetection.IDCacheSize), 1, math.MaxInt32, ""); err != nil {
			return PolicyEntry{}, err
		}
		p.DuplicateDetection.IDCacheSize = e.DuplicateDetection.IDCacheSize
	}
	if err := c.nonNegative(key("duplicateDetection.window"), e.DuplicateDetection.Window, "no age limit"); err != nil {
		return PolicyEntry{}, err
	}
	take(set, "duplicateDetection.window", &p.DuplicateDetection.Window, e.DuplicateDetection.Window)
	if set["inactiveTimeoutBeforeGC"] {
		if err := c.positive(key("inactiveTimeoutBeforeGC"), e.InactiveTimeoutBeforeGC); err != nil {
			return PolicyEntry{}, err
		}
		p.InactiveTimeoutBeforeGC = e.InactiveTimeoutBeforeGC
	}

	if err := c.intRange(key("durableTopicPrefetch"), int64(e.DurableTopicPrefetch), 0, math.MaxInt32, prefetchNote); err != nil {
		return PolicyEntry{}, err
	}
	if e.DurableTopicPrefetch != 0 {
		p.DurableTopicPrefetch = e.DurableTopicPrefetch
	}
	if set["maxPrefetch"] {
		if err := c.intRange(key("maxPrefetch"), int64(e.MaxPrefetch), 1, math.MaxInt32, ""); err != nil {
			return PolicyEntry{}, err
		}
		p.MaxPrefetch = e.MaxPrefetch
	}
	// A default prefetch over maxPrefetch is lowered to it; a written one is an error.
	for _, k := range []struct {
		key     string
		n       *int
		written int // 0: the default
	}{{"prefetch", &p.Prefetch, e.Prefetch}, {"durableTopicPrefetch", &p.DurableTopicPrefetch, e.DurableTopicPrefetch}} {
		if *k.n <= p.MaxPrefetch {
			continue
		}
		if k.written == 0 {
			*k.n = p.MaxPrefetch
			continue
		}
		return PolicyEntry{}, c.invalid(key(k.key), fmt.Sprintf("%d is over the entry's maxPrefetch %d", *k.n, p.MaxPrefetch),
			fmt.Sprintf("at most maxPrefetch (%d); raise maxPrefetch for more", p.MaxPrefetch))
	}
	if err := c.intRange(key("maxPendingMessages"), e.MaxPendingMessages, 0, math.MaxInt64, "0 for unlimited"); err != nil {
		return PolicyEntry{}, err
	}
	take(set, "maxPendingMessages", &p.MaxPendingMessages, e.MaxPendingMessages)
	take(set, "maxPendingBytes", &p.MaxPendingBytes, int64(e.MaxPendingBytes))
	if p.OfflineDurableSubscriberTimeout, err = c.noneOrPositive(key("offlineDurableSubscriberTimeout"),
		e.OfflineDurableSubscriberTimeout, "never remove"); err != nil {
		return PolicyEntry{}, err
	}

	if err := c.buildStreamPolicy(at, e, set, &p); err != nil {
		return PolicyEntry{}, err
	}
	if err := c.buildSlowConsumers(at, e, set, &p); err != nil {
		return PolicyEntry{}, err
	}
	return p, nil
}

// buildStreamPolicy sets the stream fields of p: only a topic entry may be a
// stream, and the stream keys belong to streams only.
func (c *checker) buildStreamPolicy(at string, e policyEntry, set map[string]bool, p *PolicyEntry) *Error {
	key := func(k string) string { return joinKey(at, k) }
	if set["type"] {
		v, err := c.oneOf(key("type"), e.Type, "", StreamType)
		if err != nil {
			return err
		}
		p.Type = v
	}
	if !p.IsStream() {
		for _, k := range []string{"partitions", "retention", "retentionBytes", "rebalanceTimeout"} {
			if set[k] {
				return c.invalid(key(k), k+" applies only to streams, and this entry is not one",
					"add type: "+StreamType+" to the entry (a topic entry), or remove "+k)
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
		return c.invalid(key("type"), "a stream is a topic, and this is "+kind,
			`type: `+StreamType+` on a topic: entry; "" (the default) here`)
	}
	p.Partitions, p.Retention, p.RebalanceTimeout = DefaultPartitions, DefaultRetention, DefaultRebalanceTimeout
	if set["partitions"] {
		if err := c.intRange(key("partitions"), int64(e.Partitions), 1, MaxPartitions, ""); err != nil {
			return err
		}
		p.Partitions = e.Partitions
	}
	if err := c.nonNegative(key("retention"), e.Retention, "keep whatever the age"); err != nil {
		return err
	}
	take(set, "retention", &p.Retention, e.Retention)
	take(set, "retentionBytes", &p.RetentionBytes, int64(e.RetentionBytes))
	if set["rebalanceTimeout"] {
		if err := c.positive(key("rebalanceTimeout"), e.RebalanceTimeout); err != nil {
			return err
		}
		p.RebalanceTimeout = e.RebalanceTimeout
	}
	return nil
}

// checkPattern checks a queue: or topic: pattern.
func (c *checker) checkPattern(path, pattern string) *Error {
	if strings.TrimSpace(pattern) == "" {
		return c.invalid(path, `must not be empty (quote a lone ">": unquoted, YAML reads > as the start of a folded block)`, patternAllowed)
	}
	for _, prefix := range []string{"/queue/", "/topic/", "/temp-queue/", "/temp-topic/"} {
		if strings.HasPrefix(pattern, prefix) {
			return c.invalid(path, "a STOMP destination; write the destination's name without "+prefix, patternAllowed)
		}
	}
	elems := strings.Split(pattern, ".")
	for i, el := range elems {
		if strings.Contains(el, ">") && (el != ">" || i != len(elems)-1) {
			return c.invalid(path, `">" may only be the whole last element`, patternAllowed)
		}
	}
	return nil
}

// take sets *dst to v when the file wrote key.
func take[T any](set map[string]bool, key string, dst *T, v T) {
	if set[key] {
		*dst = v
	}
}
