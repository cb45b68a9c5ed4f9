package durable

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"

	"github.com/activemq-go/broker/persistence"
)

// Client-id owners. The durable subscriptions of a client-id belong to the
// authenticated user that made them: that user owns the client-id, and no other user
// may attach to, replace or (through the broker's CONNECT check) even connect with
// it, also while the owner is offline. The owner is set when a user that claims
// (Subscriber.User) creates or attaches to a subscription of a client-id no one owns,
// and goes with the last subscription of the client-id, or when an administrator
// frees it (Free). A client-id is worth owning only while it holds subscriptions (a
// live connection's client-id is protected by the registry of connections), so the
// owners are at most as many as the subscriptions, which maxDurableSubscriptions
// bounds, and a CONNECT never writes to the store (OpenWire clients make up a new
// client-id for each connection).
//
// An owner is stored as a destination holding one message (sequence 1) whose body is
// the user's name: OwnerPrefix + the client-id. It is written in the batch that
// creates the client-id's first subscription (or alone, for a subscription made
// before owners or by no claiming user), and deleted in the batch that removes its
// last one. Recovery reads one message per owned client-id.

// OwnerPrefix starts the store name of a client-id's owner: OwnerPrefix + client-id.
const OwnerPrefix = "meta://client-id-owner/"

// ErrOwned: a subscriber that may not use a client-id another user owns.
var ErrOwned = errors.New("durable: client-id owned by another user")

// Subscriber is who attaches a consumer to a durable subscription (Registry.Subscribe).
type Subscriber struct {
	// User claims the subscription's client-id when no one owns it, and may use it
	// when User owns it; "" claims nothing (anonymous users, administrators, and
	// everyone while ownership is off).
	User string
	// AnyOwner lets the subscriber use a client-id another user owns (administrators,
	// everyone while ownership is off); otherwise Subscribe fails with ErrOwned.
	AnyOwner bool
	// MayReplace, when not nil, is asked before a subscription on topic (its name) is
	// replaced by one on another topic or with another selector, which deletes it and
	// its backlog: an error refuses it, and Subscribe returns that error.
	MayReplace func(topic string) error
	// Quota is the user a subscription it creates counts against, with that user's
	// quota (plugins.maxDurableSubscriptionsPerUser).
	Quota Quota
}

// ownerDest is the store destination of clientID's owner.
func ownerDest(clientID string) string { return OwnerPrefix + clientID }

// ownerMessage is the stored owner user of clientID.
func ownerMessage(clientID, user string) *persistence.Message {
	return &persistence.Message{Dest: ownerDest(clientID), Seq: 1, ID: "owner", Body: []byte(user), Persistent: true, Priority: 4}
}

// Owner is the user that owns clientID, "" for none.
func (r *Registry) Owner(clientID string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.owners[clientID]
}

// Owners are the owned client-ids and their owners, sorted by client-id.
func (r *Registry) Owners() []Owned {
	r.mu.RLock()
	out := make([]Owned, 0, len(r.owners))
	for id, user := range r.owners {
		out = append(out, Owned{ClientID: id, User: user})
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out
}

// Owned is an owned client-id.
type Owned struct{ ClientID, User string }

// Free frees clientID: it has no owner from now on, until a user claims it again.
// It returns the user that owned it, or fails with ErrNotFound when no one did.
func (r *Registry) Free(ctx context.Context, clientID string) (string, error) {
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	user := r.Owner(clientID)
	if user == "" {
		return "", ErrNotFound
	}
	batch := r.env.Store.Begin()
	batch.Purge(ownerDest(clientID))
	if err := batch.Commit(ctx, persistence.Sync); err != nil {
		return "", err
	}
	r.mu.Lock()
	delete(r.owners, clientID)
	r.mu.Unlock()
	return user, nil
}

// checkOwner is whether by may use key's client-id, and whether it claims it: only
// a user claims, only a client-id no one owns. The caller holds r.lifecycle.
func (r *Registry) checkOwner(key persistence.SubKey, by Subscriber) (claim bool, err error) {
	if key.ClientID == "" {
		return false, nil
	}
	owner := r.Owner(key.ClientID)
	if owner != "" && owner != by.User && !by.AnyOwner {
		return false, ErrOwned
	}
	return owner == "" && by.User != "", nil
}

// claim stores by.User as the owner of key's client-id in batch, which the caller
// commits before calling the returned function, which records it. The caller holds
// r.lifecycle.
func (r *Registry) claim(batch persistence.Batch, key persistence.SubKey, by Subscriber) func() {
	batch.Add(ownerMessage(key.ClientID, by.User))
	return func() {
		r.mu.Lock()
		r.owners[key.ClientID] = by.User
		r.mu.Unlock()
		r.env.Log.Info("client-id claimed by its user", slog.String("clientID", key.ClientID), slog.String("user", by.User))
	}
}

// lastOf reports whether d is the last subscription of its client-id and the
// client-id has an owner: removing d then deletes the stored owner too.
func (r *Registry) lastOf(d *Sub) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	id := d.info.Key.ClientID
	_, owned := r.owners[id]
	return owned && r.perClient[id] == 1
}

// uncountLocked takes a subscription of clientID out of its count; with the last one
// the client-id's owner goes. The caller holds r.mu.
func (r *Registry) uncountLocked(clientID string) {
	if r.perClient[clientID]--; r.perClient[clientID] <= 0 {
		delete(r.perClient, clientID)
		delete(r.owners, clientID)
	}
}

// recoverOwners reads the stored owners among the recovered destinations; those of
// client-ids without subscriptions (left by a crash) are deleted.
func (r *Registry) recoverOwners(ctx context.Context, dests []persistence.DestState) error {
	batch := r.env.Store.Begin()
	for _, ds := range dests {
		if !strings.HasPrefix(ds.Name, OwnerPrefix) || ds.Msgs == 0 {
			continue
		}
		id := ds.Name[len(OwnerPrefix):]
		if r.perClient[id] == 0 {
			batch.Purge(ds.Name)
			continue
		}
		err := r.env.Store.Scan(ctx, ds.Name, 0, 1, func(m *persistence.Message) error {
			r.owners[id] = string(m.Body)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if batch.Len() == 0 {
		batch.Rollback()
		return nil
	}
	return batch.Commit(ctx, persistence.Async)
}
