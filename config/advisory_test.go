package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdvisorySupport(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        []string
		want       bool
	}{
		{"default on, as ActiveMQ", "", nil, true},
		{"off in the file", "broker: {advisorySupport: false}\n", nil, false},
		{"off from the environment", "", []string{"BROKER_BROKER_ADVISORYSUPPORT=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), tc.env)
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Broker.AdvisorySupport)
		})
	}
	_, err := Parse([]byte("broker: {advisorySupport: sometimes}\n"), nil)
	var cerr *Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, "broker.advisorySupport", cerr.Key)
}

func TestAdvisoryForSlowConsumers(t *testing.T) {
	c, err := Parse([]byte(`destinationPolicy:
  - topic: A
    advisoryForSlowConsumers: true
  - topic: B
  - queue: Q
    advisoryForSlowConsumers: true
`), nil)
	require.NoError(t, err)
	p := c.DestinationPolicy
	assert.True(t, p[0].AdvisoryForSlowConsumers)
	assert.True(t, p[0].Set["advisoryForSlowConsumers"])
	assert.False(t, p[1].AdvisoryForSlowConsumers, "off by default, as in ActiveMQ")
	assert.True(t, p[2].AdvisoryForSlowConsumers, "accepted on a queue entry, as ActiveMQ does")
}
