package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
)

// keys builds a Set.
func keys(ks ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range ks {
		m[k] = true
	}
	return m
}

// matchAllowed begins what an entry that matches no kind, or more than one, is told.
const matchAllowed = "exactly one of queue: <pattern>, topic: <pattern>"

// An entry that names only what it matches is the default policy for its kind.
func TestPolicyEntryDefaults(t *testing.T) {
	in := `destinationPolicy:
  - queue: ORDERS.>
  - topic: ">"
  - tempQueue: true
  - tempTopic: true
  - topic: LOG
    type: stream
  - queue: A
    prefetch: 0
    durableTopicPrefetch: 0
    memoryLimit:
    redeliveryPolicy:
    deadLetterStrategy: {}
`
	c, err := Parse([]byte(in), nil)
	require.NoError(t, err)
	require.Len(t, c.DestinationPolicy, 6)

	want := policy.Default(false)
	want.Queue, want.Set = "ORDERS.>", keys("queue")
	assert.Equal(t, want, c.DestinationPolicy[0])

	want = policy.Default(true)
	want.Topic, want.Set = ">", keys("topic")
	assert.Equal(t, want, c.DestinationPolicy[1])

	want = policy.Default(false)
	want.TempQueue, want.Set = true, keys("tempQueue")
	assert.Equal(t, want, c.DestinationPolicy[2])

	want = policy.Default(true)
	want.TempTopic, want.Set = true, keys("tempTopic")
	assert.Equal(t, want, c.DestinationPolicy[3])

	want = policy.Default(true)
	want.Topic, want.Type, want.Partitions, want.Retention, want.RebalanceTimeout, want.Set = "LOG", "stream", 1, 168*time.Hour, 30*time.Second, keys("topic", "type")
	assert.Equal(t, want, c.DestinationPolicy[4])
	assert.True(t, c.DestinationPolicy[4].IsStream())

	// 0 prefetches mean the default; keys written with no value keep theirs
	// and are not set; an empty block is recorded as its own key.
	want = policy.Default(false)
	want.Queue, want.Set = "A", keys("queue", "prefetch", "durableTopicPrefetch", "deadLetterStrategy")
	assert.Equal(t, want, c.DestinationPolicy[5])
}

func TestPolicyExample(t *testing.T) {
	isolateEnv(t)
	c, err := Load("testdata/destination-policy.yaml")
	require.NoError(t, err)
	require.Len(t, c.DestinationPolicy, 5)

	want := policy.Default(false)
	want.Queue, want.Prefetch, want.MaxPrefetch, want.MemoryLimit = ">", 500, 2000, 32<<20
	want.PrioritizedMessages, want.DefaultTimeToLive, want.ExpireMessagesPeriod = false, time.Hour, 0
	want.NackPolicy = policy.NackRedeliver
	want.Redelivery = policy.Redelivery{
		MaximumRedeliveries: 4, InitialRedeliveryDelay: 5 * time.Second, RedeliveryDelay: 10 * time.Second,
		UseExponentialBackOff: true, BackOffMultiplier: 2.5, MaximumRedeliveryDelay: 5 * time.Minute,
		UseCollisionAvoidance: true, CollisionAvoidanceFactor: 0.2,
	}
	want.DeadLetter = policy.DeadLetter{
		Individual: true, QueuePrefix: "DLQ.Q.", TopicPrefix: "DLQ.T.",
		UseQueueForQueueMessages: true, UseQueueForTopicMessages: true,
		ProcessExpired: false, ProcessNonPersistent: true, Discard: false,
	}
	want.AllConsumersExclusiveByDefault, want.GCInactiveDestinations, want.InactiveTimeoutBeforeGC = true, true, 5*time.Minute
	want.DurableTopicPrefetch, want.MaxPendingMessages, want.MaxPendingBytes = 10, 1000, 10<<20
	want.OfflineDurableSubscriberTimeout = 0 // -1: never
	want.Set = keys("queue", "prefetch", "maxPrefetch", "memoryLimit", "prioritizedMessages", "defaultTimeToLive",
		"expireMessagesPeriod", "nackPolicy",
		"redeliveryPolicy.maximumRedeliveries", "redeliveryPolicy.initialRedeliveryDelay",
		"redeliveryPolicy.redeliveryDelay", "redeliveryPolicy.useExponentialBackOff",
		"redeliveryPolicy.backOffMultiplier", "redeliveryPolicy.maximumRedeliveryDelay",
		"redeliveryPolicy.useCollisionAvoidance", "redeliveryPolicy.collisionAvoidanceFactor",
		"deadLetterStrategy.individual", "deadLetterStrategy.queuePrefix", "deadLetterStrategy.topicPrefix",
		"deadLetterStrategy.processExpired", "deadLetterStrategy.processNonPersistent", "deadLetterStrategy.discard",
		"allConsumersExclusiveByDefault", "gcInactiveDestinations", "inactiveTimeoutBeforeGC", "durableTopicPrefetch", "maxPendingMessages", "maxPendingBytes",
		"offlineDurableSubscriberTimeout")
	assert.Equal(t, want, c.DestinationPolicy[0])

	prices := policy.Default(true)
	prices.Topic = "PRICES.>"
	prices.DurableTopicPrefetch = 50
	prices.MaxPendingMessages = 5000
	prices.MaxPendingBytes = 1 << 30
	prices.OfflineDurableSubscriberTimeout = 24 * time.Hour
	prices.NackPolicy = policy.NackDiscard
	prices.DeadLetter.Individual, prices.DeadLetter.QueuePrefix, prices.DeadLetter.TopicPrefix = true, "DLQ.", "DLQ."
	prices.Set = keys("topic", "durableTopicPrefetch", "maxPendingMessages", "maxPendingBytes",
		"offlineDurableSubscriberTimeout", "nackPolicy",
		"deadLetterStrategy.individual", "deadLetterStrategy.queuePrefix", "deadLetterStrategy.topicPrefix")
	assert.Equal(t, prices, c.DestinationPolicy[1])
	assert.Equal(t, "DLQ.PRICES.IBM", c.DestinationPolicy[1].DeadLetter.DLQName(true, "PRICES.IBM"))

	events := policy.Default(true)
	events.Topic, events.Type, events.Partitions, events.Retention, events.RetentionBytes, events.RebalanceTimeout =
		"EVENTS.*.audit", "stream", 8, 720*time.Hour, 50<<30, time.Minute
	events.Set = keys("topic", "type", "partitions", "retention", "retentionBytes", "rebalanceTimeout")
	assert.Equal(t, events, c.DestinationPolicy[2])

	temp := policy.Default(false)
	temp.TempQueue, temp.MemoryLimit, temp.DeadLetter.Discard = true, 1<<20, true
	temp.Set = keys("tempQueue", "memoryLimit", "deadLetterStrategy.discard")
	assert.Equal(t, temp, c.DestinationPolicy[3])

	tempTopic := policy.Default(true)
	tempTopic.TempTopic = true
	tempTopic.Set = keys("tempTopic", "nackPolicy")
	assert.Equal(t, tempTopic, c.DestinationPolicy[4], "nackPolicy DLQ is read as dlq")
}

func TestDeadLetterPrefixAlias(t *testing.T) {
	c, err := Parse([]byte(`destinationPolicy:
  - queue: A
    deadLetterStrategy: {individual: true, prefix: X., topicPrefix: T.}
  - queue: B
    deadLetterStrategy: {prefix: ""}
`), nil)
	require.NoError(t, err)
	d := c.DestinationPolicy[0].DeadLetter
	assert.Equal(t, "X.", d.QueuePrefix)
	assert.Equal(t, "T.", d.TopicPrefix, "a specific prefix wins over prefix")
	assert.Equal(t, keys("queue", "deadLetterStrategy.individual", "deadLetterStrategy.queuePrefix",
		"deadLetterStrategy.topicPrefix"), c.DestinationPolicy[0].Set)
	// Not individual: an empty prefix is unused, so allowed.
	assert.Equal(t, "", c.DestinationPolicy[1].DeadLetter.QueuePrefix)
	assert.Equal(t, policy.SharedDLQ, c.DestinationPolicy[1].DeadLetter.DLQName(false, "B"))
}

// The keys of ActiveMQ's individualDeadLetterStrategy beyond the prefixes.
func TestDeadLetterIndividualKeys(t *testing.T) {
	c, err := Parse([]byte(`destinationPolicy:
  - topic: ">"
    deadLetterStrategy:
      individual: true
      queueSuffix: .Q
      topicSuffix: .T
      useQueueForQueueMessages: false
      useQueueForTopicMessages: false
      destinationPerDurableSubscriber: true
`), nil)
	require.NoError(t, err)
	d := c.DestinationPolicy[0].DeadLetter
	want := policy.DefaultDeadLetter()
	want.Individual, want.QueueSuffix, want.TopicSuffix = true, ".Q", ".T"
	want.UseQueueForQueueMessages, want.UseQueueForTopicMessages, want.DestinationPerDurableSubscriber = false, false, true
	assert.Equal(t, want, d)
	assert.Equal(t, "ActiveMQ.DLQ.Topic.P.T", d.DLQName(true, "P"))

	_, err = Parse([]byte("destinationPolicy:\n  - queue: A\n    deadLetterStrategy: {individual: true, queueSuffix: .>}\n"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deadLetterStrategy.queueSuffix")
}

func TestPolicyEnvOverrides(t *testing.T) {
	in := "destinationPolicy:\n  - queue: \">\"\n    memoryLimit: 32mb\n"
	c, err := Parse([]byte(in), []string{
		"BROKER_DESTINATIONPOLICY_0_MEMORYLIMIT=128mb",
		"BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_MAXIMUMREDELIVERIES=-1",
		"BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_BACKOFFMULTIPLIER=1.5",
		"BROKER_DESTINATIONPOLICY_0_DEADLETTERSTRATEGY_INDIVIDUAL=true",
		"BROKER_DESTINATIONPOLICY_0_DEADLETTERSTRATEGY_PREFIX=DLQ.",
		// a second entry, made by the environment alone
		"BROKER_DESTINATIONPOLICY_1_TOPIC=LOG.>",
		"BROKER_DESTINATIONPOLICY_1_TYPE=stream",
		"BROKER_DESTINATIONPOLICY_1_PARTITIONS=4",
		"BROKER_DESTINATIONPOLICY_1_RETENTIONBYTES=1gb",
		"BROKER_SYSTEMUSAGE_MEMORYUSAGE=2gb",
		"BROKER_STREAMS_FLUSH=os",
		"BROKER_VIRTUALTOPICS_ENABLED=false",
		"BROKER_BROKER_SCHEDULERSUPPORT=false",
		"BROKER_BROKER_OFFLINEDURABLESUBSCRIBERTASKSCHEDULE=1m",
	})
	require.NoError(t, err)
	require.Len(t, c.DestinationPolicy, 2)
	p := c.DestinationPolicy[0]
	assert.EqualValues(t, 128<<20, p.MemoryLimit)
	assert.Equal(t, -1, p.Redelivery.MaximumRedeliveries)
	assert.Equal(t, 1.5, p.Redelivery.BackOffMultiplier)
	assert.Equal(t, time.Second, p.Redelivery.InitialRedeliveryDelay, "the block's other keys keep their defaults")
	assert.Equal(t, "DLQ.ORDERS", p.DeadLetter.DLQName(false, "ORDERS"))
	assert.True(t, p.Set["redeliveryPolicy.maximumRedeliveries"])
	assert.False(t, p.Set["redeliveryPolicy.redeliveryDelay"])

	s := c.DestinationPolicy[1]
	assert.Equal(t, "LOG.>", s.Topic)
	assert.Equal(t, 4, s.Partitions)
	assert.Equal(t, 168*time.Hour, s.Retention)
	assert.EqualValues(t, 1<<30, s.RetentionBytes)

	assert.Equal(t, int64(2<<30), c.SystemUsage.MemoryUsage)
	assert.Equal(t, "os", c.Streams.Flush)
	assert.False(t, c.VirtualTopics.Enabled)
	assert.False(t, c.Broker.SchedulerSupport)
	assert.Equal(t, time.Minute, c.Broker.OfflineDurableSubscriberTaskSchedule)
}

func TestPolicyEnvErrors(t *testing.T) {
	tests := []struct {
		env, key, problem, allowed string
	}{
		{"BROKER_DESTINATIONPOLICY_0_PREFETCHH=1", "BROKER_DESTINATIONPOLICY_0_PREFETCHH",
			`no key "prefetchh" in destinationPolicy[0]`, "queue, topic, tempQueue"},
		{"BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_DELAY=1", "BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_DELAY",
			`no key "delay" in destinationPolicy[0].redeliveryPolicy`, "maximumRedeliveries, initialRedeliveryDelay"},
		{"BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY=1", "BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY",
			"destinationPolicy[0].redeliveryPolicy is a section", ""},
		{"BROKER_DESTINATIONPOLICY_2_QUEUE=A", "BROKER_DESTINATIONPOLICY_2_QUEUE", "index 2 is beyond the end", "0 to 1"},
		// values are checked like the file's, and name their variable
		{"BROKER_DESTINATIONPOLICY_0_MEMORYLIMIT=lots", "destinationPolicy[0].memoryLimit",
			"not a size (set by environment variable BROKER_DESTINATIONPOLICY_0_MEMORYLIMIT)", "kb, mb"},
		{"BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_BACKOFFMULTIPLIER=0.5", "destinationPolicy[0].redeliveryPolicy.backOffMultiplier",
			"(set by environment variable BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_BACKOFFMULTIPLIER)", ">= 1"},
		{"BROKER_DESTINATIONPOLICY_1_PREFETCH=5", "destinationPolicy[1]",
			"tempTopic (set by environment variable BROKER_DESTINATIONPOLICY_1_PREFETCH)", matchAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			_, err := Parse([]byte("destinationPolicy:\n  - queue: A\n"), []string{tt.env})
			ce := assertConfigError(t, err, tt.key, tt.allowed)
			assert.Contains(t, ce.Problem, tt.problem)
		})
	}
}

func TestPolicyErrors(t *testing.T) {
	entry := func(body string) string { return "destinationPolicy:\n  - queue: A\n  - " + body + "\n" }
	const (
		nackAllowed = "dlq, redeliver, discard"
		typeAllowed = `"" (none), stream`
	)
	runErrorCases(t, []errorCase{
		{"not a list", "destinationPolicy: {queue: A}\n", "destinationPolicy", "must be a list", "", ""},
		{"entry not a mapping", "destinationPolicy: [A]\n", "destinationPolicy[0]", "must be a mapping", "queue, topic", "A"},
		{"null entry", "destinationPolicy:\n  -\n", "destinationPolicy[0]", "matches nothing", matchAllowed, ""},
		{"no match key", entry("prefetch: 1"), "destinationPolicy[1]", "matches nothing", matchAllowed, ""},
		{"null pattern", entry("queue:"), "destinationPolicy[1]", "matches nothing", matchAllowed, ""},
		{"tempQueue false", entry("tempQueue: false"), "destinationPolicy[1]", "matches nothing", matchAllowed, ""},
		{"queue and topic", entry("{queue: A, topic: B}"), "destinationPolicy[1]", "both queue and topic", matchAllowed, ""},
		{"queue and tempQueue", entry("{queue: A, tempQueue: true}"), "destinationPolicy[1]", "both queue and tempQueue", matchAllowed, ""},
		{"tempQueue and tempTopic", entry("{tempQueue: true, tempTopic: true}"), "destinationPolicy[1]", "both tempQueue and tempTopic", matchAllowed, ""},
		{"unknown key", entry("{queue: B, queuePrefetch: 1}"), "destinationPolicy[1].queuePrefetch", "unknown key", "queue, topic, tempQueue, tempTopic, prefetch", ""},
		{"unknown nested key", entry("{queue: B, redeliveryPolicy: {collisionAvoidancePercent: 15}}"),
			"destinationPolicy[1].redeliveryPolicy.collisionAvoidancePercent", "unknown key", "maximumRedeliveries", ""},
		{"key spelt as written", entry("{queue: B, NackPolicy: retry}"), "destinationPolicy[1].NackPolicy", "unknown value", nackAllowed, "retry"},

		// patterns
		{"empty pattern", entry(`queue: ""`), "destinationPolicy[1].queue", "must not be empty", "wildcards", ""},
		{"unquoted >", "destinationPolicy:\n  - topic: >\n", "destinationPolicy[0].topic", `quote a lone ">"`, "wildcards", ""},
		{"> not last", entry("topic: A.>.B"), "destinationPolicy[1].topic", `">" may only be the whole last element`, "wildcards", "A.>.B"},
		{"> inside an element", entry("queue: A>"), "destinationPolicy[1].queue", `">" may only`, "", "A>"},
		{"STOMP destination", entry("queue: /queue/ORDERS"), "destinationPolicy[1].queue", "without /queue/", "", "/queue/ORDERS"},

		// values
		{"unknown nackPolicy", entry("{queue: B, nackPolicy: requeue}"), "destinationPolicy[1].nackPolicy", "unknown value", nackAllowed, "requeue"},
		{"maxPrefetch 0", entry("{queue: B, maxPrefetch: 0}"), "destinationPolicy[1].maxPrefetch", "out of range", "from 1 to", "0"},
		{"prefetch over maxPrefetch", entry("{queue: B, prefetch: 500, maxPrefetch: 100}"), "destinationPolicy[1].prefetch", "over the entry's maxPrefetch 100", "at most maxPrefetch", "500"},
		{"inactiveTimeoutBeforeGC 0", entry("{queue: B, inactiveTimeoutBeforeGC: 0}"), "destinationPolicy[1].inactiveTimeoutBeforeGC", "more than 0", "", "0"},
		{"gcInactiveDestinations not a boolean", entry("{queue: B, gcInactiveDestinations: often}"), "destinationPolicy[1].gcInactiveDestinations", "not a boolean", "true, false", "often"},
		{"negative prefetch", entry("{queue: B, prefetch: -1}"), "destinationPolicy[1].prefetch", "-1 is out of range", "0 for the default", "-1"},
		{"negative durable prefetch", entry("{topic: B, durableTopicPrefetch: -5}"), "destinationPolicy[1].durableTopicPrefetch", "out of range", "from 0", "-5"},
		{"prefetch not a number", entry("{queue: B, prefetch: many}"), "destinationPolicy[1].prefetch", "not an integer", "whole number", "many"},
		{"negative memoryLimit", entry("{queue: B, memoryLimit: -1}"), "destinationPolicy[1].memoryLimit", "must not be negative", "kb, mb", "-1"},
		{"negative memoryLimit string", entry("{queue: B, memoryLimit: -1mb}"), "destinationPolicy[1].memoryLimit", "not a size", "kb, mb", "-1mb"},
		{"fractional size", entry("{queue: B, memoryLimit: 1.5}"), "destinationPolicy[1].memoryLimit", "not a size", "kb, mb", "1.5"},
		{"negative maxPendingBytes", entry("{topic: B, maxPendingBytes: -10}"), "destinationPolicy[1].maxPendingBytes", "must not be negative", "", ""},
		{"negative maxPendingMessages", entry("{topic: B, maxPendingMessages: -10}"), "destinationPolicy[1].maxPendingMessages", "out of range", "0 for unlimited", "-10"},
		{"negative defaultTimeToLive", entry("{queue: B, defaultTimeToLive: -1s}"), "destinationPolicy[1].defaultTimeToLive", "must not be negative", "never expire", "-1s"},
		{"negative expireMessagesPeriod", entry("{queue: B, expireMessagesPeriod: -1}"), "destinationPolicy[1].expireMessagesPeriod", "must not be negative", "no sweep", "-1"},
		{"bad duration", entry("{queue: B, expireMessagesPeriod: soon}"), "destinationPolicy[1].expireMessagesPeriod", "not a duration", "milliseconds", "soon"},
		{"negative offline timeout", entry("{topic: B, offlineDurableSubscriberTimeout: -2s}"), "destinationPolicy[1].offlineDurableSubscriberTimeout", "-1, 0 or positive", "never remove", "-2s"},

		// redeliveryPolicy
		{"maximumRedeliveries -2", entry("{queue: B, redeliveryPolicy: {maximumRedeliveries: -2}}"),
			"destinationPolicy[1].redeliveryPolicy.maximumRedeliveries", "-2 is out of range", "-1 for unlimited", "-2"},
		{"backOffMultiplier below 1", entry("{queue: B, redeliveryPolicy: {backOffMultiplier: 0.5}}"),
			"destinationPolicy[1].redeliveryPolicy.backOffMultiplier", "at least 1", ">= 1", "0.5"},
		{"backOffMultiplier NaN", entry("{queue: B, redeliveryPolicy: {backOffMultiplier: .nan}}"),
			"destinationPolicy[1].redeliveryPolicy.backOffMultiplier", "at least 1", ">= 1", ""},
		{"backOffMultiplier not a number", entry("{queue: B, redeliveryPolicy: {backOffMultiplier: fast}}"),
			"destinationPolicy[1].redeliveryPolicy.backOffMultiplier", "not a number", "decimal", "fast"},
		{"negative initialRedeliveryDelay", entry("{queue: B, redeliveryPolicy: {initialRedeliveryDelay: -5}}"),
			"destinationPolicy[1].redeliveryPolicy.initialRedeliveryDelay", "must not be negative", "no delay", "-5"},
		{"negative redeliveryDelay", entry("{queue: B, redeliveryPolicy: {redeliveryDelay: -1s}}"),
			"destinationPolicy[1].redeliveryPolicy.redeliveryDelay", "must not be negative", "", ""},
		{"maximumRedeliveryDelay -2", entry("{queue: B, redeliveryPolicy: {maximumRedeliveryDelay: -2}}"),
			"destinationPolicy[1].redeliveryPolicy.maximumRedeliveryDelay", "-1, 0 or positive", "no cap", "-2"},
		{"collisionAvoidanceFactor above 1", entry("{queue: B, redeliveryPolicy: {collisionAvoidanceFactor: 1.5}}"),
			"destinationPolicy[1].redeliveryPolicy.collisionAvoidanceFactor", "from 0 to 1", "e.g. 0.15", "1.5"},
		{"negative collisionAvoidanceFactor", entry("{queue: B, redeliveryPolicy: {collisionAvoidanceFactor: -0.1}}"),
			"destinationPolicy[1].redeliveryPolicy.collisionAvoidanceFactor", "from 0 to 1", "", "-0.1"},

		// deadLetterStrategy
		{"empty individual prefix", entry("{queue: B, deadLetterStrategy: {individual: true, queuePrefix: ''}}"),
			"destinationPolicy[1].deadLetterStrategy.queuePrefix", "must not be empty with individual: true", "non-empty", ""},
		{"empty prefix alias", entry("{queue: B, deadLetterStrategy: {individual: true, prefix: ''}}"),
			"destinationPolicy[1].deadLetterStrategy.prefix", "must not be empty", "non-empty", ""},
		{"wildcard prefix", entry("{queue: B, deadLetterStrategy: {individual: true, topicPrefix: 'DLQ.>'}}"),
			"destinationPolicy[1].deadLetterStrategy.topicPrefix", "wildcard", "without wildcards", "DLQ.>"},
		{"deadLetterStrategy not a mapping", entry("{queue: B, deadLetterStrategy: individual}"),
			"destinationPolicy[1].deadLetterStrategy", "must be a mapping", "individual, prefix, queuePrefix", "individual"},

		// streams
		{"unknown type", entry("{topic: B, type: log}"), "destinationPolicy[1].type", "unknown value", typeAllowed, "log"},
		{"stream on a queue", entry("{queue: B, type: stream}"), "destinationPolicy[1].type", "this is a queue entry", "topic: entry", "stream"},
		{"stream on a tempTopic", entry("{tempTopic: true, type: stream}"), "destinationPolicy[1].type", "this is a tempTopic entry", "topic: entry", "stream"},
		{"stream on a tempQueue", entry("{tempQueue: true, type: stream}"), "destinationPolicy[1].type", "this is a tempQueue entry", "", ""},
		{"partitions 0", entry("{topic: B, type: stream, partitions: 0}"), "destinationPolicy[1].partitions", "0 is out of range", "from 1 to 1024", "0"},
		{"partitions 1025", entry("{topic: B, type: stream, partitions: 1025}"), "destinationPolicy[1].partitions", "out of range", "from 1 to 1024", "1025"},
		{"partitions without stream", entry("{topic: B, partitions: 4}"), "destinationPolicy[1].partitions", "only to streams", "type: stream", "4"},
		{"partitions on a queue", entry("{queue: B, partitions: 4}"), "destinationPolicy[1].partitions", "only to streams", "type: stream", "4"},
		{"retention without stream", entry("{topic: B, type: '', retention: 1h}"), "destinationPolicy[1].retention", "only to streams", "type: stream", "1h"},
		{"retentionBytes without stream", entry("{topic: B, retentionBytes: 1gb}"), "destinationPolicy[1].retentionBytes", "only to streams", "type: stream", "1gb"},
		{"negative retention", entry("{topic: B, type: stream, retention: -1h}"), "destinationPolicy[1].retention", "must not be negative", "", "-1h"},
		{"negative retentionBytes", entry("{topic: B, type: stream, retentionBytes: -1}"), "destinationPolicy[1].retentionBytes", "must not be negative", "", "-1"},
		{"rebalanceTimeout 0", entry("{topic: B, type: stream, rebalanceTimeout: 0s}"), "destinationPolicy[1].rebalanceTimeout", "more than 0", "", "0s"},
		{"rebalanceTimeout without stream", entry("{topic: B, rebalanceTimeout: 5s}"), "destinationPolicy[1].rebalanceTimeout", "only to streams", "type: stream", "5s"},
	})
}

// TestMaxPrefetchLowersDefaults: a maxPrefetch below a default prefetch lowers that
// default; a written prefetch over it is an error (TestPolicyErrors).
func TestMaxPrefetchLowersDefaults(t *testing.T) {
	c, err := Parse([]byte("destinationPolicy:\n  - {topic: \">\", maxPrefetch: 50}\n  - {queue: \">\", prefetch: 0, maxPrefetch: 50}\n"), nil)
	require.NoError(t, err)
	for _, p := range c.DestinationPolicy {
		assert.Equal(t, 50, p.MaxPrefetch)
		assert.Equal(t, 50, p.Prefetch)
		assert.Equal(t, 50, p.DurableTopicPrefetch)
	}
}

func TestPolicyDuplicateDetection(t *testing.T) {
	in := `
destinationPolicy:
  - queue: ORDERS.>
    duplicateDetection: {enabled: false, idCacheSize: 5, window: 10m}
  - queue: ">"
    duplicateDetection: {idCacheSize: 7}
`
	c, err := Parse([]byte(in), nil)
	require.NoError(t, err)
	assert.Equal(t, policy.DuplicateDetection{Enabled: false, IDCacheSize: 5, Window: 10 * time.Minute}, c.DestinationPolicy[0].DuplicateDetection)
	assert.Equal(t, policy.DuplicateDetection{Enabled: true, IDCacheSize: 7}, c.DestinationPolicy[1].DuplicateDetection)

	for _, bad := range []string{"{idCacheSize: 0}", "{window: -1s}"} {
		_, err := Parse([]byte("destinationPolicy:\n  - queue: \">\"\n    duplicateDetection: "+bad+"\n"), nil)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "duplicateDetection", bad)
	}
}
