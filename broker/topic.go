package broker

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// topic is a publish/subscribe destination: every current subscriber gets every message;
// nothing is kept for subscribers that are not there.
type topic struct {
	b     *Broker
	name  string
	dest  string
	stomp string

	mu   sync.RWMutex
	subs []*Subscription

	// pubMu orders publishing for durable subscriptions: a message's sequence and its
	// place in every durable view are decided together.
	pubMu    sync.Mutex
	durables []*durableSub

	seq      atomic.Uint64
	enqueued atomic.Int64
	dequeued atomic.Int64

	// A stream topic (policy Stream) keeps its messages in the stream log; its plain
	// subscribers (wildcards) get them once appended. See stream.go.
	isStream bool
	streamMu sync.Mutex // serialises opening the stream
	st       atomic.Pointer[stream]

	ttl time.Duration // the policy's defaultTimeToLive, for messages sent without expires

	gc        gcState       // see gc.go
	gcTimeout time.Duration // the policy's inactiveTimeoutBeforeGC if it collects the topic; 0: never
}

func newTopic(b *Broker, name string) *topic {
	n := destinations.Name{Kind: destinations.Topic, Name: name}
	return &topic{b: b, name: name, dest: n.Qualified(), stomp: n.String()}
}

// publish hands m to every subscriber whose selector matches; from is the sending
// connection (nil for the broker itself), skipped by noLocal subscribers.
func (t *topic) publish(m *persistence.Message, from *Conn) {
	if m.Seq == 0 {
		t.assign(m)
	}
	t.mu.RLock()
	for _, s := range t.subs {
		if (s.noLocal && s.conn == from) || !s.sel.MatchesMessage(m, 1) {
			continue
		}
		s.offer(m, t.stomp)
	}
	t.mu.RUnlock()
}

// assign gives m its place in the topic.
func (t *topic) assign(m *persistence.Message) {
	m.Dest = t.dest
	m.Seq = t.seq.Add(1)
	t.enqueued.Add(1)
}

// accept sequences m and hands it to the durable subscriptions, returning the entries
// to settle once batch commits; the caller then publishes it to the others.
func (t *topic) accept(m *persistence.Message, batch func() persistence.Batch) []queuedEntry {
	t.pubMu.Lock()
	defer t.pubMu.Unlock()
	t.assign(m)
	return t.routeDurable(m, batch)
}

func (t *topic) add(s *Subscription) {
	t.mu.Lock()
	t.subs = append(t.subs, s)
	t.mu.Unlock()
}

func (t *topic) remove(s *Subscription) {
	t.mu.Lock()
	for i, c := range t.subs {
		if c == s {
			t.subs = append(t.subs[:i:i], t.subs[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
}

func (t *topic) stats() DestinationStats {
	if st := t.st.Load(); st != nil {
		return st.stats()
	}
	t.mu.RLock()
	n := len(t.subs)
	t.mu.RUnlock()
	return DestinationStats{
		Name:      t.stomp,
		Consumers: n,
		Enqueued:  t.enqueued.Load(),
		Dequeued:  t.dequeued.Load(),
	}
}

// offer gives a topic message to a subscriber: at once if it has credit, otherwise into
// its bounded overflow list (the oldest is dropped past the limit, with a log line the
// first time, as ActiveMQ's pending message limit strategy does).
func (s *Subscription) offer(m *persistence.Message, dest string) {
	s.mu.Lock()
	if len(s.overflow) == 0 && s.credit.Load() > 0 {
		s.credit.Add(-1)
		s.conn.push(&Delivery{Sub: s, Msg: m, Destination: dest, DeliveryCount: 1})
		s.mu.Unlock()
		return
	}
	s.overflow = append(s.overflow, overflowed{m, dest})
	if len(s.overflow) > s.conn.b.topicPendingLimit {
		s.overflow[0] = overflowed{}
		s.overflow = s.overflow[1:]
		s.dropped++
		if s.dropped == 1 {
			s.conn.b.log.Warn("slow topic subscriber: dropping oldest pending messages",
				slog.String("conn", s.conn.ID), slog.String("subscription", s.ID),
				slog.String("dest", s.Dest.String()), slog.Int("limit", s.conn.b.topicPendingLimit))
		}
	}
	s.mu.Unlock()
}

// refill moves overflow messages to the connection while the subscriber has credit.
func (s *Subscription) refill() {
	s.mu.Lock()
	for len(s.overflow) > 0 && s.credit.Load() > 0 {
		o := s.overflow[0]
		s.overflow[0] = overflowed{}
		s.overflow = s.overflow[1:]
		s.credit.Add(-1)
		s.conn.push(&Delivery{Sub: s, Msg: o.m, Destination: o.dest, DeliveryCount: 1})
	}
	if len(s.overflow) == 0 {
		s.overflow = nil
	}
	s.mu.Unlock()
}

type overflowed struct {
	m    *persistence.Message
	dest string
}
