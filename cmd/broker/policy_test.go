package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
)

// The broker gets the configured redelivery policy and dead-letter strategy whole.
func TestPoliciesCarryRedeliveryAndDeadLetter(t *testing.T) {
	cfg, err := config.Parse([]byte(`destinationPolicy:
  - queue: ORDERS.>
    redeliveryPolicy: {maximumRedeliveries: 2, redeliveryDelay: 3s, useExponentialBackOff: true,
      backOffMultiplier: 2, maximumRedeliveryDelay: 1m, useCollisionAvoidance: true, collisionAvoidanceFactor: 0.3}
    deadLetterStrategy: {individual: true, queuePrefix: DLQ.}
`), nil)
	require.NoError(t, err)
	lookup := destinations.Policies(cfg.DestinationPolicy)

	p := lookup(destinations.Queue, "ORDERS.EU")
	assert.Equal(t, policy.Redelivery{MaximumRedeliveries: 2, InitialRedeliveryDelay: time.Second, RedeliveryDelay: 3 * time.Second,
		UseExponentialBackOff: true, BackOffMultiplier: 2, MaximumRedeliveryDelay: time.Minute,
		UseCollisionAvoidance: true, CollisionAvoidanceFactor: 0.3}, p.Redelivery)
	assert.Equal(t, "DLQ.ORDERS.EU", p.DeadLetter.DLQName(false, "ORDERS.EU"))

	other := lookup(destinations.Queue, "OTHER")
	assert.Equal(t, policy.DefaultRedelivery(), other.Redelivery)
	assert.Equal(t, policy.DefaultDeadLetter(), other.DeadLetter)
}

// TestTempPolicies: tempQueue and tempTopic entries apply to temporary destinations, and
// queue and topic patterns do not (as in ActiveMQ, where ">" matches no temporary
// destination); without a temp entry a temporary destination has the defaults.
func TestTempPolicies(t *testing.T) {
	cfg := parseConfig(t, `destinationPolicy:
  - queue: ">"
    prefetch: 11
  - topic: ">"
    prefetch: 12
  - tempQueue: true
    prefetch: 21
    memoryLimit: 1mb
  - tempTopic: true
    prefetch: 22
`)
	pf := destinations.Policies(cfg.DestinationPolicy)
	assert.Equal(t, 11, pf(destinations.Queue, "a").Prefetch)
	assert.Equal(t, 12, pf(destinations.Topic, "a").Prefetch)
	assert.Equal(t, 21, pf(destinations.TempQueue, "ID:x:c1:a").Prefetch)
	assert.EqualValues(t, 1<<20, pf(destinations.TempQueue, "ID:x:c1:a").MemoryLimit)
	assert.Equal(t, 22, pf(destinations.TempTopic, "ID:x:c1:a").Prefetch)

	pf = destinations.Policies(parseConfig(t, "destinationPolicy:\n  - queue: \">\"\n    prefetch: 11\n").DestinationPolicy)
	assert.Equal(t, policy.Default(false), pf(destinations.TempQueue, "ID:x:c1:a"))
	assert.Equal(t, policy.Default(true), pf(destinations.TempTopic, "ID:x:c1:a"))
}

// TestDestinationGCPeriod: no collector without gcInactiveDestinations; with it, half the
// shortest inactiveTimeoutBeforeGC of the entries that collect, at most 10s.
func TestDestinationGCPeriod(t *testing.T) {
	assert.Negative(t, destinationGCPeriod(nil))
	cfg := parseConfig(t, `destinationPolicy:
  - {queue: ">", inactiveTimeoutBeforeGC: 1s}
  - {topic: ">", gcInactiveDestinations: true, inactiveTimeoutBeforeGC: 4s}
  - {queue: "A.>", gcInactiveDestinations: true}
`)
	assert.Equal(t, 2*time.Second, destinationGCPeriod(cfg.DestinationPolicy))
	cfg = parseConfig(t, "destinationPolicy:\n  - {queue: \">\", gcInactiveDestinations: true}\n")
	assert.Equal(t, 10*time.Second, destinationGCPeriod(cfg.DestinationPolicy))
	p := destinations.Policies(cfg.DestinationPolicy)(destinations.Queue, "x")
	assert.True(t, p.GCInactiveDestinations)
	assert.Equal(t, time.Minute, p.InactiveTimeoutBeforeGC)
}
