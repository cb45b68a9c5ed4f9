package durable

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

// Subscribe counts the subscriptions it creates against their Quota user, not
// against another owner's; past it nothing is created, and nothing is replaced either;
// replacing one's own (a new selector) needs no room; reattaching is not creating;
// deleting one makes room.
func TestRegistryOwnerQuota(t *testing.T) {
	ctx := context.Background()
	p := policy.Default(true)
	env := newEnv(t, p)
	r := NewRegistry(env, 0)
	topic := destinations.NewTopic(env, "t", p, 0, false)
	app := Quota{User: "app", Max: 2}
	attach := func(name, sel string, o Quota) error {
		c := &destinations.Consumer{ID: name}
		var s *selector.Selector
		if sel != "" {
			var err error
			s, err = selector.Parse(sel)
			require.NoError(t, err)
		}
		d, err := r.Subscribe(ctx, persistence.SubKey{ClientID: "c", Name: name}, topic, s, c, Subscriber{Quota: o})
		if err == nil {
			d.Detach(c)
		}
		return err
	}
	require.NoError(t, attach("a", "", app))
	require.NoError(t, attach("b", "", app))
	require.ErrorIs(t, attach("c", "", app), ErrOwnerQuota)
	require.NoError(t, attach("o", "", Quota{User: "other", Max: 1}))
	require.NoError(t, attach("free", "", Quota{User: "app"}), "no quota: not counted")
	require.Equal(t, 2, r.Counted("app"))

	require.NoError(t, attach("a", "", app), "reattaching is not creating")
	require.NoError(t, attach("a", "x > 1", app), "replacing its own")
	require.ErrorIs(t, attach("free", "x > 1", app), ErrOwnerQuota, "replacing one that is not its own needs room")
	require.NotNil(t, r.Get(persistence.SubKey{ClientID: "c", Name: "free"}), "a refused replacement removes nothing")
	require.Equal(t, 2, r.Counted("app"))

	require.NoError(t, r.Delete(ctx, persistence.SubKey{ClientID: "c", Name: "b"}, func() {}, func(*destinations.Consumer) error { return nil }))
	require.Equal(t, 1, r.Counted("app"))
	require.NoError(t, attach("c", "", app))
}
