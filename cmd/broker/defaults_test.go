package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/config"
)

// TestDefaultsAgree: the limit the configuration defaults to is the broker's own default
// (an embedding program that leaves the Options field zero gets the same broker as an
// empty configuration). The other limits' defaults are written once, in broker/limits
// and destinations/policy, which config reads.
func TestDefaultsAgree(t *testing.T) {
	assert.EqualValues(t, broker.DefaultMaxDestinations, config.DefaultMaxDestinations, "maxDestinations")
}
