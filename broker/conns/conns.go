// Package conns is the registry of the broker's live connections: one connection per
// client-id (unless a newer one steals it, or resumes its own connection), the
// connections per user with a connection limit, and the broker's closing, after which
// none is admitted. It knows a connection only through the Client it is described by;
// package broker holds one Registry of its connections.
package conns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations"
)

var (
	// ErrClientIDInUse: a connection with a client-id another live connection holds.
	ErrClientIDInUse = errors.New("broker: client-id already connected")
	// ErrTooManyUserConnections: a connection past its user's maxConnections.
	ErrTooManyUserConnections = errors.New("broker: too many connections for this user")
	// ErrClosed: the broker is shutting down.
	ErrClosed = destinations.ErrClosed
)

// Client is what the registry knows of a connection.
type Client struct {
	ClientID string
	// User is the connection's user, and MaxConnections that user's limit (0: none).
	User           string
	MaxConnections int
	Remote         string
	// Resumes names the client's own connection, which it opens again after a network
	// failure (see broker.ConnectInfo.Resumes).
	Resumes string
	// Kick tells the connection to go; Gone is closed once it has.
	Kick func(reason string)
	Gone <-chan struct{}
}

// Registry holds the live connections C, each described by Describe. Its mu is taken
// with nothing else held.
type Registry[C comparable] struct {
	linkStealing bool // allowLinkStealing
	describe     func(C) Client

	mu        sync.RWMutex
	clientIDs map[string]C
	all       map[C]struct{}
	userConns map[string]int // live connections per user with a connection limit
	closed    bool
}

// New returns an empty registry; linkStealing lets a connection with the client-id of
// a live one replace it.
func New[C comparable](linkStealing bool, describe func(C) Client) *Registry[C] {
	return &Registry[C]{linkStealing: linkStealing, describe: describe,
		clientIDs: map[string]C{}, all: map[C]struct{}{}, userConns: map[string]int{}}
}

// Add registers c, a new connection, under its client-id: a live connection holding
// that client-id is refused (or, with link stealing or when c resumes it, told to go,
// and waited for), as is one of another user when users are authenticated.
func (r *Registry[C]) Add(ctx context.Context, c C, authenticating bool, log *slog.Logger) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &destinations.Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
	}
	d := r.describe(c)
	if id := d.ClientID; id != "" {
		if old, taken := r.clientIDs[id]; taken {
			od := r.describe(old)
			if authenticating && od.User != d.User {
				return &destinations.Error{Message: "Client: " + id + " is already connected as another user", Fatal: true, Err: ErrClientIDInUse}
			}
			resumes := d.Resumes != "" && d.Resumes == od.Resumes
			if !r.linkStealing && !resumes {
				return &destinations.Error{Message: "Client: " + id + " already connected from " + od.Remote +
					" (a dead connection is dropped once its heart-beats stop; allowLinkStealing: true lets a new connection take over)",
					Fatal: true, Err: ErrClientIDInUse}
			}
			// The old connection is told to go, and its durable subscriptions are free
			// once it has.
			r.mu.Unlock()
			od.Kick("client-id " + id + " was taken over by a newer connection")
			log.Info("client-id taken over by a new connection", slog.String("clientID", id),
				slog.String("old", od.Remote), slog.String("new", d.Remote))
			select {
			case <-od.Gone:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
			r.mu.Lock()
		}
	}
	if err := r.admitUserLocked(d); err != nil {
		return err
	}
	if d.ClientID != "" {
		r.clientIDs[d.ClientID] = c
	}
	r.all[c] = struct{}{}
	return nil
}

// AddInternal registers the broker's own connection c (no client-id), counted against
// its user's limit.
func (r *Registry[C]) AddInternal(c C) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &destinations.Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
	}
	if err := r.admitUserLocked(r.describe(c)); err != nil {
		return err
	}
	r.all[c] = struct{}{}
	return nil
}

// admitUserLocked counts a new connection of d's user against its maxConnections.
// The caller holds r.mu.
func (r *Registry[C]) admitUserLocked(d Client) error {
	if d.MaxConnections <= 0 || d.User == "" {
		return nil
	}
	if n := r.userConns[d.User]; n >= d.MaxConnections {
		return &destinations.Error{Message: fmt.Sprintf("user %s reached its quota of %d connections (plugins.maxConnectionsPerUser or its own maxConnections): close one of its connections first",
			d.User, d.MaxConnections), Fatal: true, Err: ErrTooManyUserConnections}
	}
	r.userConns[d.User]++
	return nil
}

// Remove forgets c, which closed; then, still holding the registry's lock, it calls
// gone (which moves c's counts to the closed connections', so that Each never sees
// them twice).
func (r *Registry[C]) Remove(c C, gone func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.describe(c)
	if d.ClientID != "" && r.clientIDs[d.ClientID] == c {
		delete(r.clientIDs, d.ClientID)
	}
	if d.MaxConnections > 0 && d.User != "" {
		if r.userConns[d.User]--; r.userConns[d.User] <= 0 {
			delete(r.userConns, d.User)
		}
	}
	delete(r.all, c)
	gone()
}

// Close refuses new connections from now on; it returns how many are open, and true if
// it was closed already.
func (r *Registry[C]) Close() (open int, already bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, true
	}
	r.closed = true
	return len(r.all), false
}

// Each calls first (if not nil), then f for every live connection, holding the
// registry's read lock: what first reads of the closed connections (see Remove) and f
// of the live ones count each connection once.
func (r *Registry[C]) Each(first func(), f func(C)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if first != nil {
		first()
	}
	for c := range r.all {
		f(c)
	}
}
