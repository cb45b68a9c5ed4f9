package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
)

func TestSlowConsumerStrategies(t *testing.T) {
	c, err := Parse([]byte(`destinationPolicy:
  - topic: A
    pendingMessageLimitStrategy:
      constantPendingMessageLimitStrategy: {limit: 1000}
  - topic: B
    pendingMessageLimitStrategy:
      prefetchRatePendingMessageLimitStrategy: {multiplier: 2.5}
    slowConsumerStrategy:
      abortSlowConsumerStrategy: {}
  - topic: C
    pendingMessageLimitStrategy:
      constantPendingMessageLimitStrategy: {limit: -1}
    slowConsumerStrategy:
      abortSlowConsumerStrategy: {abortConnection: true, maxSlowDuration: -1, maxSlowCount: 3, checkPeriod: 500}
  - topic: D
`), nil)
	require.NoError(t, err)
	p := c.DestinationPolicy
	assert.Equal(t, 1000, p[0].PendingMessageLimit.Max(10))
	assert.True(t, p[0].PendingMessageLimit.Configured())
	assert.False(t, p[0].SlowConsumer.Abort.Enabled)

	assert.Equal(t, 25, p[1].PendingMessageLimit.Max(10))
	assert.Equal(t, policy.AbortSlowConsumer{Enabled: true, MaxSlowDuration: 30 * time.Second, MaxSlowCount: -1,
		CheckPeriod: 30 * time.Second, IgnoreIdleConsumers: true}, p[1].SlowConsumer.Abort, "an empty block takes ActiveMQ's defaults")

	assert.False(t, p[2].PendingMessageLimit.Configured(), "limit -1 is ActiveMQ's none")
	assert.Equal(t, policy.AbortSlowConsumer{Enabled: true, AbortConnection: true, MaxSlowCount: 3,
		CheckPeriod: 500 * time.Millisecond, IgnoreIdleConsumers: true}, p[2].SlowConsumer.Abort)

	assert.False(t, p[3].PendingMessageLimit.Configured(), "nothing is dropped by default")
	assert.Equal(t, -1, p[3].PendingMessageLimit.Max(10))
	assert.False(t, p[3].SlowConsumer.Abort.Enabled)
}

func TestSlowConsumerStrategyErrors(t *testing.T) {
	runErrorCases(t, []errorCase{
		{"on a queue", "destinationPolicy:\n  - queue: A\n    pendingMessageLimitStrategy:\n      constantPendingMessageLimitStrategy: {limit: 5}\n",
			"destinationPolicy[0].pendingMessageLimitStrategy", "non-durable topic subscribers", "topic:", ""},
		{"abort on a queue", "destinationPolicy:\n  - queue: A\n    slowConsumerStrategy:\n      abortSlowConsumerStrategy: {}\n",
			"destinationPolicy[0].slowConsumerStrategy", "non-durable topic subscribers", "topic:", ""},
		{"both strategies", "destinationPolicy:\n  - topic: A\n    pendingMessageLimitStrategy:\n      constantPendingMessageLimitStrategy: {limit: 5}\n      prefetchRatePendingMessageLimitStrategy: {multiplier: 2}\n",
			"destinationPolicy[0].pendingMessageLimitStrategy", "has both strategies", "constantPendingMessageLimitStrategy", ""},
		{"limit below -1", "destinationPolicy:\n  - topic: A\n    pendingMessageLimitStrategy:\n      constantPendingMessageLimitStrategy: {limit: -2}\n",
			"destinationPolicy[0].pendingMessageLimitStrategy.constantPendingMessageLimitStrategy.limit", "out of range", "-1: no limit", "-2"},
		{"negative multiplier", "destinationPolicy:\n  - topic: A\n    pendingMessageLimitStrategy:\n      prefetchRatePendingMessageLimitStrategy: {multiplier: -1}\n",
			"destinationPolicy[0].pendingMessageLimitStrategy.prefetchRatePendingMessageLimitStrategy.multiplier", "must not be negative", "at least 0", "-1"},
		{"never aborts", "destinationPolicy:\n  - topic: A\n    slowConsumerStrategy:\n      abortSlowConsumerStrategy: {maxSlowDuration: 0}\n",
			"destinationPolicy[0].slowConsumerStrategy.abortSlowConsumerStrategy", "would never abort", "maxSlowCount >= 0", ""},
		{"check period 0", "destinationPolicy:\n  - topic: A\n    slowConsumerStrategy:\n      abortSlowConsumerStrategy: {checkPeriod: 0}\n",
			"destinationPolicy[0].slowConsumerStrategy.abortSlowConsumerStrategy.checkPeriod", "more than 0", "", "0"},
		{"unknown strategy", "destinationPolicy:\n  - topic: A\n    slowConsumerStrategy:\n      abortSlowAckConsumerStrategy: {}\n",
			"destinationPolicy[0].slowConsumerStrategy.abortSlowAckConsumerStrategy", "unknown key", "abortSlowConsumerStrategy", ""},
	})
}
