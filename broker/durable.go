package broker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
)

// Durable topic subscriptions live in the durable package; the broker resolves the
// names clients give them and attaches its subscriptions.

// DurableStats describes one durable subscription.
type DurableStats = durable.Stats

// DurableSubscriptions lists every durable subscription with its backlog and age.
func (b *Broker) DurableSubscriptions() []DurableStats {
	if b.shared != nil {
		return b.shared.Stats()
	}
	return b.durables.Stats()
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
// creating it, or replacing it when its topic or selector changed (as ActiveMQ does)
// and the connection may remove it (read on its topic). A client-id another user owns
// is refused (clientid.go).
func (c *Conn) subscribeDurable(ctx context.Context, r SubscribeRequest, s *Subscription) error {
	key, err := c.durableKey(r.DurableName, r.DurableStyle)
	if err != nil {
		return err
	}
	if r.Dest.Kind == destinations.TempTopic {
		return errorf(ErrInvalidDestination, "cannot durably subscribe to a temporary topic: %s", r.Dest)
	}
	if r.Dest.Kind != destinations.Topic {
		return errorf(ErrInvalidDestination, "cannot durably subscribe to a Queue destination: %s", r.Dest)
	}
	if r.Dest.IsWildcard() {
		return errorf(ErrInvalidDestination, "durable subscriptions to wildcard topics are not supported: %s", r.Dest)
	}
	return c.b.attachDurable(ctx, r, s, key)
}

// attachDurable attaches s to the durable subscription key of r (see subscribeDurable).
func (b *Broker) attachDurable(ctx context.Context, r SubscribeRequest, s *Subscription, key persistence.SubKey) error {
	if b.shared != nil {
		return b.subscribeShared(ctx, r, s, key)
	}
	t := b.dests.Topic(r.Dest.Name)
	by := s.conn.subscriber()
	d, err := b.durables.Subscribe(ctx, key, t, s.Selector, &s.Consumer, by)
	var denied *Error
	switch {
	case errors.As(err, &denied):
		return denied // may not replace it (MayReplace)
	case errors.Is(err, durable.ErrOwned):
		return ownedError(key.ClientID)
	case errors.Is(err, durable.ErrOwnerQuota):
		q := by.Quota
		b.log.Warn("durable subscription quota reached: a user's new one was refused", slog.String("user", q.User),
			slog.String("clientID", key.ClientID), slog.String("name", key.Name), slog.Int("maxDurableSubscriptionsPerUser", q.Max))
		return errorf(ErrTooManyDurableSubscriptions, "user %s reached its quota of %d durable subscriptions (plugins.maxDurableSubscriptionsPerUser): %s:%s not created",
			q.User, q.Max, key.ClientID, key.Name)
	case errors.Is(err, durable.ErrInUse):
		return errorf(ErrDurableInUse, "Durable consumer is in use for client: %s and subscriptionName: %s", key.ClientID, key.Name)
	case errors.Is(err, durable.ErrTooMany):
		b.log.Warn("durable subscription limit reached: a new one was refused",
			slog.String("clientID", key.ClientID), slog.String("name", key.Name), slog.Int("maxDurableSubscriptions", b.quotas.durables))
		return errorf(ErrTooManyDurableSubscriptions, "maximum number of durable subscriptions reached (systemUsage maxDurableSubscriptions %d): %s:%s not created",
			b.quotas.durables, key.ClientID, key.Name)
	case err != nil:
		return storeError(err)
	}
	s.q = d.View()
	s.durable = d
	return nil
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
	return c.b.deleteDurable(ctx, c, r, key)
}

// deleteDurable deletes the durable subscription key that r, a request of c, names
// (see unsubscribeDurable).
func (b *Broker) deleteDurable(ctx context.Context, c *Conn, r UnsubscribeRequest, key persistence.SubKey) error {
	if b.shared != nil {
		return b.unsubscribeShared(ctx, c, r, key)
	}
	var topic string
	if d := b.durables.Get(key); d != nil {
		topic = d.Topic()
		if err := c.mayRemoveDurable(topic); err != nil {
			return err
		}
	}
	var refused *Error
	err := b.durables.Delete(ctx, key, func() {
		if r.DurableStyle != DurableActiveMQ {
			if s := c.subs[r.ID]; s != nil {
				c.unsubscribe(s)
			}
		}
	}, c.detachAttached(r, &refused))
	switch {
	case err == nil:
		if topic != "" {
			b.adviseDurableDeleted(c, key, topic)
		}
		return nil
	case errors.Is(err, durable.ErrNotFound):
		return errorf(ErrUnknownSubscription, "No durable subscription exists for clientID: %s and subscriptionName: %s", key.ClientID, key.Name)
	case refused != nil:
		return refused
	}
	return storeError(err)
}

// detachAttached is what deleting the durable subscription r names does with the
// consumer attached to it: one of this connection is detached, unless r's style is
// ActiveMQ's; otherwise the deletion is refused, and *refused says why.
func (c *Conn) detachAttached(r UnsubscribeRequest, refused **Error) func(*destinations.Consumer) error {
	return func(active *destinations.Consumer) error {
		s := active.Owner.(*Subscription)
		if s.conn != c || r.DurableStyle == DurableActiveMQ {
			*refused = errorf(ErrDurableInUse, "Durable consumer is in use")
			return *refused
		}
		c.unsubscribe(s)
		return nil
	}
}
