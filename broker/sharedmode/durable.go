package sharedmode

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
)

// ErrAttached is Subscribe's error for a durable subscription whose consumer is
// attached on this node.
var ErrAttached = errors.New("sharedmode: durable subscription has a consumer on this node")

// durablePrefix begins the database container of every durable subscription.
const durablePrefix = "durable://"

// container is the database container of durable subscription key.
func container(key persistence.SubKey) string { return durablePrefix + key.String() }

// durables are this node's views of shared durable subscriptions, by key.
type durables struct {
	mu   sync.Mutex
	subs map[persistence.SubKey]*Durable
	// byContainer finds a view by the database's notification.
	byContainer map[string]*Durable
}

// Durable is one shared durable subscription as this node serves it.
type Durable struct {
	key       persistence.SubKey
	container string
	topic     string // the topic's name
	view      *destinations.QueueDest
	consumer  *destinations.Consumer // attached here, nil for none; guarded by durables.mu
}

// View is the queue the subscription's consumer on this node takes its messages from.
func (d *Durable) View() *destinations.QueueDest { return d.view }

// Subscribe attaches c, a consumer on this node, to the durable subscription key of
// topic (its name) with selector sel ("" for none), creating it, or replacing it when
// its topic or selector changed. It fails with ErrAttached while a consumer of it is
// attached on this node, ErrInUse while one is on another node.
func (n *Node) Subscribe(ctx context.Context, key persistence.SubKey, topic, sel string, c *destinations.Consumer) (*Durable, error) {
	n.dur.mu.Lock()
	defer n.dur.mu.Unlock()
	d := n.dur.subs[key]
	if d != nil && d.consumer != nil {
		return nil, ErrAttached
	}
	cont := container(key)
	created, replaced, err := n.eng.SubscribeDurable(ctx, Subscription{
		Container: cont, Key: key, Topic: persistence.TopicName(topic), Selector: sel})
	if err != nil {
		return nil, err
	}
	if d == nil || d.topic != topic {
		view := destinations.NewView(n.env, key, n.host.Topic(topic))
		view.ShareAs(n.eng, cont)
		d = &Durable{key: key, container: cont, topic: topic, view: view}
		n.dur.subs[key] = d
		n.dur.byContainer[cont] = d
	}
	if created || replaced {
		n.log.Info("durable subscription created in the shared database", slog.String("clientID", key.ClientID),
			slog.String("name", key.Name), slog.String("topic", destinations.Name{Kind: destinations.Topic, Name: topic}.String()),
			slog.Bool("replaced", replaced))
	}
	d.consumer = c
	d.view.AddConsumer(c)
	return d, nil
}

// Detach records that c, the consumer of d on this node, went (d's view gave its
// messages back already).
func (n *Node) Detach(d *Durable, c *destinations.Consumer) {
	n.dur.mu.Lock()
	if d.consumer == c {
		d.consumer = nil
	}
	n.dur.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.eng.DetachDurable(ctx, d.container); err != nil {
		n.log.Warn("shared durable subscription: detaching failed; other nodes may attach once this node's registration lapses",
			slog.String("clientID", d.key.ClientID), slog.String("name", d.key.Name), slog.Any("err", err))
	}
}

// TopicOf is the name of the topic of the durable subscription key, and false when
// the database has no such subscription.
func (n *Node) TopicOf(ctx context.Context, key persistence.SubKey) (string, bool, error) {
	subs, err := n.eng.DurableSubscriptions(ctx)
	if err != nil {
		return "", false, err
	}
	cont := container(key)
	for _, s := range subs {
		if s.Container == cont {
			return strings.TrimPrefix(s.Topic, persistence.TopicPrefix), true, nil
		}
	}
	return "", false, nil
}

// Delete deletes the durable subscription key and its messages from the database and
// from this node. If a consumer of it is attached on this node, attached is called with
// it first (the Node's lock not held): it detaches the consumer (Detach), or returns
// why the subscription may not be deleted, which Delete returns. Delete fails with
// ErrNotFound, or ErrInUse while a consumer is attached on another node.
func (n *Node) Delete(ctx context.Context, key persistence.SubKey, attached func(*destinations.Consumer) error) error {
	n.dur.mu.Lock()
	if d := n.dur.subs[key]; d != nil && d.consumer != nil {
		c := d.consumer
		n.dur.mu.Unlock()
		if err := attached(c); err != nil {
			return err
		}
		n.dur.mu.Lock()
	}
	defer n.dur.mu.Unlock()
	cont := container(key)
	if err := n.eng.UnsubscribeDurable(ctx, cont); err != nil {
		return err
	}
	if d := n.dur.subs[key]; d != nil {
		delete(n.dur.subs, key)
		delete(n.dur.byContainer, cont)
	}
	n.log.Info("durable subscription removed from the shared database", slog.String("clientID", key.ClientID), slog.String("name", key.Name))
	return nil
}

// Stats lists the shared database's durable subscriptions (none when it cannot be
// read: that is logged).
func (n *Node) Stats() []durable.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subs, err := n.eng.DurableSubscriptions(ctx)
	if err != nil {
		n.log.Warn("listing the shared durable subscriptions failed", slog.Any("err", err))
		return nil
	}
	out := make([]durable.Stats, len(subs))
	for i, s := range subs {
		out[i] = durable.Stats{ClientID: s.Key.ClientID, Name: s.Key.Name,
			Topic:    destinations.Name{Kind: destinations.Topic, Name: strings.TrimPrefix(s.Topic, persistence.TopicPrefix)}.String(),
			Selector: s.Selector, Active: s.ActiveNode != "", Backlog: int(s.Pending), Created: s.Created}
	}
	return out
}

// views are this node's views of shared durable subscriptions.
func (n *Node) views() []*destinations.QueueDest {
	n.dur.mu.Lock()
	defer n.dur.mu.Unlock()
	out := make([]*destinations.QueueDest, 0, len(n.dur.subs))
	for _, d := range n.dur.subs {
		out = append(out, d.view)
	}
	return out
}
