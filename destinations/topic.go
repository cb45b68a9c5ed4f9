package destinations

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// TopicDest is a publish/subscribe destination: every current subscriber gets every message;
// nothing is kept for subscribers that are not there.
type TopicDest struct {
	env    *Env
	name   string
	dest   string
	client string // the name as clients know it (Name.String()), carried by every delivery

	mu   sync.RWMutex
	subs []*Consumer

	// pubMu orders publishing for durable subscriptions: a message's sequence and its
	// place in every durable view are decided together. durables routes to them.
	pubMu    sync.Mutex
	durables DurableRouter

	seq      atomic.Uint64
	enqueued atomic.Int64
	dequeued atomic.Int64

	// Subscribers that are behind (slowconsumer.go): the bytes of the messages they
	// keep waiting, against memLimit (0: none of its own); the policies that drop or
	// abort, and what they dropped or aborted.
	memBytes atomic.Int64
	memLimit int64
	pending  policy.PendingLimit
	slow     *policy.AbortSlowConsumer // nil: none
	// slowAdvisory announces subscribers that fall behind (advisoryForSlowConsumers).
	slowAdvisory bool
	gone         chan struct{} // closed when the topic is removed (see close)
	dropped      atomic.Int64
	aborted      atomic.Int64

	// A stream topic (policy Stream) keeps its messages in the stream log; its plain
	// subscribers (wildcards) get them once appended. See stream.go.
	isStream bool
	streamMu sync.Mutex // serialises opening the stream
	st       atomic.Pointer[Stream]

	ttl time.Duration // the policy's defaultTimeToLive, for messages sent without expires

	gc        gcState       // see gc.go
	gcTimeout time.Duration // the policy's inactiveTimeoutBeforeGC if it collects the topic; 0: never
}

// NewTopic makes the topic called name with policy p, its sequences starting above
// seqFloor. A temporary topic is never a stream.
func NewTopic(env *Env, name string, p policy.Policy, seqFloor uint64, temp bool) *TopicDest {
	n := Name{Kind: Topic, Name: name}
	t := &TopicDest{env: env, name: name, dest: n.Qualified(), client: n.String(), gone: make(chan struct{})}
	t.seq.Store(seqFloor)
	t.applyPolicy(p)
	t.isStream = p.IsStream() && !temp
	return t
}

// Name is the topic's name (without kind prefix).
func (t *TopicDest) Name() string { return t.name }

// SetClientName sets the name clients know the topic by (a temporary topic's is the
// one its owner gave).
func (t *TopicDest) SetClientName(n Name) { t.client = n.String() }

// ClientName is the name clients know the topic by.
func (t *TopicDest) ClientName() string { return t.client }

// Qualified is the topic's store name.
func (t *TopicDest) Qualified() string { return t.dest }

// TTL is the policy's defaultTimeToLive, for messages sent without expires.
func (t *TopicDest) TTL() time.Duration { return t.ttl }

// Seq is the sequence of the topic's last message.
func (t *TopicDest) Seq() uint64 { return t.seq.Load() }

// RecoverSeq raises the topic's sequence to seq, recovered from the store.
func (t *TopicDest) RecoverSeq(seq uint64) { t.seq.Store(max(t.seq.Load(), seq)) }

// IsStream reports whether the topic's policy makes it a stream.
func (t *TopicDest) IsStream() bool { return t.isStream }

// Close stops what runs for a topic that is removed (the caller removed it from the
// broker's map).
func (t *TopicDest) Close() {
	select {
	case <-t.gone:
	default:
		close(t.gone)
	}
}

// applyPolicy takes from p the time-to-live, the collection of an inactive topic and
// what concerns subscribers that are behind.
func (t *TopicDest) applyPolicy(p policy.Policy) {
	t.ttl = p.DefaultTimeToLive
	if p.GCInactiveDestinations {
		t.gcTimeout = p.InactiveTimeoutBeforeGC
	}
	t.memLimit, t.pending = int64(p.MemoryLimit), p.PendingMessageLimit
	if a := p.SlowConsumer.Abort; a.Enabled {
		t.slow = &a
	}
	t.slowAdvisory = p.AdvisoryForSlowConsumers && t.env.Advise != nil
	if t.slow != nil {
		go t.watchSlow()
	}
}

// Publish hands m to every subscriber whose selector matches; from is the sending
// connection (nil for the broker itself), skipped by noLocal subscribers.
func (t *TopicDest) Publish(m *persistence.Message, from Sink) {
	if m.Seq == 0 {
		t.assign(m)
	}
	var w *waiting
	var slow []*Consumer
	t.mu.RLock()
	for _, s := range t.subs {
		if (s.NoLocal && from != nil && s.Sink == from) || !s.Selector.MatchesMessage(m, 1) {
			continue
		}
		var behind bool
		if w, behind = s.offer(t, m, w); behind {
			slow = append(slow, s)
		}
	}
	t.mu.RUnlock()
	if w != nil {
		w.release()
	}
	for _, s := range slow {
		t.env.Advise.SlowConsumer(t, s)
	}
}

// assign gives m its place in the topic.
func (t *TopicDest) assign(m *persistence.Message) {
	m.Dest = t.dest
	m.Seq = t.seq.Add(1)
	t.enqueued.Add(1)
}

// DurableRouter gives a topic's messages to its durable subscriptions (the durable
// package's per-topic set). Route is called with the topic's publish lock held, after
// the message got its sequence: it queues the message for the subscriptions that keep
// it, and reports whether it must be stored (once, listing them in m.Subs) and what to
// settle once that store write commits.
type DurableRouter interface {
	Route(m *persistence.Message) (entries []Accepted, store bool)
	// RouteTo is Route to the subscription key only; found is false if the topic
	// has none of that key.
	RouteTo(m *persistence.Message, key persistence.SubKey) (entries []Accepted, store, found bool)
	Len() int
}

// Accept sequences m and hands it to the durable subscriptions. With store, the caller
// adds m to its store batch and settles entries once the batch commits; it then
// publishes m to the other subscribers.
func (t *TopicDest) Accept(m *persistence.Message) (entries []Accepted, store bool) {
	t.pubMu.Lock()
	defer t.pubMu.Unlock()
	t.assign(m)
	if t.durables == nil {
		return nil, false
	}
	return t.durables.Route(m)
}

// AcceptFor is Accept for the durable subscription key alone (a message imported into
// its backlog); found is false if the topic has no such subscription. The caller
// publishes m to nobody else.
func (t *TopicDest) AcceptFor(m *persistence.Message, key persistence.SubKey) (entries []Accepted, store, found bool) {
	t.pubMu.Lock()
	defer t.pubMu.Unlock()
	if t.durables == nil {
		return nil, false, false
	}
	t.assign(m)
	return t.durables.RouteTo(m, key)
}

// UpdateDurables replaces the topic's durable router with what f makes of it, under
// the publish lock: a message published meanwhile is routed by one or the other.
func (t *TopicDest) UpdateDurables(f func(DurableRouter) DurableRouter) {
	t.pubMu.Lock()
	t.durables = f(t.durables)
	t.pubMu.Unlock()
}

// Dequeued counts n messages consumed from the topic.
func (t *TopicDest) Dequeued(n int64) { t.dequeued.Add(n) }

// Add makes s a subscriber of the topic.
func (t *TopicDest) Add(s *Consumer) {
	t.mu.Lock()
	t.subs = append(t.subs, s)
	t.mu.Unlock()
}

// Remove ends s's subscription to the topic.
func (t *TopicDest) Remove(s *Consumer) {
	t.mu.Lock()
	for i, c := range t.subs {
		if c == s {
			t.subs = append(t.subs[:i:i], t.subs[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
}

// ConsumerCount is the number of the topic's consumers as ActiveMQ counts them for its
// advisories: its subscribers (wildcard ones included) and its durable subscriptions,
// online or not; a stream's subscribers.
func (t *TopicDest) ConsumerCount() int {
	if st := t.st.Load(); st != nil {
		return st.stats().Consumers
	}
	t.mu.RLock()
	n := len(t.subs)
	t.mu.RUnlock()
	t.pubMu.Lock()
	if t.durables != nil {
		n += t.durables.Len()
	}
	t.pubMu.Unlock()
	return n
}

// Stats is a snapshot of the topic's counters. Its Stored is what the store holds of
// the topic for its durable subscriptions: one copy of each message, however many of
// them owe it (the store's counters, kept in memory: no store read).
func (t *TopicDest) Stats() Stats {
	if st := t.st.Load(); st != nil {
		return st.stats()
	}
	t.mu.RLock()
	n := len(t.subs)
	t.mu.RUnlock()
	stored, _ := t.env.Store.Stats(t.dest)
	return Stats{
		Stored:      stored,
		Name:        t.client,
		Consumers:   n,
		Enqueued:    t.enqueued.Load(),
		Dequeued:    t.dequeued.Load(),
		MemoryBytes: t.memBytes.Load(),
		Dropped:     t.dropped.Load(),
		Aborted:     t.aborted.Load(),
	}
}
