package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/config"
)

// TestDefaultsAgree: the limits the configuration defaults to are the broker's own
// defaults (config does not import broker, so each keeps a copy; an embedding program
// that leaves an Options field zero gets the same broker as an empty configuration).
func TestDefaultsAgree(t *testing.T) {
	assert.EqualValues(t, scheduler.DefaultMemoryLimit, config.DefaultSchedulerMemoryLimit, "schedulerMemoryLimit")
	assert.EqualValues(t, broker.DefaultMemoryUsage, config.DefaultMemoryUsage, "memoryUsage")
	assert.EqualValues(t, broker.DefaultMaxDestinations, config.DefaultMaxDestinations, "maxDestinations")
	assert.EqualValues(t, broker.DefaultMaxTransactionsPerConnection, config.DefaultMaxTransactionsPerConnection, "maxTransactionsPerConnection")
	assert.EqualValues(t, broker.DefaultMaxSubscriptionsPerConnection, config.DefaultMaxSubscriptionsPerConnection, "maxSubscriptionsPerConnection")
	assert.EqualValues(t, broker.DefaultMaxDurableSubscriptions, config.DefaultMaxDurableSubscriptions, "maxDurableSubscriptions")
}
