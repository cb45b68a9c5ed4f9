package loadtest

import (
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShares(t *testing.T) {
	assert.Equal(t, []int{4, 3, 3}, shares(10, 3))
	assert.Equal(t, []int{5, 5}, shares(10, 2))
	assert.Equal(t, []int{1, 1, 0, 0}, shares(2, 4))
}

func TestReceiptInterval(t *testing.T) {
	for s, want := range map[string]int{"none": 0, "every": 1, "1": 1, "50": 50} {
		k, err := receiptInterval(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, k, s)
	}
	for _, s := range []string{"", "0", "-3", "all", "1.5"} {
		_, err := receiptInterval(s)
		assert.ErrorIs(t, err, ErrOptions, s)
	}
}

func TestAckMode(t *testing.T) {
	for s, want := range map[string]stomp.AckMode{"auto": stomp.AckAuto, "client": stomp.AckClient, "client-individual": stomp.AckClientIndividual} {
		m, err := ackMode(s)
		require.NoError(t, err)
		assert.Equal(t, want, m)
	}
	_, err := ackMode("individual")
	assert.ErrorIs(t, err, ErrOptions)
}

func TestDefaults(t *testing.T) {
	now := time.Unix(0, 1234)
	o := Options{}.withDefaults(now)
	assert.Equal(t, "/queue/bench-1234", o.Destination)
	assert.Equal(t, "none", o.Receipts)
	assert.Equal(t, "auto", o.Ack)
	assert.Equal(t, DefaultIdleTimeout, o.IdleTimeout)
	assert.Equal(t, DefaultMaxDuration, o.MaxDuration)
	assert.Equal(t, DefaultProgress, o.Progress)

	o = Options{Topic: true}.withDefaults(now)
	assert.Equal(t, "/topic/bench-1234", o.Destination)

	o = Options{Destination: "/queue/mine", Receipts: "5", Ack: "client"}.withDefaults(now)
	assert.Equal(t, "/queue/mine", o.Destination)
	assert.Equal(t, "5", o.Receipts)
	assert.Equal(t, "client", o.Ack)
}

// TestVirtualTopicOptions: producers send to a topic whose copies consumers
// read from a queue, which is queue accounting.
func TestVirtualTopicOptions(t *testing.T) {
	o := Options{
		Addr: "h:1", Producers: 1, Consumers: 2, Messages: 10,
		Destination:         "/topic/VirtualTopic.Orders",
		ConsumerDestination: "/queue/Consumer.A.VirtualTopic.Orders",
	}.withDefaults(time.Now())
	require.NoError(t, o.validate())
	assert.True(t, strings.HasPrefix(o.subscribed(), "/queue/"))
}
