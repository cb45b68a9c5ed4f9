package durable

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// storedOwner is the owner of clientID that env's store holds, "" for none.
func storedOwner(t *testing.T, env *destinations.Env, clientID string) string {
	owner := ""
	require.NoError(t, env.Store.Scan(context.Background(), ownerDest(clientID), 0, 1, func(m *persistence.Message) error {
		owner = string(m.Body)
		return nil
	}))
	return owner
}

// TestOwnerGoesWithLastSubscription: the first user to subscribe under a client-id
// owns it, across a restart; another user may not attach, an administrator
// (AnyOwner) may without claiming it; the owner goes, in the store too, with the
// client-id's last subscription; Free frees it while subscriptions stay. A
// replacement MayReplace refuses leaves the subscription as it was.
func TestOwnerGoesWithLastSubscription(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t, policy.Default(true))
	r := NewRegistry(env, 0)
	topic := destinations.NewTopic(env, "t", policy.Default(true), 0, false)
	a, b := persistence.SubKey{ClientID: "app", Name: "a"}, persistence.SubKey{ClientID: "app", Name: "b"}
	alice := Subscriber{User: "alice"}
	attach := func(key persistence.SubKey, by Subscriber) error {
		c := &destinations.Consumer{ID: "c"}
		d, err := r.Subscribe(ctx, key, topic, nil, c, by)
		if err == nil {
			d.Detach(c)
		}
		return err
	}
	require.NoError(t, attach(a, alice))
	require.NoError(t, attach(b, alice))
	require.Equal(t, "alice", r.Owner("app"))
	require.ErrorIs(t, attach(a, Subscriber{User: "bob"}), ErrOwned)
	require.ErrorIs(t, attach(b, Subscriber{}), ErrOwned, "an anonymous subscriber")
	require.NoError(t, attach(a, Subscriber{AnyOwner: true}))
	require.Equal(t, "alice", r.Owner("app"), "an administrator claims nothing")

	refused := errors.New("no read on t")
	other := destinations.NewTopic(env, "other", policy.Default(true), 0, false)
	_, err := r.Subscribe(ctx, a, other, nil, &destinations.Consumer{ID: "c"}, Subscriber{User: "alice", MayReplace: func(name string) error {
		require.Equal(t, "t", name)
		return refused
	}})
	require.ErrorIs(t, err, refused)
	require.Equal(t, "t", r.Get(a).Topic(), "the refused replacement left it")

	r = recoverInto(t, env)
	require.Equal(t, "alice", r.Owner("app"))
	require.Equal(t, []Owned{{ClientID: "app", User: "alice"}}, r.Owners())
	require.NoError(t, r.Delete(ctx, a, func() {}, nil))
	require.Equal(t, "alice", r.Owner("app"), "one subscription is left")
	require.NoError(t, r.Delete(ctx, b, func() {}, nil))
	require.Empty(t, r.Owner("app"))
	require.Empty(t, storedOwner(t, env, "app"))
	require.Empty(t, recoverInto(t, env).Owner("app"))

	require.NoError(t, attach(a, Subscriber{User: "bob"}), "no one owns it any more")
	user, err := r.Free(ctx, "app")
	require.NoError(t, err)
	require.Equal(t, "bob", user)
	require.Empty(t, storedOwner(t, env, "app"))
	_, err = r.Free(ctx, "app")
	require.ErrorIs(t, err, ErrNotFound)
	require.NotNil(t, r.Get(a), "freeing keeps the subscriptions")
	require.NoError(t, attach(a, alice), "the subscription of a freed client-id is claimed again")
	require.Equal(t, "alice", recoverInto(t, env).Owner("app"))
}
