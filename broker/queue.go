package broker

import (
	"sync"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// queue is a point-to-point destination: each message goes to exactly one consumer,
// round-robin among the consumers that have prefetch credit.
type queue struct {
	b     *Broker
	name  string
	dest  string // qualified store name
	stomp string // "/queue/<name>"

	mu        sync.Mutex
	pending   *destinations.Pending
	consumers []*Subscription
	rr        int
	nextSeq   uint64
	enqueued  int64
	dequeued  int64
}

func newQueue(b *Broker, name string) *queue {
	n := destinations.Name{Kind: destinations.Queue, Name: name}
	return &queue{
		b:       b,
		name:    name,
		dest:    n.Qualified(),
		stomp:   n.String(),
		pending: destinations.NewPending(true),
		nextSeq: 1,
	}
}

// accept assigns the message its sequence and queues it. The entry is ready at once for
// a message that needs no store write; otherwise the caller marks it ready (or failed)
// when the write completes, through commitDone.
func (q *queue) accept(m *persistence.Message, ready bool) *destinations.Entry {
	q.mu.Lock()
	m.Dest = q.dest
	m.Seq = q.nextSeq
	q.nextSeq++
	e := &destinations.Entry{Msg: m, Ready: ready}
	q.pending.Push(e)
	q.enqueued++
	if ready {
		q.dispatchLocked()
	}
	q.mu.Unlock()
	return e
}

// commitDone settles an entry whose store write finished.
func (q *queue) commitDone(e *destinations.Entry, err error) {
	q.mu.Lock()
	if err != nil {
		e.Failed = true
		q.enqueued--
	} else {
		e.Ready = true
	}
	q.dispatchLocked()
	q.mu.Unlock()
}

func (q *queue) dispatch() {
	q.mu.Lock()
	q.dispatchLocked()
	q.mu.Unlock()
}

func (q *queue) dispatchLocked() {
	for len(q.consumers) > 0 {
		e := q.pending.Peek()
		if e == nil {
			return
		}
		if e.Failed {
			q.pending.Pop()
			continue
		}
		if !e.Ready {
			return
		}
		s := q.pickLocked()
		if s == nil {
			return
		}
		q.pending.Pop()
		s.credit.Add(-1)
		e.Deliveries++
		s.conn.push(&Delivery{Sub: s, Msg: e.Msg, Destination: q.stomp, Redelivered: e.Redelivered, DeliveryCount: e.Deliveries, entry: e, q: q})
	}
}

// pickLocked returns the next consumer in round-robin order that has credit.
func (q *queue) pickLocked() *Subscription {
	n := len(q.consumers)
	for i := 0; i < n; i++ {
		idx := (q.rr + i) % n
		if s := q.consumers[idx]; s.credit.Load() > 0 {
			q.rr = (idx + 1) % n
			return s
		}
	}
	return nil
}

func (q *queue) addConsumer(s *Subscription) {
	q.mu.Lock()
	q.consumers = append(q.consumers, s)
	q.dispatchLocked()
	q.mu.Unlock()
}

func (q *queue) removeConsumer(s *Subscription) {
	q.mu.Lock()
	for i, c := range q.consumers {
		if c == s {
			q.consumers = append(q.consumers[:i], q.consumers[i+1:]...)
			break
		}
	}
	if q.rr >= len(q.consumers) {
		q.rr = 0
	}
	q.mu.Unlock()
}

// requeue gives dispatched entries back; delivered ones come back flagged redelivered.
// They go before every later message, so other consumers get them first.
func (q *queue) requeue(ds []*Delivery) {
	q.mu.Lock()
	for _, d := range ds {
		e := d.entry
		if d.written {
			e.Redelivered = true
			e.Msg.RedeliveryCount = e.Deliveries
		} else {
			e.Deliveries--
		}
		q.pending.Requeue(e)
	}
	q.dispatchLocked()
	q.mu.Unlock()
}

// acked counts acknowledged messages; the store write is the caller's.
func (q *queue) acked(n int) {
	q.mu.Lock()
	q.dequeued += int64(n)
	q.mu.Unlock()
}

func (q *queue) stats() DestinationStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	stored, _ := q.b.store.Stats(q.dest)
	return DestinationStats{
		Name:      q.stomp,
		Pending:   q.pending.Len(),
		Consumers: len(q.consumers),
		Enqueued:  q.enqueued,
		Dequeued:  q.dequeued,
		Stored:    stored,
	}
}
