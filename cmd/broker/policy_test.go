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
	lookup := policies(cfg.DestinationPolicy)

	p := lookup(destinations.Queue, "ORDERS.EU")
	assert.Equal(t, policy.Redelivery{MaximumRedeliveries: 2, InitialRedeliveryDelay: time.Second, RedeliveryDelay: 3 * time.Second,
		UseExponentialBackOff: true, BackOffMultiplier: 2, MaximumRedeliveryDelay: time.Minute,
		UseCollisionAvoidance: true, CollisionAvoidanceFactor: 0.3}, p.Redelivery)
	assert.Equal(t, "DLQ.ORDERS.EU", p.DeadLetter.DLQName(false, "ORDERS.EU"))

	other := lookup(destinations.Queue, "OTHER")
	assert.Equal(t, policy.DefaultRedelivery(), other.Redelivery)
	assert.Equal(t, policy.DefaultDeadLetter(), other.DeadLetter)
}
