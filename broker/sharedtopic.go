package broker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// Topics in shared mode. A SEND to a topic goes to the database (sendShared) in the
// transaction of the node's other shared SENDs: it is stored there once per durable
// subscription whose selector it matches, and passed to the other nodes, which hand
// it to their non-durable subscribers (remoteTopic); once it is committed, this node
// hands it to its own. A durable subscription is a container of the database, served
// on whichever node its consumer attaches to (one live node at a time) through a
// shared view (subscribeShared): it survives the node, and its messages wait in the
// database while no consumer is attached.

// SharedEngine is the engine of shared mode: shared queues, and the topics' durable
// subscriptions and messages across nodes.
type SharedEngine interface {
	destinations.SharedQueues
	// SubscribeDurable attaches this node to the durable subscription sub (Container,
	// Key, Topic, Selector), creating it, or replacing it when its topic or selector
	// changed; ErrSharedInUse while another live node is attached.
	SubscribeDurable(ctx context.Context, sub SharedSubscription) (created, replaced bool, err error)
	// DetachDurable records that this node's consumer of container went.
	DetachDurable(ctx context.Context, container string) error
	// UnsubscribeDurable deletes the subscription of container and its messages;
	// ErrSharedNotFound, or ErrSharedInUse while another live node is attached.
	UnsubscribeDurable(ctx context.Context, container string) error
	// DurableSubscriptions lists every durable subscription of the database.
	DurableSubscriptions(ctx context.Context) ([]SharedSubscription, error)
	// OnTopic sets the receiver of the topic messages other nodes publish (their Dest
	// is the qualified topic).
	OnTopic(func(m *persistence.Message))
}

// SharedSubscription is a durable subscription as the shared database keeps it.
type SharedSubscription struct {
	Container       string
	Key             persistence.SubKey
	Topic, Selector string // Topic qualified ("topic://NAME")
	Created         time.Time
	ActiveNode      string // the node attached, "" for none (DurableSubscriptions)
	Pending         int64  // stored messages (DurableSubscriptions)
}

// Errors of SharedEngine's durable calls.
var (
	ErrSharedInUse    = errors.New("broker: durable subscription in use on another node")
	ErrSharedNotFound = errors.New("broker: no such durable subscription")
)

// sharedContainer is the database container of durable subscription key.
func sharedContainer(key persistence.SubKey) string { return "durable://" + key.String() }

// sharedDurables are this node's views of shared durable subscriptions, by key.
type sharedDurables struct {
	mu   sync.Mutex
	subs map[persistence.SubKey]*sharedDurable
	// byContainer finds a view by the database's notification.
	byContainer map[string]*sharedDurable
}

// sharedDurable is one durable subscription as this node serves it.
type sharedDurable struct {
	key       persistence.SubKey
	container string
	topic     string // the topic's name
	view      *destinations.QueueDest
	consumer  *destinations.Consumer // attached here, nil for none; guarded by sharedDurables.mu
}

// isSharedTopic tells whether a SEND to d goes through the shared database: every
// topic but temporary and advisory ones (node-local), and streams (split off before).
func isSharedTopic(d destinations.Name) bool {
	return d.Kind == destinations.Topic && !advisory.IsAdvisory(d)
}

// remoteTopic hands a topic message another node published to this node's
// subscribers of its topic (they have no noLocal sender here).
func (b *Broker) remoteTopic(m *persistence.Message) {
	name, ok := strings.CutPrefix(m.Dest, persistence.TopicPrefix)
	if !ok {
		return
	}
	b.mu.RLock()
	t := b.topics[name]
	wild := len(b.wildSubs) > 0
	b.mu.RUnlock()
	if t == nil && !wild {
		return // nobody here listens
	}
	if t == nil {
		t = b.topic(name)
	}
	if t.IsStream() {
		return
	}
	m.Seq = 0 // the topic sequences it here
	t.Publish(m, nil)
}

// subscribeShared attaches s to the shared durable subscription key of r.
func (c *Conn) subscribeShared(ctx context.Context, r SubscribeRequest, s *Subscription, key persistence.SubKey) error {
	sel := ""
	if r.Selector != nil {
		sel = r.Selector.String()
	}
	b := c.b
	b.shDur.mu.Lock()
	defer b.shDur.mu.Unlock()
	d := b.shDur.subs[key]
	if d != nil && d.consumer != nil {
		return errorf(ErrDurableInUse, "Durable consumer is in use for client: %s and subscriptionName: %s", key.ClientID, key.Name)
	}
	container := sharedContainer(key)
	created, replaced, err := b.shared.SubscribeDurable(ctx, SharedSubscription{
		Container: container, Key: key, Topic: persistence.TopicName(r.Dest.Name), Selector: sel})
	switch {
	case errors.Is(err, ErrSharedInUse):
		return errorf(ErrDurableInUse, "Durable consumer is in use for client: %s and subscriptionName: %s (on another broker node)", key.ClientID, key.Name)
	case err != nil:
		return storeError(err)
	}
	if d == nil || d.topic != r.Dest.Name {
		view := destinations.NewView(&b.env, key, b.topic(r.Dest.Name))
		view.ShareAs(b.shared, container)
		d = &sharedDurable{key: key, container: container, topic: r.Dest.Name, view: view}
		b.shDur.subs[key] = d
		b.shDur.byContainer[container] = d
	}
	if created || replaced {
		b.log.Info("durable subscription created in the shared database", slog.String("clientID", key.ClientID),
			slog.String("name", key.Name), slog.String("topic", r.Dest.String()), slog.Bool("replaced", replaced))
	}
	d.consumer = &s.Consumer
	d.view.AddConsumer(&s.Consumer)
	s.q, s.shDurable = d.view, d
	return nil
}

// detachShared records that s, a consumer of a shared durable subscription, went
// (its view gave its messages back already).
func (b *Broker) detachShared(s *Subscription) {
	d := s.shDurable
	b.shDur.mu.Lock()
	if d.consumer == &s.Consumer {
		d.consumer = nil
	}
	b.shDur.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.shared.DetachDurable(ctx, d.container); err != nil {
		b.log.Warn("shared durable subscription: detaching failed; other nodes may attach once this node's registration lapses",
			slog.String("clientID", d.key.ClientID), slog.String("name", d.key.Name), slog.Any("err", err))
	}
}

// unsubscribeShared deletes the shared durable subscription key (see
// unsubscribeDurable for the styles).
func (c *Conn) unsubscribeShared(ctx context.Context, r UnsubscribeRequest, key persistence.SubKey) error {
	b := c.b
	container := sharedContainer(key)
	if b.authorizing() {
		subs, err := b.shared.DurableSubscriptions(ctx)
		if err != nil {
			return storeError(err)
		}
		for _, sub := range subs {
			t := destinations.Name{Kind: destinations.Topic, Name: strings.TrimPrefix(sub.Topic, persistence.TopicPrefix)}
			if sub.Container == container && !b.sec.Authorize(c.subject, security.Topic, t.Name, security.Read) {
				return c.denied(security.Read, t)
			}
		}
	}
	if r.DurableStyle != DurableActiveMQ {
		if s := c.subs[r.ID]; s != nil {
			c.unsubscribe(s)
		}
	}
	b.shDur.mu.Lock()
	d := b.shDur.subs[key]
	if d != nil && d.consumer != nil {
		s := d.consumer.Owner.(*Subscription)
		if s.conn != c || r.DurableStyle == DurableActiveMQ {
			b.shDur.mu.Unlock()
			return errorf(ErrDurableInUse, "Durable consumer is in use")
		}
		b.shDur.mu.Unlock()
		c.unsubscribe(s)
		b.shDur.mu.Lock()
	}
	defer b.shDur.mu.Unlock()
	err := b.removeSharedLocked(ctx, key)
	switch {
	case errors.Is(err, ErrSharedNotFound):
		return errorf(ErrUnknownSubscription, "No durable subscription exists for clientID: %s and subscriptionName: %s", key.ClientID, key.Name)
	case errors.Is(err, ErrSharedInUse):
		return errorf(ErrDurableInUse, "Durable consumer is in use (on another broker node)")
	case err != nil:
		return storeError(err)
	}
	return nil
}

// removeSharedLocked deletes the shared durable subscription key, which has no
// consumer on this node, from the database and from this node. The caller holds
// b.shDur.mu.
func (b *Broker) removeSharedLocked(ctx context.Context, key persistence.SubKey) error {
	container := sharedContainer(key)
	if err := b.shared.UnsubscribeDurable(ctx, container); err != nil {
		return err
	}
	if d := b.shDur.subs[key]; d != nil {
		delete(b.shDur.subs, key)
		delete(b.shDur.byContainer, container)
	}
	b.log.Info("durable subscription removed from the shared database", slog.String("clientID", key.ClientID), slog.String("name", key.Name))
	return nil
}

// removeSharedDurable is RemoveDurableSubscription in shared mode.
func (b *Broker) removeSharedDurable(ctx context.Context, key persistence.SubKey) error {
	b.shDur.mu.Lock()
	defer b.shDur.mu.Unlock()
	if d := b.shDur.subs[key]; d != nil && d.consumer != nil {
		return ErrSharedInUse
	}
	return b.removeSharedLocked(ctx, key)
}

// sharedDurableStats lists the shared database's durable subscriptions.
func (b *Broker) sharedDurableStats() []DurableStats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subs, err := b.shared.DurableSubscriptions(ctx)
	if err != nil {
		b.log.Warn("listing the shared durable subscriptions failed", slog.Any("err", err))
		return nil
	}
	out := make([]DurableStats, len(subs))
	for i, s := range subs {
		out[i] = DurableStats{ClientID: s.Key.ClientID, Name: s.Key.Name,
			Topic:    destinations.Name{Kind: destinations.Topic, Name: strings.TrimPrefix(s.Topic, persistence.TopicPrefix)}.String(),
			Selector: s.Selector, Active: s.ActiveNode != "", Backlog: int(s.Pending), Created: s.Created}
	}
	return out
}

// sharedViews are this node's views of shared durable subscriptions.
func (b *Broker) sharedViews() []*destinations.QueueDest {
	b.shDur.mu.Lock()
	defer b.shDur.mu.Unlock()
	out := make([]*destinations.QueueDest, 0, len(b.shDur.subs))
	for _, d := range b.shDur.subs {
		out = append(out, d.view)
	}
	return out
}
