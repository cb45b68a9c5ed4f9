package broker

import (
	"context"
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

// Durable topic subscriptions. A durable subscription is identified by the client-id of
// its owner and its name. Its messages are the topic's messages: a persistent message is
// stored once, with the list of durable subscriptions that still owe it an
// acknowledgement, and each subscription has a view of the topic — a queue of its own
// whose entries point at those single copies — that dispatches, pages from the store
// (ScanSub), redelivers and acknowledges (AckSub) exactly as a queue does. The stored
// copy is deleted once every subscription has acknowledged it.
//
// While its consumer is away a subscription keeps every matching persistent message;
// non-persistent messages reach it only while it is active (as in ActiveMQ).
//
// Clients of three brokers name durable subscriptions, each its own way (DurableStyle);
// a subscription has at most one consumer attached at a time.

// durableSub is one durable subscription.
//
// Its lifecycle (create, attach, replace, delete, expire) is serialised by the broker's
// durMu; detaching needs only mu. Publishers read whether it is attached with their
// topic's pubMu held (pubMu before mu).
type durableSub struct {
	info  persistence.SubInfo
	sel   *selector.Selector
	topic *topic
	view  *queue

	mu           sync.Mutex
	active       *Subscription // guarded by mu; nil while offline
	offlineSince time.Time     // guarded by mu

	dropped    atomic.Int64 // messages not kept because of the offline pending limits
	dropLogged time.Time    // guarded by topic.pubMu
}

// attached returns the consumer attached to d (nil if none) and, when none is, since
// when.
func (d *durableSub) attached() (*Subscription, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.active, d.offlineSince
}

// attach makes s d's consumer. The caller holds the broker's durMu and has checked that
// none is attached.
func (d *durableSub) attach(s *Subscription) {
	d.mu.Lock()
	d.active = s
	d.mu.Unlock()
}

// deactivate detaches s; the subscription stays and keeps messages.
func (d *durableSub) deactivate(s *Subscription) {
	d.mu.Lock()
	if d.active == s {
		d.active = nil
		d.offlineSince = time.Now()
	}
	d.mu.Unlock()
}

// DurableStats describes one durable subscription.
type DurableStats struct {
	ClientID, Name, Topic, Selector string
	Active                          bool
	Backlog                         int   // messages waiting to be delivered to it
	BacklogBytes                    int64 // their size (Message.Size), in memory or in the store only
	Created                         time.Time
	OfflineFor                      time.Duration // 0 while active
	Dropped                         int64
}

// DurableSubscriptions lists every durable subscription with its backlog and age.
func (b *Broker) DurableSubscriptions() []DurableStats {
	b.mu.RLock()
	subs := make([]*durableSub, 0, len(b.durables))
	for _, d := range b.durables {
		subs = append(subs, d)
	}
	b.mu.RUnlock()
	out := make([]DurableStats, 0, len(subs))
	now := time.Now()
	for _, d := range subs {
		active, since := d.attached()
		st := DurableStats{
			ClientID: d.info.Key.ClientID, Name: d.info.Key.Name,
			Topic: d.topic.stomp, Selector: d.info.Selector,
			Active:  active != nil,
			Created: time.UnixMilli(d.info.Created),
			Dropped: d.dropped.Load(),
		}
		if active == nil {
			st.OfflineFor = now.Sub(since)
		}
		d.view.mu.Lock()
		st.Backlog = d.view.pending.Len() + int(d.view.pagedOut)
		st.BacklogBytes = d.view.memBytes + d.view.pagedOutBytes
		d.view.mu.Unlock()
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

// newView makes the queue through which a durable subscription reads its topic.
func (b *Broker) newView(key persistence.SubKey, t *topic) *queue {
	q := newQueue(b, "durable:"+key.String())
	q.stomp = t.stomp
	q.dest = t.dest
	q.origin = destinations.Name{Kind: destinations.Topic, Name: t.name}
	k := key
	q.sub = &k
	p := b.policyFor(destinations.Topic, t.name)
	q.policy.Redelivery, q.policy.DeadLetter, q.policy.Nack = p.Redelivery, p.DeadLetter, p.Nack
	q.policy.MemoryLimit, q.memLimit = p.MemoryLimit, memoryLimitOf(p)
	q.policy.ExpirePeriod = p.ExpirePeriod
	return q
}

// DurableStyle is the convention of the broker whose clients name a durable subscription
// the way a SUBSCRIBE or UNSUBSCRIBE does.
type DurableStyle uint8

const (
	// DurableActiveMQ: activemq.subscriptionName, under the connection's client-id.
	// UNSUBSCRIBE with the name deletes the subscription, leaving the subscription id
	// alone; while a consumer is attached, also on this connection, it is refused
	// ("Durable consumer is in use", ActiveMQ's TopicRegion.removeSubscription): a client
	// detaches first (UNSUBSCRIBE with the id only, or DISCONNECT).
	DurableActiveMQ DurableStyle = iota
	// DurableArtemis: durable-subscription-name (or durable-subscriber-name), under the
	// client-id. UNSUBSCRIBE with the name detaches the consumer of the id and deletes
	// the subscription in one frame (Artemis' StompSession.unsubscribe).
	DurableArtemis
	// DurableRabbitMQ: durable:true with auto-delete:false; the subscription id is the
	// name, under the client-id if the connection has one and alone otherwise (RabbitMQ
	// clients send none). UNSUBSCRIBE with those headers detaches and deletes in one frame,
	// as RabbitMQ deletes the subscription's queue.
	DurableRabbitMQ
)

// durableKey is the key of the durable subscription name of this connection in style.
func (c *Conn) durableKey(name string, style DurableStyle) (persistence.SubKey, error) {
	if c.ClientID == "" && style != DurableRabbitMQ {
		return persistence.SubKey{}, errorf(ErrInvalidDestination,
			"a durable subscription needs a client-id on CONNECT (or RabbitMQ's form: durable:true, auto-delete:false and the id as its name)")
	}
	return persistence.SubKey{ClientID: c.ClientID, Name: name}, nil
}

// subscribeDurable attaches a consumer to the durable subscription (client-id, name),
// creating it, or replacing it when its topic or selector changed (as ActiveMQ does).
func (c *Conn) subscribeDurable(ctx context.Context, r SubscribeRequest, s *Subscription) error {
	key, err := c.durableKey(r.DurableName, r.DurableStyle)
	if err != nil {
		return err
	}
	if r.Dest.Kind != destinations.Topic {
		return errorf(ErrInvalidDestination, "cannot durably subscribe to a Queue destination: %s", r.Dest)
	}
	if r.Dest.IsWildcard() {
		return errorf(ErrInvalidDestination, "durable subscriptions to wildcard topics are not supported: %s", r.Dest)
	}
	selText := ""
	if r.Selector != nil {
		selText = r.Selector.String()
	}
	t := c.b.topic(r.Dest.Name)
	c.b.durMu.Lock()
	defer c.b.durMu.Unlock()
	c.b.mu.RLock()
	d := c.b.durables[key]
	c.b.mu.RUnlock()
	if active, _ := d.attachedOrNil(); active != nil {
		return errorf(ErrDurableInUse, "Durable consumer is in use for client: %s and subscriptionName: %s", key.ClientID, key.Name)
	}
	if d != nil && (d.topic != t || d.info.Selector != selText) {
		if err := c.b.removeDurable(ctx, d); err != nil {
			return err
		}
		d = nil
	}
	if d == nil {
		info := persistence.SubInfo{Key: key, Dest: t.dest, Selector: selText, Created: time.Now().UnixMilli()}
		batch := c.b.store.Begin()
		batch.AddSub(info)
		if err := batch.Commit(ctx, persistence.Sync); err != nil {
			return storeError(err)
		}
		d = &durableSub{info: info, sel: r.Selector, topic: t, view: c.b.newView(key, t)}
		c.b.mu.Lock()
		c.b.durables[key] = d
		c.b.mu.Unlock()
		t.addDurable(d)
		c.b.log.Info("durable subscription created", slog.String("clientID", key.ClientID),
			slog.String("name", key.Name), slog.String("topic", t.stomp))
	}
	s.q = d.view
	s.durable = d
	d.attach(s)
	d.view.addConsumer(s)
	return nil
}

// attachedOrNil is attached for a subscription that may not exist (nil).
func (d *durableSub) attachedOrNil() (*Subscription, time.Time) {
	if d == nil {
		return nil, time.Time{}
	}
	return d.attached()
}

// unsubscribeDurable deletes the durable subscription r names, the way of its style:
// ActiveMQ's refuses while a consumer is attached and leaves r.ID alone; the others
// first detach r.ID's consumer on this connection (and this connection's consumer of
// the subscription), and refuse only while another connection's is attached.
func (c *Conn) unsubscribeDurable(ctx context.Context, r UnsubscribeRequest) error {
	key, err := c.durableKey(r.DurableName, r.DurableStyle)
	if err != nil {
		return err
	}
	c.b.durMu.Lock()
	defer c.b.durMu.Unlock()
	if r.DurableStyle != DurableActiveMQ {
		if s := c.subs[r.ID]; s != nil {
			c.unsubscribe(s)
		}
	}
	c.b.mu.RLock()
	d := c.b.durables[key]
	c.b.mu.RUnlock()
	if d == nil {
		return errorf(ErrUnknownSubscription, "No durable subscription exists for clientID: %s and subscriptionName: %s", key.ClientID, key.Name)
	}
	if s, _ := d.attached(); s != nil {
		if s.conn != c || r.DurableStyle == DurableActiveMQ {
			return errorf(ErrDurableInUse, "Durable consumer is in use")
		}
		c.unsubscribe(s)
	}
	return c.b.removeDurable(ctx, d)
}

// removeDurable deletes a durable subscription and releases everything it held. The
// caller holds b.durMu, and no consumer is attached.
func (b *Broker) removeDurable(ctx context.Context, d *durableSub) error {
	batch := b.store.Begin()
	batch.RemoveSub(d.info.Key)
	if err := batch.Commit(ctx, persistence.Sync); err != nil {
		return storeError(err)
	}
	d.topic.removeDurable(d)
	b.mu.Lock()
	delete(b.durables, d.info.Key)
	b.mu.Unlock()
	q := d.view
	q.mu.Lock()
	q.pending.RemoveIf(func(e *destinations.Entry) bool { q.release(e.Size); return true })
	q.paged, q.pagedOut, q.pagedOutBytes = false, 0, 0
	q.mu.Unlock()
	b.log.Info("durable subscription removed", slog.String("clientID", d.info.Key.ClientID), slog.String("name", d.info.Key.Name))
	return nil
}

// routeDurable gives a topic message to the durable subscriptions that want it: stored
// once (in batch) for the persistent ones, kept in memory for active ones otherwise.
// Called with the topic's publish lock held, after the message got its sequence.
func (t *topic) routeDurable(m *persistence.Message, batch func() persistence.Batch) []queuedEntry {
	if len(t.durables) == 0 {
		return nil
	}
	var views []*durableSub
	for _, d := range t.durables {
		if !d.sel.MatchesMessage(m, 1) {
			continue
		}
		active, _ := d.attached()
		if !m.Persistent && active == nil {
			continue // non-persistent messages are not kept for offline subscribers
		}
		if active == nil && d.overLimit(t.b, m) {
			continue
		}
		views = append(views, d)
	}
	if len(views) == 0 {
		return nil
	}
	var entries []queuedEntry
	if m.Persistent {
		m.Subs = make([]persistence.SubKey, len(views))
		for i, d := range views {
			m.Subs[i] = d.info.Key
		}
		batch().Add(m)
	}
	for _, d := range views {
		e := d.view.acceptView(m, !m.Persistent)
		if m.Persistent {
			entries = append(entries, queuedEntry{d.view, e, m.Seq})
		}
	}
	return entries
}

// overLimit applies the policy's offline pending limits: past them a message is not
// kept for this offline subscription, with a log line (at most once a minute). The
// caller holds the topic's pubMu.
func (d *durableSub) overLimit(b *Broker, m *persistence.Message) bool {
	p := b.policyFor(destinations.Topic, d.topic.name)
	if p.MaxPendingMessages <= 0 && p.MaxPendingBytes <= 0 {
		return false
	}
	q := d.view
	q.mu.Lock()
	backlog := int64(q.pending.Len()) + q.pagedOut
	bytes := q.memBytes + q.pagedOutBytes // the whole backlog, in memory or not
	q.mu.Unlock()
	over := (p.MaxPendingMessages > 0 && backlog >= p.MaxPendingMessages) ||
		(p.MaxPendingBytes > 0 && bytes+int64(m.Size()) > p.MaxPendingBytes)
	if over {
		dropped := d.dropped.Add(1)
		if now := time.Now(); now.Sub(d.dropLogged) > time.Minute {
			d.dropLogged = now
			b.log.Warn("offline durable subscription over its pending limit: new messages are not kept for it",
				slog.String("clientID", d.info.Key.ClientID), slog.String("name", d.info.Key.Name),
				slog.Int64("backlog", backlog), slog.Int64("backlogBytes", bytes), slog.Int64("maxPendingMessages", p.MaxPendingMessages),
				slog.Int64("maxPendingBytes", p.MaxPendingBytes), slog.Int64("dropped", dropped))
		}
	}
	return over
}

func (t *topic) addDurable(d *durableSub) {
	t.pubMu.Lock()
	t.durables = append(t.durables, d)
	t.pubMu.Unlock()
}

func (t *topic) removeDurable(d *durableSub) {
	t.pubMu.Lock()
	for i, x := range t.durables {
		if x == d {
			t.durables = append(t.durables[:i:i], t.durables[i+1:]...)
			break
		}
	}
	t.pubMu.Unlock()
}

// recoverDurables rebuilds the durable subscriptions from the store; their messages stay
// in the store until their consumers come back (paged in through ScanSub).
func (b *Broker) recoverDurables(ctx context.Context, subs []persistence.SubInfo) error {
	for _, info := range subs {
		name := strings.TrimPrefix(info.Dest, persistence.TopicPrefix)
		t := b.topic(name)
		var sel *selector.Selector
		if info.Selector != "" {
			var err error
			if sel, err = selector.Parse(info.Selector); err != nil {
				b.log.Error("stored durable subscription has a bad selector; it receives everything",
					slog.String("name", info.Key.String()), slog.Any("err", err))
			}
		}
		d := &durableSub{info: info, sel: sel, topic: t, view: b.newView(info.Key, t), offlineSince: time.Now()}
		d.view.paged, d.view.pageAfter = true, 0
		// The backlog matters for the offline pending limits: count what is stored, and
		// its size. This reads the subscription's backlog once, which the limits bound
		// while it is offline; without a limit it is not read.
		if p := b.policyFor(destinations.Topic, name); p.MaxPendingMessages > 0 || p.MaxPendingBytes > 0 {
			var n, bytes int64
			err := b.store.ScanSub(ctx, info.Key, 0, 0, func(m *persistence.Message) error {
				n++
				bytes += int64(m.Size())
				return nil
			})
			if err != nil {
				return fmt.Errorf("broker: count the stored messages of durable subscription %s: %w", info.Key, err)
			}
			d.view.pagedOut, d.view.pagedOutBytes = n, bytes
		}
		b.durables[info.Key] = d
		t.durables = append(t.durables, d)
	}
	return nil
}

// expireOfflineDurables removes the subscriptions offline for longer than their policy's
// offlineDurableSubscriberTimeout (ActiveMQ's offlineDurableSubscriberTimeout).
func (b *Broker) expireOfflineDurables(ctx context.Context) {
	b.durMu.Lock()
	defer b.durMu.Unlock()
	b.mu.RLock()
	subs := make([]*durableSub, 0, len(b.durables))
	for _, d := range b.durables {
		subs = append(subs, d)
	}
	b.mu.RUnlock()
	now := time.Now()
	for _, d := range subs {
		to := b.policyFor(destinations.Topic, d.topic.name).OfflineTimeout
		active, since := d.attached()
		if active != nil || to <= 0 || now.Sub(since) <= to {
			continue
		}
		b.log.Warn("removing durable subscription offline past its timeout",
			slog.String("clientID", d.info.Key.ClientID), slog.String("name", d.info.Key.Name),
			slog.Duration("offlineFor", now.Sub(since)))
		if err := b.removeDurable(ctx, d); err != nil {
			b.log.Error("removing offline durable subscription failed", slog.Any("err", err))
		}
	}
}

func (b *Broker) runDurableSweeper(ctx context.Context, every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.expireOfflineDurables(ctx)
		}
	}
}
