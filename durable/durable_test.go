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
	d, err := r.Subscribe(ctx, key, topic, nil, c1, Subscriber{})
	require.NoError(t, err)
	_, err = r.Subscribe(ctx, key, topic, nil, &destinations.Consumer{ID: "2"}, Subscriber{})
	require.ErrorIs(t, err, ErrInUse, "one consumer at a time")

	d.Detach(c1)
	publish(t, env, topic, &persistence.Message{ID: "p", Persistent: true, Priority: 4})
	publish(t, env, topic, &persistence.Message{ID: "np", Priority: 4})
	n, _ := d.View().Backlog()
	require.EqualValues(t, 1, n, "offline: the persistent message is kept, the other not")
	require.Len(t, r.Stats(), 1)
	require.False(t, r.Stats()[0].Active)

	refuse := func(*destinations.Consumer) error { return ErrInUse }
	_, err = r.Subscribe(ctx, key, topic, nil, c1, Subscriber{})
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
	_, err := r.Subscribe(context.Background(), persistence.SubKey{ClientID: "c", Name: "s"}, topic, nil, &destinations.Consumer{ID: "1"}, Subscriber{})
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
	d, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "s"}, topic, nil, c, Subscriber{})
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
		d, err := r.Subscribe(ctx, key, topic, nil, c, Subscriber{})
		require.NoError(t, err)
		d.Detach(c)
	}
	_, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "third"}, topic, nil, &destinations.Consumer{ID: "3"}, Subscriber{})
	require.ErrorIs(t, err, ErrTooMany)
	require.Equal(t, 2, r.Len())

	c := &destinations.Consumer{ID: "again"}
	d, err := r.Subscribe(ctx, a, topic, nil, c, Subscriber{})
	require.NoError(t, err, "reattaching is not creating")
	d.Detach(c)
	require.NoError(t, r.Delete(ctx, b, func() {}, func(*destinations.Consumer) error { return nil }))
	_, err = r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "third"}, topic, nil, &destinations.Consumer{ID: "3"}, Subscriber{})
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
	d, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: "s"}, topic, nil, c, Subscriber{})
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

// recoverInto recovers what env's store holds into a new registry, as a restart does.
func recoverInto(t *testing.T, env *destinations.Env) *Registry {
	ctx := context.Background()
	rec, err := env.Store.Recover(ctx)
	require.NoError(t, err)
	r := NewRegistry(env, 0)
	topics := map[string]*destinations.TopicDest{}
	require.NoError(t, r.Recover(ctx, rec, func(name string) *destinations.TopicDest {
		if topics[name] == nil {
			topics[name] = destinations.NewTopic(env, name, policy.Default(true), 0, false)
		}
		return topics[name]
	}))
	return r
}

// offlineFor is how long r says the subscription key has been offline.
func offlineFor(r *Registry, key persistence.SubKey) time.Duration {
	for _, st := range r.Stats() {
		if st.ClientID == key.ClientID && st.Name == key.Name {
			return st.OfflineFor
		}
	}
	panic("no subscription " + key.String())
}

// How long a subscription has been offline survives a restart: the time it went
// offline is stored when its consumer detaches, and deleted when one attaches. A
// subscription stored without one (by an earlier version) counts from the recovery that
// found it, which stores it: a second restart counts from there. The backlog is the
// store's count.
func TestOfflineTimeSurvivesRecovery(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t, policy.Default(true))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	env.Now = func() time.Time { return now }
	key := persistence.SubKey{ClientID: "c", Name: "s"}
	r := NewRegistry(env, 0)
	topic := destinations.NewTopic(env, "t", policy.Default(true), 0, false)
	c := &destinations.Consumer{ID: "1"}
	d, err := r.Subscribe(ctx, key, topic, nil, c, Subscriber{})
	require.NoError(t, err)
	d.Detach(c)
	for i := range 3 {
		publish(t, env, topic, &persistence.Message{ID: "p" + string(rune('0'+i)), Persistent: true, Priority: 4})
	}

	now = now.Add(time.Hour)
	st := recoverInto(t, env).Stats()
	require.Len(t, st, 1)
	require.Equal(t, time.Hour, st[0].OfflineFor, "offline since the detach, not since the restart")
	require.Equal(t, 3, st[0].Backlog)

	// Attached again, then the broker crashed (no detach): offline from the next start.
	r = recoverInto(t, env)
	_, err = r.Subscribe(ctx, key, r.Get(key).topic, nil, &destinations.Consumer{ID: "2"}, Subscriber{})
	require.NoError(t, err)
	now = now.Add(time.Hour)
	r = recoverInto(t, env)
	require.Zero(t, offlineFor(r, key), "attached when the store was last written")
	now = now.Add(time.Minute)
	require.Equal(t, time.Minute, offlineFor(recoverInto(t, env), key), "the recovery stored when it found it offline")

	// A subscription stored without a mark, as an earlier version left it.
	old := persistence.SubKey{ClientID: "c", Name: "old"}
	batch := env.Store.Begin()
	batch.AddSub(persistence.SubInfo{Key: old, Dest: topic.Qualified(), Created: now.Add(-48 * time.Hour).UnixMilli()})
	require.NoError(t, batch.Commit(ctx, persistence.Sync))
	require.Zero(t, offlineFor(recoverInto(t, env), old))
	now = now.Add(time.Minute)
	require.Equal(t, time.Minute, offlineFor(recoverInto(t, env), old))

	// Removing a subscription removes its mark.
	r = recoverInto(t, env)
	require.NoError(t, r.Delete(ctx, old, func() {}, nil))
	rec, err := env.Store.Recover(ctx)
	require.NoError(t, err)
	for _, ds := range rec.Destinations {
		if ds.Name == OfflinePrefix+old.String() {
			require.Zero(t, ds.Msgs, "the mark of a removed subscription")
		}
	}
}
