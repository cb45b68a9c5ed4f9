package broker

import (
	"context"
	"errors"
	"time"

	"github.com/activemq-go/broker/broker/access"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/broker/registry"
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
	c := management.Config{Host: mgmtHost{b}, Store: b.store, Log: b.log, Meter: &b.counters, Memory: b.flow.Memory(),
		StoreUsage: b.flow.StoreUsage(), StoreFull: b.flow.StoreFull(), Durables: b.durables}
	if b.sched != nil {
		c.Scheduler = b.sched
	}
	if b.access.Authorizing() {
		svc := b.access.Service
		c.ProducerMayWrite = func(user string, d destinations.Name) bool {
			return svc.Authorize(svc.SubjectOf(user), access.Kind(d.Kind), d.Name, security.Write)
		}
	}
	return management.New(c)
}

// mgmtHost is the broker as its management surface's host. What it does needs the
// broker's maps and locks, or a connection: finding and detaching destinations,
// routing a moved message, a send as a client, the connections, kicking one.
type mgmtHost struct{ b *Broker }

func (h mgmtHost) Find(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest) {
	return h.b.dests.Find(d)
}

func (h mgmtHost) Destinations() []management.Dest {
	out := []management.Dest{}
	h.b.dests.Each(func(name string, temp bool, q *destinations.QueueDest, t *destinations.TopicDest) {
		out = append(out, management.Dest{Name: name, Temp: temp, Q: q, T: t})
	})
	return out
}

func (h mgmtHost) Policy(kind destinations.Kind, name string) policy.Policy {
	return h.b.policyFor(kind, name)
}

func (h mgmtHost) Duplicates(d destinations.Name) int64 { return h.b.dedup.Duplicates(d) }

func (h mgmtHost) Detach(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest, error) {
	q, t, err := h.b.dests.Detach(d)
	if err == nil && q == nil && t == nil {
		kind := "queue"
		if d.Kind == destinations.Topic {
			kind = "topic"
		}
		return nil, nil, errorf(ErrNotFound, "no %s named %s", kind, d.Name)
	}
	return q, t, err
}

func (h mgmtHost) NewMessageID() string { return h.b.newMessageID() }

func (h mgmtHost) Accept(batch persistence.Batch, to destinations.Name, m *persistence.Message) ([]destinations.Accepted, func(), error) {
	b := h.b
	dests := []destinations.Name{to}
	if to.Kind == destinations.Topic {
		dests = append(dests, b.dests.VirtualQueues(to.Name)...)
	}
	if err := b.dests.Admit(registry.Creator{}, dests); err != nil {
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
			t := b.dests.Topic(d.Name)
			destinations.ExpireAfter(dm, t.TTL())
			acc, store := t.Accept(dm)
			if store {
				batch.Add(dm)
			}
			entries = append(entries, acc...)
			publish = func() { t.Publish(dm, nil) }
			continue
		}
		q, e, err := b.dests.AcceptQueue(d, dm, false)
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
	if w := b.flow.NoSpaceWait(); w > 0 {
		t := time.NewTimer(w)
		defer t.Stop()
		deadline = t.C
	}
	for {
		err = c.Send(ctx, []destinations.Name{dest}, m, "", func(err error) { done <- err })
		var be *Error
		if err == nil || !errors.As(err, &be) || be.Retry == nil || b.flow.NoSpaceWait() == 0 {
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

func (h mgmtHost) Connections() []management.ConnectionInfo { return h.b.connections() }

// Kick closes a client connection as link stealing does, and waits a few seconds at
// most for it to be gone.
func (h mgmtHost) Kick(ctx context.Context, id, reason string) (string, error) {
	c := h.b.findConn(id)
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

func (h mgmtHost) Traffic() management.Traffic { return h.b.traffic() }

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
