package broker

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// queue is a point-to-point destination: each message goes to exactly one consumer,
// round-robin among the consumers that have prefetch credit.
//
// Memory stays bounded: the queue holds at most memLimit bytes of messages (pending and
// dispatched-but-unacknowledged). A persistent message that arrives over the limit is
// written to the store only ("paged out"), and is read back in sequence order as
// consumers drain the queue (ActiveMQ's store cursor). Non-persistent messages cannot be
// paged out; over the broker-wide limit the producer gets an error instead.
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

	memLimit int64
	memBytes int64

	// Paging state: while paged, every stored message with a sequence above pageAfter
	// is in the store only, except those whose write is still in flight (inflight).
	paged        bool
	pageAfter    uint64
	pagingNow    bool
	pagedAccepts uint64
	inflight     map[uint64]struct{}
	pagedOut     int64 // messages in the store only
}

// pageBatch is the most messages one page-in reads.
const pageBatch = 2000

func newQueue(b *Broker, name string) *queue {
	n := destinations.Name{Kind: destinations.Queue, Name: name}
	return &queue{
		b:        b,
		name:     name,
		dest:     n.Qualified(),
		stomp:    n.String(),
		pending:  destinations.NewPending(true),
		nextSeq:  1,
		memLimit: b.destMemoryLimit,
		inflight: map[uint64]struct{}{},
	}
}

// errMemoryFull is returned for a non-persistent message that would pass the broker's
// memory limit.
var errMemoryFull = errors.New("broker: memory limit reached")

// accept assigns the message its sequence and queues it. The entry is ready at once for
// a message that needs no store write; otherwise the caller settles it with commitDone
// when the write completes. A persistent message over the memory limit is not kept in
// memory at all: accept returns a nil entry and the message's sequence is settled with
// pagedDone.
func (q *queue) accept(m *persistence.Message, ready bool) (*destinations.Entry, error) {
	size := int64(m.Size())
	q.mu.Lock()
	defer q.mu.Unlock()
	over := q.memBytes+size > q.memLimit || !q.b.mem.fits(size)
	if over && !m.Persistent {
		return nil, errMemoryFull
	}
	m.Dest = q.dest
	m.Seq = q.nextSeq
	q.nextSeq++
	q.enqueued++
	if m.Persistent && (q.paged || over) {
		if !q.paged {
			q.paged = true
			q.pageAfter = m.Seq - 1
			q.b.log.Info("queue over its memory limit: paging new messages to the store",
				slog.String("dest", q.stomp), slog.Int64("memoryLimit", q.memLimit))
		}
		q.inflight[m.Seq] = struct{}{}
		q.pagedAccepts++
		q.pagedOut++
		return nil, nil
	}
	e := &destinations.Entry{Msg: m, Ready: ready, Size: size}
	q.hold(size)
	q.pending.Push(e)
	if ready {
		q.dispatchLocked()
	}
	return e, nil
}

func (q *queue) hold(size int64) {
	q.memBytes += size
	q.b.mem.add(size)
}

func (q *queue) release(size int64) {
	q.memBytes -= size
	q.b.mem.add(-size)
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

// pagedDone settles a paged-out message whose store write finished.
func (q *queue) pagedDone(seq uint64, err error) {
	q.mu.Lock()
	delete(q.inflight, seq)
	if err != nil {
		q.enqueued--
		q.pagedOut--
	}
	q.maybePageInLocked()
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
			break
		}
		if e.Failed {
			q.pending.Pop()
			q.release(e.Size)
			continue
		}
		if !e.Ready {
			break
		}
		s := q.pickLocked()
		if s == nil {
			break
		}
		q.pending.Pop()
		s.credit.Add(-1)
		e.Deliveries++
		s.conn.push(&Delivery{Sub: s, Msg: e.Msg, Destination: q.stomp, Redelivered: e.Redelivered, DeliveryCount: e.Deliveries, entry: e, q: q})
	}
	q.maybePageInLocked()
}

// maybePageInLocked starts reading paged-out messages back when consumers have drained
// the queue to half its memory limit.
func (q *queue) maybePageInLocked() {
	if !q.paged || q.pagingNow || len(q.consumers) == 0 || q.memBytes > q.memLimit/2 || q.b.mem.over() {
		return
	}
	q.pagingNow = true
	q.b.wg.Add(1)
	go q.pageIn()
}

var errStopScan = errors.New("stop scan")

// pageIn reads the next paged-out messages from the store into memory, in order, up to
// half the memory limit, never past a message whose write is still in flight.
func (q *queue) pageIn() {
	defer q.b.wg.Done()
	q.mu.Lock()
	after := q.pageAfter
	bound := uint64(math.MaxUint64)
	for s := range q.inflight {
		bound = min(bound, s)
	}
	accepts := q.pagedAccepts
	budget := max(q.memLimit/2-q.memBytes, 1)
	q.mu.Unlock()

	var got []*destinations.Entry
	var loaded int64
	last, complete := after, true
	err := q.b.store.Scan(context.Background(), q.dest, after, pageBatch, func(m *persistence.Message) error {
		if m.Seq >= bound {
			complete = false
			return errStopScan
		}
		c := m.Clone()
		size := int64(c.Size())
		got = append(got, &destinations.Entry{Msg: c, Ready: true, Size: size,
			Redelivered: c.RedeliveryCount > 0, Deliveries: c.RedeliveryCount})
		last = m.Seq
		loaded += size
		if loaded >= budget || len(got) == pageBatch {
			complete = false
			return errStopScan
		}
		return nil
	})
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pagingNow = false
	if err != nil && !errors.Is(err, errStopScan) {
		q.b.log.Error("paging messages in from the store failed", slog.String("dest", q.stomp), slog.Any("err", err))
		return
	}
	for _, e := range got {
		q.hold(e.Size)
		q.pending.Push(e)
	}
	q.pagedOut -= int64(len(got))
	q.pageAfter = last
	if complete && len(q.inflight) == 0 && q.pagedAccepts == accepts {
		q.paged = false
		q.pagedOut = 0
	}
	q.dispatchLocked()
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

// acked accounts for acknowledged messages leaving memory; the store write is the caller's.
func (q *queue) acked(n int, bytes int64) {
	q.mu.Lock()
	q.dequeued += int64(n)
	q.release(bytes)
	q.maybePageInLocked()
	q.mu.Unlock()
}

func (q *queue) stats() DestinationStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	stored, _ := q.b.store.Stats(q.dest)
	return DestinationStats{
		Name:        q.stomp,
		Pending:     q.pending.Len() + int(q.pagedOut),
		Consumers:   len(q.consumers),
		Enqueued:    q.enqueued,
		Dequeued:    q.dequeued,
		Stored:      stored,
		MemoryBytes: q.memBytes,
	}
}
