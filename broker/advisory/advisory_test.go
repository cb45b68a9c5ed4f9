package advisory

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
)

// host is a Host that numbers message ids and lets every subscriber read everything.
type host struct {
	mu sync.Mutex
	n  int
}

func (h *host) NewMessageID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	return "ID:test-" + strconv.Itoa(h.n)
}

func (h *host) MayRead(*destinations.Consumer, string) bool { return true }

// sink is a connection that keeps what it is handed and never gives credit back.
type sink struct {
	mu  sync.Mutex
	got []*destinations.Delivery
}

func (s *sink) Push(d *destinations.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, d)
}

func (s *sink) PushAll(ds []*destinations.Delivery) {
	for _, d := range ds {
		s.Push(d)
	}
}

func (s *sink) AbortConsumer(*destinations.Consumer, string, bool) {}
func (s *sink) ConnectionID() string                               { return "c1" }

// topics is the destination of each delivery, in order.
func (s *sink) topics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.got {
		out = append(out, d.Destination)
	}
	return out
}

func newAdvisories(t *testing.T) *Advisories {
	t.Helper()
	env := &destinations.Env{Log: slog.New(slog.DiscardHandler), Memory: destinations.NewUsage(1 << 30), Space: &destinations.SpaceSignal{}}
	a := New(Config{Name: "test", ID: "ID:test-1", Env: env, Host: &host{}})
	env.Advise = a
	return a
}

// subscriber is a plain subscription of dest on connection c1 whose deliveries go to
// snk.
func subscriber(t *testing.T, snk *sink, id, dest string, prefetch int32) Consumer {
	t.Helper()
	n, err := destinations.ParseOne(dest)
	require.NoError(t, err)
	c := &destinations.Consumer{Sink: snk, ID: id, Dest: n, Prefetch: prefetch}
	c.Credit.Store(prefetch)
	return Consumer{Consumer: c, Conn: "c1", Value: 1, Plain: true}
}

func TestHearsAdvisories(t *testing.T) {
	for _, tc := range []struct {
		dest  string
		plain bool
		want  bool
	}{
		{"/topic/ActiveMQ.Advisory.Connection", true, true},
		{"/topic/ActiveMQ.Advisory.Connection", false, false}, // a durable subscription's or a stream's
		{"/topic/ActiveMQ.Advisory.Consumer.Queue.>", true, true},
		{"/topic/>", true, true},
		{"/topic/*.>", true, true},
		{"/topic/ActiveMQ.>", true, true},
		{"/topic/*.Advisory.Queue", true, true},
		{"/topic/*.*.*", true, true},
		{"/topic/*.*", true, false}, // advisory topics have three elements or more
		{"/topic/ActiveMQ.Advisory", true, false},
		{"/topic/ORDERS.>", true, false},
		{"/topic/ActiveMQ.DLQ", true, false},
		{"/queue/ActiveMQ.Advisory.Queue", true, false},
		{"/queue/>", true, false},
	} {
		n, err := destinations.ParseOne(tc.dest)
		require.NoError(t, err)
		s := &Consumer{Consumer: &destinations.Consumer{Dest: n}, Plain: tc.plain}
		assert.Equal(t, tc.want, hearsAdvisories(s), "%s plain %v", tc.dest, tc.plain)
	}
}

func TestJSONProperties(t *testing.T) {
	for _, tc := range []struct {
		props jsonProperties
		want  string
	}{
		{jsonProperties{{"a", "1"}}, `[{"entry":{"string":["a","1"]}}]`},
		{jsonProperties{{"a", "1"}, {"b", "2"}}, `[{"entry":[{"string":["a","1"]},{"string":["b","2"]}]}]`},
	} {
		b, err := json.Marshal(tc.props)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(b))
	}
}

// TestReplayAndForget: a new subscription of the consumers' advisories hears of the
// consumers there are, not of itself; what ends is forgotten, and the consumers of
// advisory topics are never kept.
func TestReplayAndForget(t *testing.T) {
	a := newAdvisories(t)
	var app, mon sink
	a.Connected(Conn{ID: "c1"})
	q := subscriber(t, &app, "q", "/queue/ORDERS", 10)
	a.Subscribed(q)
	cons := subscriber(t, &mon, "cons", "/topic/ActiveMQ.Advisory.Consumer.>", 10)
	a.Subscribed(cons)
	assert.Equal(t, []string{"/topic/ActiveMQ.Advisory.Consumer.Queue.ORDERS"}, mon.topics(), "the replay: the queue's consumer")

	a.Unsubscribed(q.Consumer)
	assert.Equal(t, []string{"/topic/ActiveMQ.Advisory.Consumer.Queue.ORDERS", "/topic/ActiveMQ.Advisory.Consumer.Queue.ORDERS"}, mon.topics(),
		"and its removal")
	var body map[string]json.RawMessage
	mon.mu.Lock()
	require.NoError(t, json.Unmarshal(mon.got[1].Msg.Body, &body))
	mon.mu.Unlock()
	assert.Contains(t, body, "RemoveInfo")

	a.Unsubscribed(cons.Consumer)
	a.Disconnected("c1")
	a.mu.Lock()
	defer a.mu.Unlock()
	assert.Empty(t, a.consumers, "consumers of advisory topics are not kept, and the others went")
	assert.Empty(t, a.conns)
	assert.Empty(t, a.subs)
	assert.Zero(t, a.listeners.Load())
}

// TestBacklogBounded: a subscriber of advisories that never reads keeps at most
// maxBacklog of them waiting; the others are dropped for it.
func TestBacklogBounded(t *testing.T) {
	a := newAdvisories(t)
	var idle sink
	s := subscriber(t, &idle, "idle", "/topic/ActiveMQ.Advisory.Connection", 1)
	a.Subscribed(s)
	for i := range maxBacklog/2 + 10 {
		id := "c" + strconv.Itoa(i)
		a.Connected(Conn{ID: id})
		a.Disconnected(id)
	}
	assert.Equal(t, maxBacklog, s.Waiting(), "one delivered (its prefetch), the backlog full, the rest dropped")
	assert.Len(t, idle.topics(), 1)
}

// TestSlowConsumerOfOthersNotAnnounced: a slow subscriber is announced once it is a
// subscription taken in, and a consumer no client subscribed is not.
func TestSlowConsumerOfOthersNotAnnounced(t *testing.T) {
	a := newAdvisories(t)
	var app, mon sink
	a.Subscribed(subscriber(t, &mon, "slow", "/topic/ActiveMQ.Advisory.SlowConsumer.>", 10))
	topic := destinations.NewTopic(a.env, "PRICES", policy.Default(true), 0, false)
	other := &destinations.Consumer{Sink: &app, Dest: destinations.Name{Kind: destinations.Topic, Name: "PRICES"}}
	a.SlowConsumer(topic, other)
	assert.Empty(t, mon.topics())

	sub := subscriber(t, &app, "p", "/topic/PRICES", 1)
	a.Subscribed(sub)
	a.SlowConsumer(topic, sub.Consumer)
	require.Equal(t, []string{"/topic/ActiveMQ.Advisory.SlowConsumer.Topic.PRICES"}, mon.topics())
	mon.mu.Lock()
	defer mon.mu.Unlock()
	id, _ := mon.got[0].Msg.Headers.Get("consumerId")
	assert.Equal(t, "c1:-1:1", id)
}
