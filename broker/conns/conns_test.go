package conns

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fake struct {
	d    Client
	gone chan struct{}
}

func newFake(clientID, user string, limit int, resumes string) *fake {
	f := &fake{gone: make(chan struct{})}
	f.d = Client{ClientID: clientID, User: user, MaxConnections: limit, Remote: "r", Resumes: resumes,
		Kick: func(string) { close(f.gone) }, Gone: f.gone}
	return f
}

func registry(linkStealing bool) *Registry[*fake] {
	return New(linkStealing, func(f *fake) Client { return f.d })
}

// TestClientIDs: a client-id is one live connection's; another is refused unless it
// resumes the same client connection or link stealing is on, and then the holder is
// told to go; a user's limit counts its live connections only.
func TestClientIDs(t *testing.T) {
	ctx, log := context.Background(), slog.New(slog.DiscardHandler)
	r := registry(false)
	a := newFake("app", "u", 0, "conn-1")
	require.NoError(t, r.Add(ctx, a, true, log))
	assert.ErrorIs(t, r.Add(ctx, newFake("app", "u", 0, "conn-2"), true, log), ErrClientIDInUse)
	assert.ErrorIs(t, r.Add(ctx, newFake("app", "other", 0, "conn-1"), true, log), ErrClientIDInUse, "another user")
	b := newFake("app", "u", 0, "conn-1")
	require.NoError(t, r.Add(ctx, b, true, log), "resumes its own connection")
	<-a.gone
	r.Remove(a, func() {})
	n := 0
	r.Each(nil, func(*fake) { n++ })
	assert.Equal(t, 1, n)

	s := registry(true)
	require.NoError(t, s.Add(ctx, newFake("x", "", 0, ""), false, log))
	require.NoError(t, s.Add(ctx, newFake("x", "", 0, ""), false, log), "link stealing")

	l := registry(false)
	one, two := newFake("", "lim", 1, ""), newFake("", "lim", 1, "")
	require.NoError(t, l.Add(ctx, one, true, log))
	assert.ErrorIs(t, l.Add(ctx, two, true, log), ErrTooManyUserConnections)
	l.Remove(one, func() {})
	require.NoError(t, l.Add(ctx, two, true, log))
	open, already := l.Close()
	assert.Equal(t, 1, open)
	assert.False(t, already)
	assert.ErrorIs(t, l.Add(ctx, newFake("", "", 0, ""), true, log), ErrClosed)
}
