// Package durable keeps durable topic subscriptions. A durable subscription is
// identified by the client-id of its owner and its name (persistence.SubKey). Its
// messages are the topic's messages: a persistent message is stored once, with the list
// of durable subscriptions that still owe it an acknowledgement, and each subscription
// has a view of the topic — a destinations.QueueDest of its own whose entries point at
// those single copies — that dispatches, pages from the store (ScanSub), redelivers and
// acknowledges (AckSub) exactly as a queue does. The stored copy is deleted once every
// subscription has acknowledged it.
//
// While its consumer is away a subscription keeps every matching persistent message,
// within its policy's offline limits (maxPendingMessages, maxPendingBytes);
// non-persistent messages reach it only while it is active (as in ActiveMQ). A
// subscription has at most one consumer attached at a time; one offline for longer than
// its policy's offlineDurableSubscriberTimeout is removed by the sweeper.
//
// The topic does not know this package: the registry installs, under the topic's
// publish lock, a destinations.DurableRouter holding the topic's subscriptions.
//
// # Lock order
//
// Registry.lifecycle (creating, attaching, replacing, deleting and expiring
// subscriptions) is taken first, before the broker's registry lock; then a topic's
// publish lock (destinations.TopicDest's pubMu), then a subscription's mu, then its
// view's lock. Publishers read whether a subscription is attached with their topic's
// publish lock held. Registry.mu guards only the map of subscriptions: nothing is taken
// while it is held.
package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

var (
	// ErrInUse: a consumer is attached to the durable subscription.
	ErrInUse = errors.New("durable: consumer in use")
	// ErrNotFound: no durable subscription has the key.
	ErrNotFound = errors.New("durable: no such subscription")
	// ErrTooMany: creating the subscription would pass the registry's maximum.
	ErrTooMany = errors.New("durable: too many subscriptions")
	// ErrOwnerQuota: creating the subscription would pass its owner's quota.
	ErrOwnerQuota = errors.New("durable: the user's quota of subscriptions is reached")
)

// Quota is the user a subscription counts against while it exists, and that user's
// quota of them (0: none; User "": counted against no one). Those recovered from the
// store count against no one.
type Quota struct {
	User string
	Max  int
}

// Sub is one durable subscription.
type Sub struct {
	countedTo string // the user it counts against (Quota), "" none
	info      persistence.SubInfo
	sel       *selector.Selector
	topic     *destinations.TopicDest
	view      *destinations.QueueDest
	clock     func() time.Time // the registry's environment's

	mu           sync.Mutex
	active       *destinations.Consumer // guarded by mu; nil while offline
	offlineSince time.Time              // guarded by mu

	// rec serialises the writes of the offline mark (offline.go): detaching writes it,
	// attaching deletes it, in the order they happen. offlineStored, guarded by rec,
	// says that the store holds one.
	rec           sync.Mutex
	offlineStored bool

	dropped    atomic.Int64 // messages not kept because of the offline pending limits
	dropLogged time.Time    // guarded by the topic's publish lock
}

// Key is the subscription's key.
func (d *Sub) Key() persistence.SubKey { return d.info.Key }

// Topic is the name of the subscription's topic.
func (d *Sub) Topic() string { return d.topic.Name() }

// View is the queue through which the subscription reads its topic.
func (d *Sub) View() *destinations.QueueDest { return d.view }

// attached returns the consumer attached to d (nil if none) and, when none is, since
// when.
func (d *Sub) attached() (*destinations.Consumer, time.Time) {
	if d == nil {
		return nil, time.Time{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.active, d.offlineSince
}

// Active reports whether a consumer is attached to the subscription.
func (d *Sub) Active() bool {
	c, _ := d.attached()
	return c != nil
}

// Detach detaches c if it is the attached consumer; the subscription stays and keeps
// messages. It stores when the subscription went offline (offline.go).
func (d *Sub) Detach(c *destinations.Consumer) {
	d.rec.Lock()
	defer d.rec.Unlock()
	d.mu.Lock()
	if d.active != c {
		d.mu.Unlock()
		return
	}
	d.active = nil
	d.offlineSince = d.clock()
	since := d.offlineSince
	d.mu.Unlock()
	d.markOffline(since)
}

// Registry holds the durable subscriptions of a broker.
type Registry struct {
	env *destinations.Env
	max int // subscriptions Subscribe may create; 0: no limit

	lifecycle sync.Mutex // serialises creating, attaching, replacing, deleting, expiring

	mu        sync.RWMutex
	subs      map[persistence.SubKey]*Sub
	perClient map[string]int    // subscriptions per client-id
	owners    map[string]string // client-id -> the user owning it (owner.go)
	counted   map[string]int    // subscriptions counted against each Quota.User

	// OnRemove, if set, adds to the batch that deletes a subscription what else goes
	// with it (the broker's duplicate-detection ids of what was imported into it).
	OnRemove func(key persistence.SubKey, batch persistence.Batch)
}

// NewRegistry returns an empty registry working in env, in which Subscribe creates
// subscriptions while fewer than max exist (0: no limit); Recover never refuses one.
func NewRegistry(env *destinations.Env, max int) *Registry {
	return &Registry{env: env, max: max, subs: map[persistence.SubKey]*Sub{}, perClient: map[string]int{}, owners: map[string]string{},
		counted: map[string]int{}}
}

// Get returns the subscription of key, or nil.
func (r *Registry) Get(key persistence.SubKey) *Sub {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.subs[key]
}

// Len is the number of subscriptions.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.subs)
}

// All returns every subscription.
func (r *Registry) All() []*Sub {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Sub, 0, len(r.subs))
	for _, d := range r.subs {
		out = append(out, d)
	}
	return out
}

// Counted is the number of subscriptions counted against user's quota.
func (r *Registry) Counted(user string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.counted[user]
}

// Subscribe attaches consumer c of by to the durable subscription key on topic t with
// sel, creating it, or replacing it when its topic or selector changed (as ActiveMQ
// does) if by.MayReplace lets it. It fails with ErrOwned when by may not use key's
// client-id (owner.go), with ErrInUse while another consumer is attached, with
// ErrOwnerQuota (before replacing anything) when creating it would pass by.Quota, with
// ErrTooMany when creating it would pass the registry's maximum, and with the store's
// error when the subscription cannot be stored.
func (r *Registry) Subscribe(ctx context.Context, key persistence.SubKey, t *destinations.TopicDest, sel *selector.Selector, c *destinations.Consumer, by Subscriber) (*Sub, error) {
	selText := ""
	if sel != nil {
		selText = sel.String()
	}
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	if _, err := r.checkOwner(key, by); err != nil {
		return nil, err
	}
	d := r.Get(key)
	if active, _ := d.attached(); active != nil {
		return nil, ErrInUse
	}
	replace := d != nil && (d.topic != t || d.info.Selector != selText)
	if replace && by.MayReplace != nil {
		if err := by.MayReplace(d.Topic()); err != nil {
			return nil, err
		}
	}
	if q := by.Quota; (d == nil || replace) && q.User != "" && q.Max > 0 {
		n := r.Counted(q.User)
		if replace && d.countedTo == q.User {
			n-- // the one it replaces
		}
		if n >= q.Max {
			return nil, ErrOwnerQuota
		}
	}
	if replace {
		if err := r.remove(ctx, d); err != nil {
			return nil, err
		}
		d = nil
	}
	if d == nil && r.max > 0 && r.Len() >= r.max {
		return nil, ErrTooMany
	}
	claim, _ := r.checkOwner(key, by) // the replaced subscription may have taken the owner with it
	var claimed func()
	if d == nil {
		info := persistence.SubInfo{Key: key, Dest: t.Qualified(), Selector: selText, Created: r.env.Time().UnixMilli()}
		batch := r.env.Store.Begin()
		batch.AddSub(info)
		if claim {
			claimed = r.claim(batch, key, by)
		}
		if err := batch.Commit(ctx, persistence.Sync); err != nil {
			return nil, err
		}
		// Attached before it is published: a listing never shows a new subscription
		// offline while its creator's SUBSCRIBE is still being answered.
		d = &Sub{info: info, sel: sel, topic: t, view: destinations.NewView(r.env, key, t), clock: r.env.Time, active: c}
		if by.Quota.Max > 0 {
			d.countedTo = by.Quota.User
		}
		r.mu.Lock()
		r.subs[key] = d
		r.perClient[key.ClientID]++
		if d.countedTo != "" {
			r.counted[d.countedTo]++
		}
		r.mu.Unlock()
		addTo(t, d)
		r.env.Log.Info("durable subscription created", slog.String("clientID", key.ClientID),
			slog.String("name", key.Name), slog.String("topic", t.ClientName()))
	}
	if claim && claimed == nil { // a subscription made before owners, or by no claiming user
		batch := r.env.Store.Begin()
		claimed = r.claim(batch, key, by)
		if err := batch.Commit(ctx, persistence.Sync); err != nil {
			return nil, err
		}
	}
	if claimed != nil {
		claimed()
	}
	d.rec.Lock()
	defer d.rec.Unlock()
	if err := d.clearOffline(ctx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.active = c
	d.mu.Unlock()
	d.view.AddConsumer(c)
	return d, nil
}

// Delete deletes the durable subscription key. With the lifecycle lock held it first
// calls before, then, if a consumer is attached, attached with it, which detaches it
// or returns why the subscription may not be deleted (that error is returned). It
// fails with ErrNotFound if there is no such subscription.
func (r *Registry) Delete(ctx context.Context, key persistence.SubKey, before func(), attached func(*destinations.Consumer) error) error {
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	before()
	d := r.Get(key)
	if d == nil {
		return ErrNotFound
	}
	if c, _ := d.attached(); c != nil {
		if err := attached(c); err != nil {
			return err
		}
	}
	return r.remove(ctx, d)
}

// remove deletes a durable subscription and releases everything it held. The caller
// holds r.lifecycle, and no consumer is attached.
func (r *Registry) remove(ctx context.Context, d *Sub) error {
	batch := r.env.Store.Begin()
	batch.RemoveSub(d.info.Key)
	d.rec.Lock()
	defer d.rec.Unlock()
	if d.offlineStored {
		batch.Purge(d.offlineDest())
	}
	if r.OnRemove != nil {
		r.OnRemove(d.info.Key, batch)
	}
	if r.lastOf(d) {
		batch.Purge(ownerDest(d.info.Key.ClientID))
	}
	if err := batch.Commit(ctx, persistence.Sync); err != nil {
		return err
	}
	removeFrom(d.topic, d)
	r.mu.Lock()
	delete(r.subs, d.info.Key)
	r.uncountLocked(d.info.Key.ClientID)
	if d.countedTo != "" {
		if r.counted[d.countedTo]--; r.counted[d.countedTo] <= 0 {
			delete(r.counted, d.countedTo)
		}
	}
	r.mu.Unlock()
	d.view.Drop()
	r.env.Log.Info("durable subscription removed", slog.String("clientID", d.info.Key.ClientID), slog.String("name", d.info.Key.Name))
	return nil
}

// Stats describes one durable subscription.
type Stats struct {
	ClientID, Name, Topic, Selector string
	Active                          bool
	Backlog                         int   // messages waiting to be delivered to it
	BacklogBytes                    int64 // their size (Message.Size), in memory or in the store only
	Created                         time.Time
	OfflineFor                      time.Duration // 0 while active
	Dropped                         int64
}

// Stats lists every durable subscription with its backlog and age, by client-id and
// name.
func (r *Registry) Stats() []Stats {
	subs := r.All()
	out := make([]Stats, 0, len(subs))
	now := r.env.Time()
	for _, d := range subs {
		active, since := d.attached()
		st := Stats{
			ClientID: d.info.Key.ClientID, Name: d.info.Key.Name,
			Topic: d.topic.ClientName(), Selector: d.info.Selector,
			Active:  active != nil,
			Created: time.UnixMilli(d.info.Created),
			Dropped: d.dropped.Load(),
		}
		if active == nil {
			st.OfflineFor = now.Sub(since)
		}
		n, bytes := d.view.Backlog()
		st.Backlog, st.BacklogBytes = int(n), bytes
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ClientID != out[j].ClientID {
			return out[i].ClientID < out[j].ClientID
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Recover rebuilds the durable subscriptions the store reports in rec, with their
// backlogs and since when they are offline (offline.go); their messages stay in the
// store until their consumers come back (paged in through ScanSub). topic returns the
// topic of a name, creating it.
func (r *Registry) Recover(ctx context.Context, rec *persistence.Recovered, topic func(name string) *destinations.TopicDest) error {
	for _, info := range rec.Subs {
		name := strings.TrimPrefix(info.Dest, persistence.TopicPrefix)
		t := topic(name)
		var sel *selector.Selector
		if info.Selector != "" {
			var err error
			if sel, err = selector.Parse(info.Selector); err != nil {
				r.env.Log.Error("stored durable subscription has a bad selector; it receives everything",
					slog.String("name", info.Key.String()), slog.Any("err", err))
			}
		}
		d := &Sub{info: info, sel: sel, topic: t, view: destinations.NewView(r.env, info.Key, t), clock: r.env.Time}
		// The backlog is what the store counts. Its size matters only for the offline
		// maxPendingBytes limit, which bounds it: the backlog is read once for it, and
		// not at all without that limit.
		n, bytes := rec.Pending[info.Key], int64(0)
		if p := r.env.Policy(destinations.Topic, name); p.MaxPendingBytes > 0 {
			n = 0
			err := r.env.Store.ScanSub(ctx, info.Key, 0, 0, func(m *persistence.Message) error {
				n++
				bytes += int64(m.Size())
				return nil
			})
			if err != nil {
				return fmt.Errorf("broker: count the stored messages of durable subscription %s: %w", info.Key, err)
			}
		}
		d.view.RecoverView(n, bytes)
		r.subs[info.Key] = d
		r.perClient[info.Key.ClientID]++
		addTo(t, d)
	}
	if err := r.recoverOwners(ctx, rec.Destinations); err != nil {
		return err
	}
	return r.recoverOffline(ctx, rec.Destinations)
}

// ExpireOffline removes the subscriptions offline for longer than their policy's
// offlineDurableSubscriberTimeout (ActiveMQ's offlineDurableSubscriberTimeout).
func (r *Registry) ExpireOffline(ctx context.Context) {
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	now := r.env.Time()
	for _, d := range r.All() {
		to := r.env.Policy(destinations.Topic, d.topic.Name()).OfflineDurableSubscriberTimeout
		active, since := d.attached()
		if active != nil || to <= 0 || now.Sub(since) <= to {
			continue
		}
		r.env.Log.Warn("removing durable subscription offline past its timeout",
			slog.String("clientID", d.info.Key.ClientID), slog.String("name", d.info.Key.Name),
			slog.Duration("offlineFor", now.Sub(since)))
		if err := r.remove(ctx, d); err != nil {
			r.env.Log.Error("removing offline durable subscription failed", slog.Any("err", err))
		}
	}
}
