package broker

import (
	"context"
	"errors"
	"sync"

	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// shHost is the broker as its shared mode's host (package broker/sharedmode).
type shHost struct{ b *Broker }

func (h shHost) Queue(name string) *destinations.QueueDest { return h.b.dests.FindQueue(name) }

func (h shHost) Queues() []*destinations.QueueDest { return h.b.dests.Queues() }

func (h shHost) Topic(name string) *destinations.TopicDest { return h.b.dests.Topic(name) }

func (h shHost) Heard(name string) *destinations.TopicDest {
	t := h.b.dests.FindTopic(name)
	if t == nil && h.b.dests.HasWildcards() {
		t = h.b.dests.Topic(name)
	}
	return t
}

// sendShared stores m for each of dests (shared queues and topics) in the database
// and calls done once it is committed; then this node's subscribers of the topics get
// it. Each destination's default time to live applies, as for a local one.
func (b *Broker) sendShared(from *Conn, dests []destinations.Name, m *persistence.Message, done func(error)) {
	msgs := make([]*persistence.Message, len(dests))
	expires := m.Expires // as sent: each destination applies its own defaultTimeToLive
	for i, d := range dests {
		msg := messageFor(m, i, expires)
		destinations.ExpireAfter(msg, b.policyFor(d.Kind, d.Name).DefaultTimeToLive)
		msg.Dest = d.Qualified()
		msgs[i] = msg
	}
	var sink destinations.Sink
	if from != nil {
		sink = from // a nil *Conn is not a nil Sink
	}
	b.shared.Send(sink, msgs, func(err error) {
		if err != nil {
			err = storeError(err)
		}
		done(err)
	})
}

// autoAckShared acknowledges ds, auto-acknowledged deliveries of the shared queue q,
// in its database.
func (b *Broker) autoAckShared(q *destinations.QueueDest, ds []*Delivery) { b.shared.AutoAck(q, ds) }

// detachShared detaches s from the shared durable subscription it is attached to.
func (b *Broker) detachShared(s *Subscription) { b.shared.Detach(s.shDurable, &s.Consumer) }

// settleShared acknowledges (or rejects) ds, deliveries of shared queues (several for
// a wildcard subscription), and calls done once every queue is done.
func (b *Broker) settleShared(ds []*Delivery, ack bool, done func(error)) {
	qs := byQueue(ds)
	all := joinDone(len(qs), func(err error) {
		if err != nil {
			err = sharedAckError(err)
		}
		done(err)
	})
	for q, qds := range qs {
		q.SettleShared(qds, ack, all)
	}
}

// joinDone returns a function to be called n times that calls done once, after the
// last call, with the first error.
func joinDone(n int, done func(error)) func(error) {
	var (
		mu    sync.Mutex
		first error
	)
	return func(err error) {
		mu.Lock()
		if err != nil && first == nil {
			first = err
		}
		n--
		last, e := n == 0, first
		mu.Unlock()
		if last {
			done(e)
		}
	}
}

// sharedAckError is the client's error for an acknowledgement of shared queue messages
// that failed: a lost lease (the message went to another node) or the database.
func sharedAckError(err error) error {
	if errors.Is(err, destinations.ErrLeaseLost) {
		return &Error{Message: "acknowledgement refused: " + err.Error(), Err: ErrLeaseLost}
	}
	return storeError(err)
}

// mayRemoveShared checks that c may remove the shared durable subscription key, if
// the database has it on another topic than keep (a topic's name; "" for none): see
// Conn.mayRemoveDurable.
func (b *Broker) mayRemoveShared(ctx context.Context, c *Conn, key persistence.SubKey, keep string) error {
	if !b.access.Authorizing() {
		return nil
	}
	topic, ok, err := b.shared.TopicOf(ctx, key)
	if err != nil {
		return storeError(err)
	}
	if ok && topic != keep {
		return c.mayRemoveDurable(topic)
	}
	return nil
}

// subscribeShared attaches s to the shared durable subscription key of r: replacing
// one on another topic needs read on that topic (one with another selector on r's
// topic needs read on r's topic, which s's SUBSCRIBE was checked for). The database
// replaces it atomically; the check before is not under the same lock.
func (b *Broker) subscribeShared(ctx context.Context, r SubscribeRequest, s *Subscription, key persistence.SubKey) error {
	if err := b.mayRemoveShared(ctx, s.conn, key, r.Dest.Name); err != nil {
		return err
	}
	sel := ""
	if s.Selector != nil {
		sel = s.Selector.String()
	}
	d, err := b.shared.Subscribe(ctx, key, r.Dest.Name, sel, &s.Consumer)
	switch {
	case errors.Is(err, sharedmode.ErrAttached):
		return errorf(ErrDurableInUse, "Durable consumer is in use for client: %s and subscriptionName: %s", key.ClientID, key.Name)
	case errors.Is(err, sharedmode.ErrInUse):
		return errorf(ErrDurableInUse, "Durable consumer is in use for client: %s and subscriptionName: %s (on another broker node)", key.ClientID, key.Name)
	case err != nil:
		return storeError(err)
	}
	s.q, s.shDurable = d.View(), d
	return nil
}

// unsubscribeShared deletes the shared durable subscription key that r, a request of
// c, names (see unsubscribeDurable for the styles).
func (b *Broker) unsubscribeShared(ctx context.Context, c *Conn, r UnsubscribeRequest, key persistence.SubKey) error {
	if err := b.mayRemoveShared(ctx, c, key, ""); err != nil {
		return err
	}
	if r.DurableStyle != DurableActiveMQ {
		if s := c.subs[r.ID]; s != nil {
			c.unsubscribe(s)
		}
	}
	var refused *Error
	err := b.shared.Delete(ctx, key, c.detachAttached(r, &refused))
	switch {
	case refused != nil:
		return refused
	case errors.Is(err, sharedmode.ErrNotFound):
		return errorf(ErrUnknownSubscription, "No durable subscription exists for clientID: %s and subscriptionName: %s", key.ClientID, key.Name)
	case errors.Is(err, sharedmode.ErrInUse):
		return errorf(ErrDurableInUse, "Durable consumer is in use (on another broker node)")
	case err != nil:
		return storeError(err)
	}
	return nil
}
