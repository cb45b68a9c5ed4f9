package broker

import (
	"context"
	"errors"
	"time"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// Management is the broker's management surface (package broker/management): what
// the admin listener and the metrics read and do.
func (b *Broker) Management() *management.Manager { return b.mgmt }

func newManagement(b *Broker) *management.Manager {
	c := management.Config{Host: mgmtHost{b}, Store: b.store, Log: b.log, Meter: &b.counters, Memory: b.mem,
		StoreUsage: b.storeUsage, StoreFull: &b.storeFull, Durables: b.durables}
	if b.sched != nil {
		c.Scheduler = b.sched
	}
	return management.New(c)
}

// mgmtHost is the broker as its management surface's host. What it does needs the
// broker's maps and locks, or a connection: finding and detaching destinations,
// routing a moved message, a send as a client, the connections, kicking one.
type mgmtHost struct{ b *Broker }

func (h mgmtHost) Find(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest) {
	b := h.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.temps[tempKey{d.Kind == destinations.Topic, d.Name}] != nil {
		return nil, nil
	}
	if d.Kind == destinations.Topic {
		return nil, b.topics[d.Name]
	}
	return b.queues[d.Name], nil
}

func (h mgmtHost) Destinations() []management.Dest {
	b := h.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]management.Dest, 0, len(b.queues)+len(b.topics))
	for name, q := range b.queues {
		out = append(out, management.Dest{Name: name, Temp: b.temps[tempKey{false, name}] != nil, Q: q})
	}
	for name, t := range b.topics {
		out = append(out, management.Dest{Name: name, Temp: b.temps[tempKey{true, name}] != nil, T: t})
	}
	return out
}

func (h mgmtHost) Policy(kind destinations.Kind, name string) policy.Policy {
	return h.b.policyFor(kind, name)
}

func (h mgmtHost) Duplicates(d destinations.Name) int64 { return h.b.dedup.Duplicates(d) }

func (h mgmtHost) Detach(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest, error) {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	q, t := b.queues[d.Name], b.topics[d.Name]
	if d.Kind == destinations.Topic {
		q = nil
	} else {
		t = nil
	}
	if (q == nil && t == nil) || b.temps[tempKey{d.Kind == destinations.Topic, d.Name}] != nil {
		kind := "queue"
		if d.Kind == destinations.Topic {
			kind = "topic"
		}
		return nil, nil, errorf(ErrNotFound, "no %s named %s", kind, d.Name)
	}
	var err error
	if q != nil {
		err = q.Retire()
	} else {
		err = t.Retire()
	}
	if err != nil {
		return nil, nil, err
	}
	if q != nil {
		delete(b.queues, d.Name)
		b.unregisterVirtual(q)
		b.seqFloor.Store(max(b.seqFloor.Load(), q.NextSeq()))
	} else {
		b.dropTopicLocked(d.Name)
		b.seqFloor.Store(max(b.seqFloor.Load(), t.Seq()+1))
	}
	b.removals.Add(1)
	b.adviseRemovedLocked(d)
	return q, t, nil
}

func (h mgmtHost) NewMessageID() string { return h.b.newMessageID() }

func (h mgmtHost) Accept(batch persistence.Batch, to destinations.Name, m *persistence.Message) ([]destinations.Accepted, func(), error) {
	b := h.b
	dests := []destinations.Name{to}
	if to.Kind == destinations.Topic {
		dests = append(dests, b.virtualQueues(to.Name)...)
	}
	if err := b.admitDestinations(nil, dests); err != nil {
		return nil, nil, err
	}
	var entries []destinations.Accepted
	var publish func()
	expires := m.Expires
	for i, d := range dests {
		dm := m
		if i > 0 {
			dm = m.Clone()
			dm.Expires = expires
		}
		if d.Kind == destinations.Topic {
			t := b.topic(d.Name)
			destinations.ExpireAfter(dm, t.TTL())
			acc, store := t.Accept(dm)
			if store {
				batch.Add(dm)
			}
			entries = append(entries, acc...)
			publish = func() { t.Publish(dm, nil) }
			continue
		}
		q, e, err := b.acceptQueue(d.Name, dm, false)
		if err != nil {
			return entries, nil, b.memoryFull(nil, q, err)
		}
		if dm.Persistent {
			batch.Add(dm)
		}
		entries = append(entries, destinations.Accepted{Q: q, E: e, Seq: dm.Seq})
	}
	return entries, publish, nil
}

// Send sends m as the broker's own client acting as sub: a SEND held by producer flow
// control is tried again when there is room, for at most noSpaceWait.
func (h mgmtHost) Send(ctx context.Context, sub *security.Subject, who string, dest destinations.Name, m *persistence.Message) error {
	b := h.b
	c, err := b.connectInternal(ctx, sub, who)
	if err != nil {
		return err
	}
	defer c.Close()
	done := make(chan error, 1)
	var deadline <-chan time.Time
	if w := b.noSpaceWait; w > 0 {
		t := time.NewTimer(w)
		defer t.Stop()
		deadline = t.C
	}
	for {
		err = c.Send(ctx, []destinations.Name{dest}, m, "", func(err error) { done <- err })
		var be *Error
		if err == nil || !errors.As(err, &be) || be.Retry == nil || b.noSpaceWait == 0 {
			break
		}
		select {
		case <-be.Retry:
		case <-deadline:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err != nil {
		return err
	}
	select {
	case err = <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connectInternal connects the broker's own client acting as sub (or, for nil, as a
// client without credentials): never listed among the connections.
func (b *Broker) connectInternal(ctx context.Context, sub *security.Subject, who string) (*Conn, error) {
	if sub == nil {
		var err error
		if sub, err = b.authenticate(ctx, ConnectInfo{RemoteAddr: who}); err != nil {
			return nil, err
		}
	}
	c := b.newConn(sub, who, "admin")
	c.internal = true
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, &Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
	}
	if err := b.admitUserLocked(sub); err != nil {
		return nil, err
	}
	b.conns[c] = struct{}{}
	return c, nil
}

func (h mgmtHost) Connections() []management.ConnectionInfo {
	b := h.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]management.ConnectionInfo, 0, len(b.conns))
	for c := range b.conns {
		if !c.internal {
			out = append(out, management.ConnectionInfo{
				ID: c.ID, ClientID: c.ClientID, User: c.subject.User, RemoteAddr: c.RemoteAddr,
				Connector: c.connector, Version: c.version, ConnectedAt: c.connectedAt,
				Subscriptions: int(c.nsubs.Load()), Received: c.received.Load(), Delivered: c.delivered.Load(),
			})
		}
	}
	return out
}

// Kick closes a client connection as link stealing does, and waits a few seconds at
// most for it to be gone.
func (h mgmtHost) Kick(ctx context.Context, id, reason string) (string, error) {
	b := h.b
	b.mu.RLock()
	var c *Conn
	for x := range b.conns {
		if x.ID == id && !x.internal {
			c = x
			break
		}
	}
	b.mu.RUnlock()
	if c == nil {
		return "", errorf(ErrNotFound, "no connection %s", id)
	}
	c.kick(reason)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-c.gone:
	case <-t.C:
	case <-ctx.Done():
	}
	return c.RemoteAddr, nil
}

func (h mgmtHost) Traffic() management.Traffic {
	b := h.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	// A connection's counts move to the closed ones' under b.mu: none is counted twice.
	out := management.Traffic{Received: b.counters.ClosedReceived.Load(), Delivered: b.counters.ClosedDelivered.Load()}
	for c := range b.conns {
		out.Open[c.proto]++
		if c.blocked.Load() {
			out.Blocked++
		}
		out.Received += c.received.Load()
		out.Delivered += c.delivered.Load()
	}
	return out
}

func (h mgmtHost) RemoveDurable(ctx context.Context, key persistence.SubKey) error {
	b := h.b
	if b.shared == nil {
		return b.durables.Delete(ctx, key, func() {}, func(*destinations.Consumer) error { return durable.ErrInUse })
	}
	err := b.shared.Delete(ctx, key, func(*destinations.Consumer) error { return sharedmode.ErrInUse })
	switch {
	case errors.Is(err, sharedmode.ErrNotFound):
		return durable.ErrNotFound
	case errors.Is(err, sharedmode.ErrInUse):
		return durable.ErrInUse
	}
	return err
}

func (h mgmtHost) DurableSubscriptions() []durable.Stats { return h.b.DurableSubscriptions() }
