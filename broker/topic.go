package broker

import (
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

	// Subscribers that are behind (slowconsumer.go): the bytes of the messages they
	// keep waiting, against memLimit (0: none of its own); the policies that drop or
	// abort, and what they dropped or aborted.
	memBytes atomic.Int64
	memLimit int64
	pending  destinations.PendingLimit
	slow     *destinations.SlowConsumerPolicy
	gone     chan struct{} // closed when the topic is removed (see close)
	dropped  atomic.Int64
	aborted  atomic.Int64

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
	return &topic{b: b, name: name, dest: n.Qualified(), stomp: n.String(), gone: make(chan struct{})}
}

// close stops what runs for a topic that is removed (the caller removed it from the
// broker's map).
func (t *topic) close() {
	select {
	case <-t.gone:
	default:
		close(t.gone)
	}
}

// applyPolicy takes from p the time-to-live, the collection of an inactive topic and
// what concerns subscribers that are behind.
func (t *topic) applyPolicy(p destinations.Policy) {
	t.ttl = p.DefaultTimeToLive
	if p.GCInactive {
		t.gcTimeout = p.InactiveTimeout
	}
	t.memLimit, t.pending, t.slow = p.MemoryLimit, p.PendingLimit, p.SlowConsumer
	if t.slow != nil {
		go t.watchSlow()
	}
}

// publish hands m to every subscriber whose selector matches; from is the sending
// connection (nil for the broker itself), skipped by noLocal subscribers.
func (t *topic) publish(m *persistence.Message, from *Conn) {
	if m.Seq == 0 {
		t.assign(m)
	}
	var w *waiting
	t.mu.RLock()
	for _, s := range t.subs {
		if (s.noLocal && s.conn == from) || !s.sel.MatchesMessage(m, 1) {
			continue
		}
		w = s.offer(t, m, w)
	}
	t.mu.RUnlock()
	if w != nil {
		w.release()
	}
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
		Name:        t.stomp,
		Consumers:   n,
		Enqueued:    t.enqueued.Load(),
		Dequeued:    t.dequeued.Load(),
		MemoryBytes: t.memBytes.Load(),
		Dropped:     t.dropped.Load(),
		Aborted:     t.aborted.Load(),
	}
}
