package broker

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

func topicBroker(t *testing.T, noSpaceWait time.Duration, p policy.Policy) *Broker {
	t.Helper()
	b, err := New(context.Background(), Options{Name: "test", Store: memstore.New(), NoSpaceWait: noSpaceWait,
		Policies: func(kind destinations.Kind, name string) policy.Policy {
			if kind.IsTopic() {
				return p
			}
			return policy.Default(false)
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// trySend sends a non-persistent message and returns Send's error.
func (c *client) trySend(dest, body string) error {
	ns, err := destinations.Parse(dest)
	require.NoError(c.t, err)
	var serr error
	c.do(func() {
		serr = c.conn.Send(context.Background(), ns, &persistence.Message{Body: []byte(body), Priority: 4}, "", func(error) {})
	})
	return serr
}

// A message waiting for two subscribers counts once against the topic's memory, until
// the last of them lets it go; a held producer's Retry closes then.
func TestTopicWaitingMessagesCountOnce(t *testing.T) {
	p := policy.Default(true)
	p.MemoryLimit = 4 << 10
	b := topicBroker(t, -1, p)
	a, c := newClient(t, b, ""), newClient(t, b, "")
	a.subscribe("a", "/topic/t", AckClientIndividual, 1)
	c.subscribe("c", "/topic/t", AckClientIndividual, 1)
	prod := newClient(t, b, "")
	prod.send("/topic/t", "first", false) // takes each subscriber's one credit
	da, dc := a.recv(), c.recv()
	tp := b.dests.Topic("t")
	body := string(make([]byte, 1000))
	require.NoError(t, prod.trySend("/topic/t", body))
	size := topicMemory(tp)
	require.Positive(t, size)
	for i := 0; topicMemory(tp)+size <= int64(p.MemoryLimit); i++ {
		require.NoError(t, prod.trySend("/topic/t", body), "send %d", i)
	}
	assert.EqualValues(t, topicMemory(tp), brokerMemory(b), "counted once, broker-wide too")

	// Full: the producer is told to wait.
	err := prod.trySend("/topic/t", body)
	var be *Error
	require.True(t, errors.As(err, &be), "%v", err)
	require.NotNil(t, be.Retry)
	require.Contains(t, be.Message, "Usage Manager memory limit reached on /topic/t")

	// One subscriber catching up frees nothing: the other still holds every message.
	waiting := topicMemory(tp)
	n := int(waiting / size)
	require.NoError(t, a.ack(da))
	for i := 0; i < n; i++ {
		require.NoError(t, a.ack(a.recv()))
	}
	assert.Equal(t, waiting, topicMemory(tp))
	select {
	case <-be.Retry:
		t.Fatal("Retry closed while the topic is still full")
	default:
	}
	// The other ending releases it all and wakes the producer.
	require.NoError(t, c.unsubscribe("c", ""))
	_ = dc
	assert.Zero(t, topicMemory(tp))
	assert.Zero(t, brokerMemory(b))
	select {
	case <-be.Retry:
	case <-time.After(5 * time.Second):
		t.Fatal("the held producer was not woken")
	}
	require.NoError(t, prod.trySend("/topic/t", body))
}

// With a pending limit the oldest waiting messages are dropped, counted, and their
// memory released; the producer is never held.
func TestTopicPendingLimitDropsOldest(t *testing.T) {
	p := policy.Default(true)
	p.PendingMessageLimit.PrefetchRate.Multiplier = 2 // prefetch 3 → 6 waiting
	b := topicBroker(t, -1, p)
	s := newClient(t, b, "")
	s.subscribe("s", "/topic/t", AckClientIndividual, 3)
	prod := newClient(t, b, "")
	for i := range 100 {
		require.NoError(t, prod.trySend("/topic/t", strconv.Itoa(i)))
	}
	tp := b.dests.Topic("t")
	assert.EqualValues(t, 100-3-6, tp.Stats().Dropped)
	var got []string
	for range 3 + 6 {
		d := s.recv()
		got = append(got, string(d.Msg.Body))
		require.NoError(t, s.ack(d))
	}
	assert.Equal(t, []string{"0", "1", "2", "94", "95", "96", "97", "98", "99"}, got)
	assert.Zero(t, topicMemory(tp))
	assert.EqualValues(t, 100-3-6, tp.Stats().Dropped)
}

// checkSlow aborts a subscriber behind for longer than MaxSlowDuration: it gets an
// ERROR notice, takes no more messages, and its waiting messages are released.
func TestTopicSlowSubscriberAborted(t *testing.T) {
	p := policy.Default(true)
	p.SlowConsumer.Abort = policy.AbortSlowConsumer{Enabled: true, MaxSlowDuration: time.Minute, MaxSlowCount: -1, CheckPeriod: time.Hour}
	b := topicBroker(t, -1, p)
	s := newClient(t, b, "")
	s.subscribe("s", "/topic/t", AckClientIndividual, 1)
	fast := newClient(t, b, "")
	fast.subscribe("f", "/topic/t", AckAuto, 100)
	prod := newClient(t, b, "")
	for i := range 5 {
		require.NoError(t, prod.trySend("/topic/t", strconv.Itoa(i)))
	}
	tp := b.dests.Topic("t")
	require.Positive(t, topicMemory(tp))
	tp.CheckSlow(time.Now()) // not behind long enough
	assert.Zero(t, tp.Stats().Aborted)
	tp.CheckSlow(time.Now().Add(2 * time.Minute))
	assert.EqualValues(t, 1, tp.Stats().Aborted)
	assert.Zero(t, topicMemory(tp))
	var notices []*Error
	s.do(func() { notices = s.conn.TakeNotices() })
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0].Message, "slow consumer: subscription s on /topic/t")
	assert.False(t, notices[0].Fatal)
	require.NoError(t, prod.trySend("/topic/t", "after"))
	for range 6 {
		fast.recv()
	}
	assert.Equal(t, 1, tp.Stats().Consumers, "only the fast subscriber is left")
}

func topicMemory(t *destinations.TopicDest) int64 {
	used, _ := t.MemoryUsed()
	return used
}

func brokerMemory(b *Broker) int64 {
	used, _ := b.flow.Memory().Used()
	return used
}
