package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The defaults the package documentation shows.
func TestDefault(t *testing.T) {
	q := Default(false)
	assert.Equal(t, Policy{
		Prefetch: 1000, MaxPrefetch: 32767, MemoryLimit: 64 << 20, PrioritizedMessages: true,
		ExpireMessagesPeriod: 30 * time.Second, NackPolicy: NackDLQ,
		Redelivery: DefaultRedelivery(), DeadLetter: DefaultDeadLetter(),
		InactiveTimeoutBeforeGC: time.Minute, DurableTopicPrefetch: 100,
		SlowConsumer: SlowConsumerStrategy{Abort: AbortSlowConsumer{MaxSlowDuration: 30 * time.Second, MaxSlowCount: -1,
			CheckPeriod: 30 * time.Second, IgnoreIdleConsumers: true}},
		DuplicateDetection: DuplicateDetection{Enabled: true, IDCacheSize: 20000},
	}, q)
	assert.False(t, q.IsTopic(), "Default matches nothing")
	assert.False(t, q.IsStream())
	assert.False(t, q.PendingMessageLimit.Configured())
	assert.Equal(t, -1, q.PendingMessageLimit.Max(10))

	topic := Default(true)
	assert.Equal(t, 32767, topic.Prefetch)
	topic.Prefetch = q.Prefetch
	assert.Equal(t, q, topic, "queue and topic defaults differ only in prefetch")
}

// entry completes an entry as a reader of the configuration does: over Default, with
// the written keys.
func entry(t *testing.T, edit func(*Policy), written ...string) (Policy, *Error) {
	t.Helper()
	p := Default(false)
	edit(&p)
	set := map[string]bool{}
	for _, k := range written {
		set[k] = true
	}
	err := p.Complete(set)
	return p, err
}

func TestComplete(t *testing.T) {
	p, err := entry(t, func(p *Policy) { p.Topic = "T.>" }, "topic")
	require.Nil(t, err)
	assert.Equal(t, DefaultTopicPrefetch, p.Prefetch, "a topic entry's prefetch defaults to the topic's")

	p, err = entry(t, func(p *Policy) { p.Topic, p.Type, p.Retention = "S", "STREAM", time.Hour }, "topic", "type", "retention")
	require.Nil(t, err)
	assert.Equal(t, StreamType, p.Type)
	assert.Equal(t, DefaultPartitions, p.Partitions)
	assert.Equal(t, time.Hour, p.Retention)
	assert.Equal(t, DefaultRebalanceTimeout, p.RebalanceTimeout)

	p, err = entry(t, func(p *Policy) {
		p.Queue, p.DeadLetter.Individual, p.DeadLetter.Prefix, p.DeadLetter.TopicPrefix = "Q", true, "X.", "T."
	}, "queue", "deadLetterStrategy.individual", "deadLetterStrategy.prefix", "deadLetterStrategy.topicPrefix")
	require.Nil(t, err)
	assert.Equal(t, "X.", p.DeadLetter.QueuePrefix)
	assert.Equal(t, "T.", p.DeadLetter.TopicPrefix)
	assert.Empty(t, p.DeadLetter.Prefix)
	assert.True(t, p.Set["deadLetterStrategy.queuePrefix"])
	assert.False(t, p.Set["deadLetterStrategy.prefix"])

	p, err = entry(t, func(p *Policy) { p.Topic, p.PendingMessageLimit.Constant.Limit = "T", 0 },
		"topic", "pendingMessageLimitStrategy.constantPendingMessageLimitStrategy.limit", "slowConsumerStrategy.abortSlowConsumerStrategy")
	require.Nil(t, err)
	assert.Equal(t, 0, p.PendingMessageLimit.Max(10), "limit 0: none may wait")
	assert.True(t, p.SlowConsumer.Abort.Enabled)

	_, err = entry(t, func(p *Policy) { p.Queue, p.Redelivery.BackOffMultiplier = "Q", 0.5 }, "queue", "redeliveryPolicy.backOffMultiplier")
	require.NotNil(t, err)
	assert.Equal(t, "redeliveryPolicy.backOffMultiplier", err.Key)

	_, err = entry(t, func(p *Policy) { p.Queue, p.DefaultTimeToLive = "Q", -time.Second }, "queue", "defaultTimeToLive")
	require.NotNil(t, err)
	assert.Equal(t, "defaultTimeToLive", err.Key)
	assert.True(t, err.Duration, "the reader adds its duration syntax")

	_, err = entry(t, func(p *Policy) { p.Queue, p.Topic = "Q", "T" }, "queue", "topic")
	require.NotNil(t, err)
	assert.Equal(t, "", err.Key, "the entry itself")
}

func TestSelect(t *testing.T) {
	entries := []Policy{
		{Queue: ">", Prefetch: 1},
		{Queue: "ORDERS.>", Prefetch: 2},
		{Queue: "ORDERS.*.EU", Prefetch: 3},
		{Queue: "ORDERS.NEW.EU", Prefetch: 4},
		{Queue: "ORDERS.*.EU", Prefetch: 5}, // as specific as an earlier one: the earlier wins
		{Topic: "PRICES.>", Prefetch: 6},
		{TempQueue: true, Prefetch: 7},
	}
	for _, c := range []struct {
		topic, temp bool
		name        string
		want        int
	}{
		{false, false, "OTHER", 1},
		{false, false, "ORDERS.X", 2},
		{false, false, "ORDERS.OLD.EU", 3},
		{false, false, "ORDERS.NEW.EU", 4},
		{true, false, "PRICES.IBM", 6},
		{false, true, "ID:c1:1", 7},
	} {
		assert.Equal(t, c.want, Select(entries, c.topic, c.temp, c.name).Prefetch, "%+v", c)
	}
	assert.Equal(t, Default(true), Select(entries, true, false, "OTHER"), "no topic entry matches")
	assert.Equal(t, Default(true), Select(entries, true, true, "ID:c1:1"), "no tempTopic entry; > matches no temporary destination")
}

// The importer copies these attributes of activemq.xml's elements as they are.
func TestAttributes(t *testing.T) {
	names := func(element string) []string {
		var out []string
		for _, a := range Attributes(element) {
			out = append(out, a.Name)
		}
		return out
	}
	assert.Equal(t, []Attribute{{Name: "memoryLimit", Size: true}}, Attributes("policyEntry")[:1])
	assert.ElementsMatch(t, []string{"memoryLimit", "prioritizedMessages", "expireMessagesPeriod", "allConsumersExclusiveByDefault",
		"gcInactiveDestinations", "inactiveTimeoutBeforeGC", "durableTopicPrefetch", "maxPendingMessages",
		"offlineDurableSubscriberTimeout", "advisoryForSlowConsumers"}, names("policyEntry"))
	assert.Len(t, names("redeliveryPolicy"), 8)
	assert.Equal(t, []string{"processExpired", "processNonPersistent"}, names("sharedDeadLetterStrategy"))
	assert.Contains(t, names("individualDeadLetterStrategy"), "queuePrefix")
	assert.Equal(t, []string{"limit"}, names("constantPendingMessageLimitStrategy"))
	assert.Len(t, names("abortSlowConsumerStrategy"), 5)
	assert.Empty(t, names("broker"))
}
