package sharedmode

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// engine is an Engine that records what it is asked. Send blocks while gate is set
// until gate is closed; claims are counted by destination and find nothing.
type engine struct {
	mu      sync.Mutex
	gate    chan struct{}
	sendErr error
	sends   [][]string // the Dest of each message, per Send
	claims  map[string]int
	subs    map[string]Subscription // by container
	others  map[string]bool         // containers attached on another node
	removed []string
	notes   chan string
	onTopic func(*persistence.Message)
}

func newEngine() *engine {
	return &engine{claims: map[string]int{}, subs: map[string]Subscription{}, others: map[string]bool{}, notes: make(chan string, 4)}
}

func (e *engine) Send(_ context.Context, msgs []*persistence.Message) error {
	e.mu.Lock()
	gate := e.gate
	e.mu.Unlock()
	if gate != nil {
		<-gate
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var dests []string
	for _, m := range msgs {
		dests = append(dests, m.Dest)
	}
	e.sends = append(e.sends, dests)
	return e.sendErr
}

func (e *engine) Claim(_ context.Context, dest string, _ int) ([]destinations.SharedMessage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.claims[dest]++
	return nil, nil
}

func (e *engine) Ack(context.Context, []destinations.Lease) ([]destinations.Lease, error) {
	return nil, nil
}

func (e *engine) Release(context.Context, []destinations.Lease, bool) ([]destinations.Lease, error) {
	return nil, nil
}

func (e *engine) ReleaseGroups(context.Context, string, []string) error { return nil }
func (e *engine) Notifications() <-chan string                          { return e.notes }
func (e *engine) OnTopic(h func(*persistence.Message))                  { e.onTopic = h }

func (e *engine) SubscribeDurable(_ context.Context, sub Subscription) (bool, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.others[sub.Container] {
		return false, false, ErrInUse
	}
	_, had := e.subs[sub.Container]
	e.subs[sub.Container] = sub
	return !had, false, nil
}

func (e *engine) DetachDurable(context.Context, string) error { return nil }

func (e *engine) UnsubscribeDurable(_ context.Context, container string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.subs[container]; !ok {
		return ErrNotFound
	}
	delete(e.subs, container)
	e.removed = append(e.removed, container)
	return nil
}

func (e *engine) DurableSubscriptions(context.Context) ([]Subscription, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Subscription
	for _, s := range e.subs {
		out = append(out, s)
	}
	return out, nil
}

func (e *engine) claimed(dest string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.claims[dest]
}

func (e *engine) sent() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.sends...)
}

// host holds the node's destinations, made on first use.
type host struct {
	env    *destinations.Env
	mu     sync.Mutex
	queues map[string]*destinations.QueueDest
	topics map[string]*destinations.TopicDest
}

func (h *host) Queue(name string) *destinations.QueueDest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queues[name]
}

func (h *host) Queues() []*destinations.QueueDest {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*destinations.QueueDest
	for _, q := range h.queues {
		out = append(out, q)
	}
	return out
}

func (h *host) Topic(name string) *destinations.TopicDest {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[name]
	if t == nil {
		t = destinations.NewTopic(h.env, name, policy.Default(false), 0, false)
		h.topics[name] = t
	}
	return t
}

func (h *host) Heard(name string) *destinations.TopicDest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.topics[name]
}

// sink counts what it is handed.
type sink struct{ n atomic.Int64 }

func (s *sink) Push(*destinations.Delivery)                        { s.n.Add(1) }
func (s *sink) PushAll(ds []*destinations.Delivery)                { s.n.Add(int64(len(ds))) }
func (s *sink) AbortConsumer(*destinations.Consumer, string, bool) {}
func (s *sink) ConnectionID() string                               { return "c1" }
func (s *sink) count() int                                         { return int(s.n.Load()) }

// newNode is a Node over e whose goroutines end with the test.
func newNode(t *testing.T, e *engine) (*Node, *host) {
	t.Helper()
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); wg.Wait() })
	env := &destinations.Env{
		Log: slog.New(slog.DiscardHandler), Memory: destinations.NewUsage(1 << 30), Space: &destinations.SpaceSignal{},
		Policy:     func(destinations.Kind, string) policy.Policy { return policy.Default(true) },
		Background: &wg, Stopping: func() bool { return false }, Done: done,
	}
	h := &host{env: env, queues: map[string]*destinations.QueueDest{}, topics: map[string]*destinations.TopicDest{}}
	return New(Config{Engine: e, Host: h, Env: env, Log: env.Log}), h
}

// consumer is a client-acknowledging consumer of dest with room for 10.
func consumer(dest destinations.Name, snk *sink) *destinations.Consumer {
	c := &destinations.Consumer{Sink: snk, ID: "s1", Dest: dest, Mode: destinations.AckClientIndividual, Prefetch: 10}
	c.Credit.Store(10)
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // generous: a busy machine under -race
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(time.Millisecond)
	}
}

// TestSplit: queues and topics go through the database; temporary destinations and
// advisory topics stay on the node, and nothing is shared without a Node.
func TestSplit(t *testing.T) {
	n, _ := newNode(t, newEngine())
	q := destinations.Name{Kind: destinations.Queue, Name: "q"}
	tp := destinations.Name{Kind: destinations.Topic, Name: "t"}
	tq := destinations.Name{Kind: destinations.TempQueue, Name: "tq"}
	adv := destinations.Name{Kind: destinations.Topic, Name: "ActiveMQ.Advisory.Queue"}
	shared, rest := n.Split([]destinations.Name{q, tq, tp, adv})
	assert.Equal(t, []destinations.Name{q, tp}, shared)
	assert.Equal(t, []destinations.Name{tq, adv}, rest)
	var none *Node
	shared, rest = none.Split([]destinations.Name{q, tp})
	assert.Empty(t, shared)
	assert.Equal(t, []destinations.Name{q, tp}, rest)
}

// TestSendsWaitingShareOneSend: the SENDs that arrive while one is in the database
// go together in the next Send, in their order, and each hears that Send's result.
func TestSendsWaitingShareOneSend(t *testing.T) {
	e := newEngine()
	e.gate = make(chan struct{})
	n, _ := newNode(t, e)
	results := make(chan error, 4)
	answer := func(err error) { results <- err }
	n.Send(nil, []*persistence.Message{{Dest: "queue://a"}}, answer)
	for _, d := range []string{"queue://b", "queue://c", "queue://d"} {
		n.Send(nil, []*persistence.Message{{Dest: d}}, answer)
	}
	e.mu.Lock()
	e.sendErr = errors.New("database gone")
	close(e.gate)
	e.mu.Unlock()
	for range 4 {
		assert.EqualError(t, <-results, "database gone")
	}
	sends := e.sent()
	// The first Send may have taken "a" alone or with some of the others; never more
	// than two Sends carry the four, and the order is kept.
	require.LessOrEqual(t, len(sends), 2)
	var all []string
	for _, s := range sends {
		all = append(all, s...)
	}
	assert.Equal(t, []string{"queue://a", "queue://b", "queue://c", "queue://d"}, all)
}

// TestTopicMessages: a committed topic SEND reaches the node's subscribers of the
// topic, a failed one does not; another node's topic message reaches them too.
func TestTopicMessages(t *testing.T) {
	e := newEngine()
	n, h := newNode(t, e)
	snk := &sink{}
	tp := destinations.Name{Kind: destinations.Topic, Name: "t"}
	h.Topic("t").Add(consumer(tp, snk))

	done := make(chan error, 1)
	n.Send(nil, []*persistence.Message{{Dest: "topic://t", Seq: 7}, {Dest: "queue://q"}}, func(err error) { done <- err })
	require.NoError(t, <-done)
	assert.Equal(t, 1, snk.count())

	e.mu.Lock()
	e.sendErr = errors.New("database gone")
	e.mu.Unlock()
	n.Send(nil, []*persistence.Message{{Dest: "topic://t"}}, func(err error) { done <- err })
	require.Error(t, <-done)
	assert.Equal(t, 1, snk.count(), "a topic message the database refused is not delivered")

	e.onTopic(&persistence.Message{Dest: "topic://t"})
	e.onTopic(&persistence.Message{Dest: "topic://nobody"})
	assert.Equal(t, 2, snk.count())
	assert.Nil(t, h.Heard("nobody"), "a topic nobody listens to is not made")
}

// TestNotifications: the database's notifications wake the queue or durable
// subscription they name, and "" every one.
func TestNotifications(t *testing.T) {
	e := newEngine()
	n, h := newNode(t, e)
	q := destinations.NewQueue(h.env, "q", policy.Default(true), 0)
	n.Share(q)
	h.queues["q"] = q
	require.True(t, q.AddConsumer(consumer(destinations.Name{Kind: destinations.Queue, Name: "q"}, &sink{})))
	key := persistence.SubKey{ClientID: "c", Name: "d"}
	_, err := n.Subscribe(context.Background(), key, "t", "", consumer(destinations.Name{Kind: destinations.Topic, Name: "t"}, &sink{}))
	require.NoError(t, err)
	dur := container(key)
	// Each claims once as its consumer comes, finds nothing, and waits for a notification.
	waitFor(t, "the first claims", func() bool { return e.claimed("queue://q") == 1 && e.claimed(dur) == 1 })
	n.Start()

	e.notes <- "queue://q"
	waitFor(t, "the queue's claim", func() bool { return e.claimed("queue://q") == 2 })
	e.notes <- dur
	waitFor(t, "the subscription's claim", func() bool { return e.claimed(dur) == 2 })
	e.notes <- ""
	waitFor(t, "both claims", func() bool { return e.claimed("queue://q") == 3 && e.claimed(dur) == 3 })
}

// TestDurableLifecycle: one consumer at a time per subscription, on this node or
// another; deleting asks about the consumer attached here first.
func TestDurableLifecycle(t *testing.T) {
	e := newEngine()
	n, _ := newNode(t, e)
	ctx := context.Background()
	key := persistence.SubKey{ClientID: "c", Name: "d"}
	tp := destinations.Name{Kind: destinations.Topic, Name: "t"}
	c1 := consumer(tp, &sink{})
	d, err := n.Subscribe(ctx, key, "t", "x > 1", c1)
	require.NoError(t, err)
	assert.NotNil(t, d.View())
	_, err = n.Subscribe(ctx, key, "t", "x > 1", consumer(tp, &sink{}))
	assert.ErrorIs(t, err, ErrAttached)
	topic, ok, err := n.TopicOf(ctx, key)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "t", topic)
	stats := n.Stats()
	require.Len(t, stats, 1)
	assert.Equal(t, tp.String(), stats[0].Topic)
	assert.Equal(t, "x > 1", stats[0].Selector)

	refused := errors.New("in use here")
	assert.ErrorIs(t, n.Delete(ctx, key, func(c *destinations.Consumer) error {
		assert.Same(t, c1, c)
		return refused
	}), refused)
	assert.Empty(t, e.removed)
	require.NoError(t, n.Delete(ctx, key, func(c *destinations.Consumer) error {
		d.View().RemoveConsumer(c)
		n.Detach(d, c)
		return nil
	}))
	assert.Equal(t, []string{container(key)}, e.removed)
	assert.ErrorIs(t, n.Delete(ctx, key, nil), ErrNotFound)
	_, ok, err = n.TopicOf(ctx, key)
	require.NoError(t, err)
	assert.False(t, ok)

	other := persistence.SubKey{ClientID: "c", Name: "elsewhere"}
	e.others[container(other)] = true
	_, err = n.Subscribe(ctx, other, "t", "", consumer(tp, &sink{}))
	assert.ErrorIs(t, err, ErrInUse)
}
