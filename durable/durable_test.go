package durable

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// newEnv is a destinations.Env over a memory store, with the policy p for every
// destination.
func newEnv(t *testing.T, p policy.Policy) *destinations.Env {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	store := memstore.New()
	return &destinations.Env{
		Store: store, Log: slog.New(slog.DiscardHandler), Memory: destinations.NewUsage(1 << 30),
		Space: &destinations.SpaceSignal{}, Policy: func(destinations.Kind, string) policy.Policy { return p },
		Background: &wg, Stopping: func() bool { return false }, Done: make(chan struct{}),
		Commit: func(b persistence.Batch, d persistence.Durability, done func(error)) {
			done(b.Commit(context.Background(), d))
		},
	}
}

// publish routes m through t's durable subscriptions and commits what they store.
func publish(t *testing.T, env *destinations.Env, topic *destinations.TopicDest, m *persistence.Message) {
	batch := env.Store.Begin()
	acc, store := topic.Accept(m)
	if store {
		batch.Add(m)
	}
	err := batch.Commit(context.Background(), persistence.Sync)
	require.NoError(t, err)
	destinations.SettleAll(acc, err)
}

func TestRegistryLifecycle(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t, policy.Default(true))
	r := NewRegistry(env, 0)
	topic := destinations.NewTopic(env, "t", policy.Default(true), 0, false)
	key := persistence.SubKey{ClientID: "c", Name: "s"}

	c1 := &destinations.Consumer{ID: "1"}
	d, err := r.Subscribe(ctx, key, topic, nil, c1)
	require.NoError(t, err)
	_, err = r.Subscribe(ctx, key, topic, nil, &destinations.Consumer{ID: "2"})
	require.ErrorIs(t, err, ErrInUse, "one consumer at a time")

	d.Detach(c1)
	publish(t, env, topic, &persistence.Message{ID: "p", Persistent: true, Priority: 4})
	publish(t, env, topic, &persistence.Message{ID: "np", Priority: 4})
	n, _ := d.View().Backlog()
	require.EqualValues(t, 1, n, "offline: the persistent message is kept, the other not")
	require.Len(t, r.Stats(), 1)
	require.False(t, r.Stats()[0].Active)

	refuse := func(*destinations.Consumer) error { return ErrInUse }
	_, err = r.Subscribe(ctx, key, topic, nil, c1)
	require.NoError(t, err, "reattached")
	require.ErrorIs(t, r.Delete(ctx, key, func() {}, refuse), ErrInUse)
	d.Detach(c1)
	require.NoError(t, r.Delete(ctx, key, func() {}, refuse))
	require.ErrorIs(t, r.Delete(ctx, key, func() {}, refuse), ErrNotFound)
	require.Empty(t, r.All())
}

// listingHandler calls list when the registry logs a subscription's creation, the
// moment other goroutines (an operator's listing) can already see it.
type listingHandler struct {
	slog.Handler
	list func()
}

func (listingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h listingHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == "durable subscription created" {
		h.list()
	}
	return nil
}

// A new subscription is listed as active from the moment it can be listed at all: the
// operator never sees the creator's subscription offline (CI once did, through the
// admin API, while the SUBSCRIBE was being answered).
func TestNewSubscriptionListedActive(t *testing.T) {
	env := newEnv(t, policy.Default(true))
	r := NewRegistry(env, 0)
	var seen []Stats
	env.Log = slog.New(listingHandler{Handler: slog.DiscardHandler, list: func() { seen = r.Stats() }})
	topic := destinations.NewTopic(env, "t", policy.Default(true), 0, false)
	_, err := r.Subscribe(context.Background(), persistence.SubKey{ClientID: "c", Name: "s"}, topic, nil, &destinations.Consumer{ID: "1"})
	require.NoError(t, err)
	require.Len(t, seen, 1, "listed when its creation was logged")
	require.True(t, seen[0].Active)
	require.Zero(t, seen[0].OfflineFor)
}

func TestOfflinePendingLimit(t *testing.T) {
	ctx := context.Background()
	p := policy.Default(true)
	p.MaxPendingMessages = 2
	env := newEnv(t, p)
	r := NewRegistry(env, 0)
	topic := destinations.NewTopic(env, "t", p, 0, false)
	c := &destinations.Consumer{ID: "1"}
	d, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "s"}, topic, nil, c)
	require.NoError(t, err)
	d.Detach(c)
	for range 5 {
		publish(t, env, topic, &persistence.Message{ID: "m", Persistent: true, Priority: 4})
	}
	n, _ := d.View().Backlog()
	require.EqualValues(t, 2, n)
	require.EqualValues(t, 3, r.Stats()[0].Dropped)
}

// Subscribe creates subscriptions while fewer than the registry's maximum exist;
// attaching to an existing one is never refused, and deleting one makes room.
func TestRegistryMaximum(t *testing.T) {
	ctx := context.Background()
	p := policy.Default(true)
	env := newEnv(t, p)
	r := NewRegistry(env, 2)
	topic := destinations.NewTopic(env, "t", p, 0, false)
	a, b := persistence.SubKey{ClientID: "c", Name: "a"}, persistence.SubKey{ClientID: "c", Name: "b"}
	for _, key := range []persistence.SubKey{a, b} {
		c := &destinations.Consumer{ID: key.Name}
		d, err := r.Subscribe(ctx, key, topic, nil, c)
		require.NoError(t, err)
		d.Detach(c)
	}
	_, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "third"}, topic, nil, &destinations.Consumer{ID: "3"})
	require.ErrorIs(t, err, ErrTooMany)
	require.Equal(t, 2, r.Len())

	c := &destinations.Consumer{ID: "again"}
	d, err := r.Subscribe(ctx, a, topic, nil, c)
	require.NoError(t, err, "reattaching is not creating")
	d.Detach(c)
	require.NoError(t, r.Delete(ctx, b, func() {}, func(*destinations.Consumer) error { return nil }))
	_, err = r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "third"}, topic, nil, &destinations.Consumer{ID: "3"})
	require.NoError(t, err)
}

// The registry keeps time by its environment's clock: a subscription offline past its
// policy's offline timeout by that clock is removed, one not yet is kept.
func TestExpireOfflineByEnvironmentClock(t *testing.T) {
	ctx := context.Background()
	p := policy.Default(true)
	p.OfflineDurableSubscriberTimeout = time.Hour
	env := newEnv(t, p)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	env.Now = func() time.Time { return now }
	r := NewRegistry(env, 0)
	topic := destinations.NewTopic(env, "t", p, 0, false)
	c := &destinations.Consumer{ID: "1"}
	d, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "s"}, topic, nil, c)
	require.NoError(t, err)
	d.Detach(c)
	now = now.Add(59 * time.Minute)
	r.ExpireOffline(ctx)
	require.Equal(t, 1, r.Len())
	require.Equal(t, 59*time.Minute, r.Stats()[0].OfflineFor)
	now = now.Add(2 * time.Minute)
	r.ExpireOffline(ctx)
	require.Zero(t, r.Len())
}
