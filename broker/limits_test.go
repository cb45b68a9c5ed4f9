package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// newPolicyBroker starts a broker whose every destination has the policy edit makes of
// the default.
func newLimitsBroker(t testing.TB, o Options, edit func(kind destinations.Kind, name string, p *Policy)) *Broker {
	t.Helper()
	if o.Store == nil {
		o.Store = memstore.New()
	}
	if edit != nil {
		o.Policies = func(kind destinations.Kind, name string) Policy {
			p := DefaultPolicy(kind.IsTopic())
			edit(kind, name, &p)
			return p
		}
	}
	b, err := New(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// TestMemoryLimitZeroIsNoDestinationLimit: a policy memoryLimit of 0 means the
// destination has no limit of its own (only memoryUsage applies): non-persistent
// messages are accepted and persistent ones stay in memory instead of being paged.
func TestMemoryLimitZeroIsNoDestinationLimit(t *testing.T) {
	b := newLimitsBroker(t, Options{MemoryUsage: 64 << 20}, func(_ destinations.Kind, _ string, p *Policy) {
		p.MemoryLimit = 0
	})
	p := newClient(t, b, "")
	for i := 0; i < 10; i++ {
		p.send("/queue/nolimit", "non-persistent", false)
		p.send("/queue/nolimit", "persistent", true)
	}
	st, ok := b.QueueStats("nolimit")
	require.True(t, ok)
	assert.Equal(t, 20, st.Pending)
	q := b.queues["nolimit"]
	q.mu.Lock()
	paged := q.paged
	q.mu.Unlock()
	assert.False(t, paged, "persistent messages were paged out under a limit of 0")
	assert.Positive(t, st.MemoryBytes)
}

// TestTempDestinationPolicies: temporary destinations take the policy of their own kind
// (tempQueue / tempTopic entries), not that of the queue or topic patterns.
func TestTempDestinationPolicies(t *testing.T) {
	b := newLimitsBroker(t, Options{}, func(kind destinations.Kind, _ string, p *Policy) {
		switch kind {
		case destinations.TempQueue:
			p.Prefetch, p.MemoryLimit = 7, 1<<20
		case destinations.TempTopic:
			p.Prefetch = 9
		}
	})
	c := newClient(t, b, "")
	var subs []*Subscription
	for _, dest := range []string{"/temp-queue/r", "/temp-topic/r", "/queue/q", "/topic/t"} {
		n, err := destinations.ParseOne(dest)
		require.NoError(t, err)
		c.do(func() {
			s, err := c.conn.Subscribe(context.Background(), SubscribeRequest{ID: dest, Dest: n})
			require.NoError(t, err)
			subs = append(subs, s)
		})
	}
	assert.EqualValues(t, 7, subs[0].Prefetch)
	assert.EqualValues(t, 9, subs[1].Prefetch)
	assert.EqualValues(t, DefaultQueuePrefetch, subs[2].Prefetch)
	assert.EqualValues(t, DefaultTopicPrefetch, subs[3].Prefetch)
	assert.EqualValues(t, 1<<20, subs[0].q.memLimit)
	assert.EqualValues(t, 1<<20, subs[0].q.policy.MemoryLimit)
}

// TestExpireMessagesPeriodPerDestination: each queue is swept for expired messages on its
// own policy's period, and a period of 0 means that queue is never swept (its expired
// messages are dropped only when a consumer would get them).
func TestExpireMessagesPeriodPerDestination(t *testing.T) {
	b := newLimitsBroker(t, Options{ExpirySweep: 10 * time.Millisecond}, func(_ destinations.Kind, name string, p *Policy) {
		switch name {
		case "fast":
			p.ExpirePeriod = 30 * time.Millisecond
		case "never":
			p.ExpirePeriod = 0
		}
	})
	c := newClient(t, b, "")
	past := time.Now().Add(-time.Second).UnixMilli()
	for _, q := range []string{"fast", "never"} {
		n, err := destinations.Parse("/queue/" + q)
		require.NoError(t, err)
		res := make(chan error, 1)
		c.do(func() {
			require.NoError(t, c.conn.Send(context.Background(), n, &persistence.Message{Body: []byte("x"), Priority: 4, Expires: past}, "", func(err error) { res <- err }))
		})
		require.NoError(t, <-res)
	}
	pending := func(q string) int { st, _ := b.QueueStats(q); return st.Pending }
	eventually(t, func() bool { return pending("fast") == 0 })
	// Two more sweeper passes have looked at /queue/never.
	start := b.expirySweeps.Load()
	eventually(t, func() bool { return b.expirySweeps.Load() >= start+2 })
	assert.Equal(t, 1, pending("never"), "a queue with expireMessagesPeriod 0 was swept")
}

// TestTopicTimeToLiveAndExpiry: a topic's defaultTimeToLive gives its messages an
// expiry (also the durable subscriptions' stored copies), and a topic message that has
// expired before it reaches the subscriber is not delivered; its prefetch credit goes to
// the next message.
func TestTopicTimeToLiveAndExpiry(t *testing.T) {
	const ttl = time.Hour
	b := newLimitsBroker(t, Options{}, func(kind destinations.Kind, name string, p *Policy) {
		if kind == destinations.Topic && name == "ttl" {
			p.DefaultTimeToLive = ttl
		}
	})
	c := newClient(t, b, "")
	c.subscribe("s", "/topic/ttl", AckAuto, 0)
	before := time.Now()
	c.send("/topic/ttl", "a", false)
	d := c.recv()
	assert.GreaterOrEqual(t, d.Msg.Expires, before.Add(ttl).UnixMilli())
	assert.LessOrEqual(t, d.Msg.Expires, time.Now().Add(ttl).UnixMilli())

	// A composite send gives each destination its own policy's expiry.
	c.subscribe("q", "/queue/no-ttl", AckAuto, 0)
	c.send("/topic/ttl,/queue/no-ttl", "b", false)
	for i := 0; i < 2; i++ {
		d := c.recv()
		if d.Destination == "/queue/no-ttl" {
			assert.Zero(t, d.Msg.Expires, "the queue got the topic's expiry")
		} else {
			assert.NotZero(t, d.Msg.Expires)
		}
	}

	// Messages expiring while they wait for a slow subscriber are not delivered.
	slow := newClient(t, b, "")
	slow.subscribe("slow", "/topic/exp", AckClientIndividual, 1)
	p := newClient(t, b, "")
	soon := time.Now().Add(50 * time.Millisecond).UnixMilli()
	for _, body := range []string{"first", "expiring-1", "expiring-2"} {
		n, err := destinations.Parse("/topic/exp")
		require.NoError(t, err)
		p.do(func() {
			require.NoError(t, p.conn.Send(context.Background(), n, &persistence.Message{Body: []byte(body), Priority: 4, Expires: soon}, "", func(error) {}))
		})
	}
	first := slow.recv()
	require.Equal(t, "first", string(first.Msg.Body))
	eventually(t, func() bool { return time.Now().UnixMilli() > soon })
	p.send("/topic/exp", "fresh", false)
	require.NoError(t, slow.ack(first))
	assert.Equal(t, "fresh", string(slow.recv().Msg.Body), "an expired topic message was delivered")
}
