// Package sharedmode is the broker's side of shared mode (persistenceAdapter.jdbc.mode:
// shared): several broker nodes serve the queues, topics and durable subscriptions of
// one database, which is the queue engine (Engine).
//
// A SEND to a queue is stored in the database (Node.Send), every node's queue claims
// from it for its local consumers (destinations/shared.go), and the node passes on the
// database's notifications to its queues (Node.Start). Temporary queues stay local.
//
// Sends are batched: every SEND waiting for the database shares the next transaction,
// one transaction at a time, and so its WAL flush, which is what a SEND costs (4
// producers with a receipt each, one node: 2,200 msgs/s this way, 1,500 with four
// transactions in flight at once), and a connection's messages get their IDs (the
// queue's order) in the order it sent them.
//
// Topics. A SEND to a topic goes to the database in the transaction of the node's
// other shared SENDs: it is stored there once per durable subscription whose selector
// it matches, and passed to the other nodes, which hand it to their non-durable
// subscribers (Host.Heard); once it is committed, this node hands it to its own. A
// durable subscription is a container of the database, served on whichever node its
// consumer attaches to (one live node at a time) through a shared view
// (Node.Subscribe): it survives the node, and its messages wait in the database while
// no consumer is attached.
//
// What is not shared yet: transactions over shared destinations and scheduled sends to
// them (the broker refuses them), duplicate detection (node-local).
//
// The broker keeps one Node (New; none outside shared mode), asks it which
// destinations are shared (Split), hands it their SENDs, the acknowledgements of
// auto-acknowledging subscribers, and the durable subscriptions' lifecycle. The Node
// asks its Host for the node's queues and topics, and imports nothing of the broker.
//
// Lock order: the Node's own lock (its durable subscriptions) before the broker's
// (Host.Topic is called under it) and the locks of destinations and consumers. The
// broker holds its lock when it calls Share only.
package sharedmode

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
)

// Engine is the engine of shared mode: shared queues, and the topics' durable
// subscriptions and messages across nodes.
type Engine interface {
	destinations.SharedQueues
	// SubscribeDurable attaches this node to the durable subscription sub (Container,
	// Key, Topic, Selector), creating it, or replacing it when its topic or selector
	// changed; ErrInUse while another live node is attached.
	SubscribeDurable(ctx context.Context, sub Subscription) (created, replaced bool, err error)
	// DetachDurable records that this node's consumer of container went.
	DetachDurable(ctx context.Context, container string) error
	// UnsubscribeDurable deletes the subscription of container and its messages;
	// ErrNotFound, or ErrInUse while another live node is attached.
	UnsubscribeDurable(ctx context.Context, container string) error
	// DurableSubscriptions lists every durable subscription of the database.
	DurableSubscriptions(ctx context.Context) ([]Subscription, error)
	// OnTopic sets the receiver of the topic messages other nodes publish (their Dest
	// is the qualified topic).
	OnTopic(func(m *persistence.Message))
}

// Subscription is a durable subscription as the shared database keeps it.
type Subscription struct {
	Container       string
	Key             persistence.SubKey
	Topic, Selector string // Topic qualified ("topic://NAME")
	Created         time.Time
	ActiveNode      string // the node attached, "" for none (DurableSubscriptions)
	Pending         int64  // stored messages (DurableSubscriptions)
}

// Errors of Engine's durable calls.
var (
	ErrInUse    = errors.New("broker: durable subscription in use on another node")
	ErrNotFound = errors.New("broker: no such durable subscription")
)

// Host is what shared mode asks of the broker node it runs in.
type Host interface {
	// Queue is the node's queue called name, nil when there is none.
	Queue(name string) *destinations.QueueDest
	// Queues are the node's queues.
	Queues() []*destinations.QueueDest
	// Topic is the node's topic called name, made if there is none.
	Topic(name string) *destinations.TopicDest
	// Heard is the node's topic called name when a subscriber of the node may hear it
	// (made when only a wildcard subscription may), nil when nobody listens.
	Heard(name string) *destinations.TopicDest
}

// Config is what New needs.
type Config struct {
	Engine Engine
	Host   Host
	// Env is what the node's destinations are made with: the durable subscriptions'
	// views are, and its Background and Done bound the Node's goroutines.
	Env *destinations.Env
	Log *slog.Logger
}

// Node is this broker node's side of shared mode.
type Node struct {
	eng  Engine
	host Host
	env  *destinations.Env
	log  *slog.Logger
	out  sender
	dur  durables
}

// New returns the Node of cfg; topic messages other nodes publish reach the Host from
// now on, the database's notifications once Start is called.
func New(cfg Config) *Node {
	n := &Node{eng: cfg.Engine, host: cfg.Host, env: cfg.Env, log: cfg.Log}
	n.out = sender{eng: cfg.Engine, wg: cfg.Env.Background}
	n.dur.subs = map[persistence.SubKey]*Durable{}
	n.dur.byContainer = map[string]*Durable{}
	cfg.Engine.OnTopic(n.remoteTopic)
	return n
}

// Share makes q, a queue the node made (not a temporary one), a shared queue.
func (n *Node) Share(q *destinations.QueueDest) { q.Share(n.eng) }

// Split parts dests into the shared queues and topics and the rest: every queue, and
// every topic but temporary and advisory ones (node-local). Streams are split off
// before. A nil Node (not in shared mode) shares none.
func (n *Node) Split(dests []destinations.Name) (shared, rest []destinations.Name) {
	if n == nil {
		return nil, dests
	}
	for _, d := range dests {
		if d.Kind == destinations.Queue || d.Kind == destinations.Topic && !advisory.IsAdvisory(d) {
			shared = append(shared, d)
		} else {
			rest = append(rest, d)
		}
	}
	return shared, rest
}

// Send stores msgs (each with its Dest, a qualified shared queue or topic) in the
// database and calls done with the result once it is committed; then the node's
// subscribers of the topics get theirs, with from as the sender (nil for none).
func (n *Node) Send(from destinations.Sink, msgs []*persistence.Message, done func(error)) {
	var topics []*persistence.Message
	for _, m := range msgs {
		if strings.HasPrefix(m.Dest, persistence.TopicPrefix) {
			topics = append(topics, m)
		}
	}
	if len(topics) > 0 {
		answer := done
		done = func(err error) {
			if err == nil {
				for _, m := range topics {
					name := strings.TrimPrefix(m.Dest, persistence.TopicPrefix)
					m.Seq = 0 // the topic sequences it
					n.host.Topic(name).Publish(m, from)
				}
			}
			answer(err)
		}
	}
	n.out.send(msgs, done)
}

// sender batches the SENDs waiting for the database into one Send, one transaction at
// a time (see the package comment).
type sender struct {
	eng      destinations.SharedQueues
	wg       *sync.WaitGroup
	mu       sync.Mutex
	waiting  []pendingSend
	flushing bool
}

type pendingSend struct {
	msgs []*persistence.Message
	done func(error)
}

// send queues msgs for the next Send; done is called with its result.
func (s *sender) send(msgs []*persistence.Message, done func(error)) {
	s.mu.Lock()
	s.waiting = append(s.waiting, pendingSend{msgs, done})
	if s.flushing {
		s.mu.Unlock()
		return
	}
	s.flushing = true
	s.mu.Unlock()
	s.wg.Add(1)
	go s.flush()
}

// flush sends what waits, one transaction at a time, until nothing does.
func (s *sender) flush() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		batch := s.waiting
		s.waiting = nil
		if len(batch) == 0 {
			s.flushing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		var msgs []*persistence.Message
		for _, w := range batch {
			msgs = append(msgs, w.msgs...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := s.eng.Send(ctx, msgs)
		cancel()
		for _, w := range batch {
			w.done(err)
		}
	}
}

// Start passes the database's notifications on to the queues they name ("" to every
// queue) until Env.Done is closed.
func (n *Node) Start() {
	notes := n.eng.Notifications()
	n.env.Background.Add(1)
	go func() {
		defer n.env.Background.Done()
		for {
			select {
			case <-n.env.Done:
				return
			case dest, ok := <-notes:
				if !ok {
					return
				}
				n.notify(dest)
			}
		}
	}()
}

func (n *Node) notify(dest string) {
	if dest == "" {
		for _, q := range n.queues() {
			q.Notify()
		}
		return
	}
	if strings.HasPrefix(dest, durablePrefix) {
		n.dur.mu.Lock()
		d := n.dur.byContainer[dest]
		n.dur.mu.Unlock()
		if d != nil {
			d.view.Notify()
		}
		return
	}
	name, ok := strings.CutPrefix(dest, persistence.QueuePrefix)
	if !ok {
		return
	}
	if q := n.host.Queue(name); q != nil {
		q.Notify()
	}
}

// queues are the node's queues and shared durable subscriptions' views.
func (n *Node) queues() []*destinations.QueueDest {
	return append(n.host.Queues(), n.views()...)
}

// Shutdown gives back what the shared queues claimed and did not dispatch.
func (n *Node) Shutdown() {
	for _, q := range n.queues() {
		q.ShutdownShared()
	}
}

// AutoAck acknowledges in the database the messages of q, a shared queue, written to
// auto-acknowledging subscribers. A failure is logged: the client was answered long
// ago, and a message whose lease stands is given back (it may come again).
func (n *Node) AutoAck(q *destinations.QueueDest, ds []*destinations.Delivery) {
	q.SettleShared(ds, true, func(err error) {
		if err != nil {
			n.log.Warn("shared queue: an auto-acknowledged message could not be acknowledged in the database",
				slog.String("dest", q.ClientName()), slog.Int("messages", len(ds)), slog.Any("err", err))
		}
	})
}

// remoteTopic hands a topic message another node published to this node's
// subscribers of its topic (they have no noLocal sender here).
func (n *Node) remoteTopic(m *persistence.Message) {
	name, ok := strings.CutPrefix(m.Dest, persistence.TopicPrefix)
	if !ok {
		return
	}
	t := n.host.Heard(name)
	if t == nil || t.IsStream() {
		return
	}
	m.Seq = 0 // the topic sequences it here
	t.Publish(m, nil)
}
