package destinations

import (
	"context"
	"errors"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

// What the broker and the durable subscriptions ask of a queue besides dispatch: its
// names, recovery, the removal of its messages, its backlog, and browsing.

// Name is the queue's name (without kind prefix).
func (q *QueueDest) Name() string { return q.name }

// ClientName is the name clients know the queue by.
func (q *QueueDest) ClientName() string { return q.client }

// SetClientName sets the name clients know the queue by (a temporary queue's is the
// one its owner gave).
func (q *QueueDest) SetClientName(n Name) { q.client = n.String() }

// SetTemp makes the queue a temporary one: client is the name its owner gave it,
// real its broker-wide name (Kind TempQueue), under which the events of its messages
// (expiry, dead-lettering) are told.
func (q *QueueDest) SetTemp(client, real Name) {
	q.client = client.String()
	q.origin = real
}

// Policy is the queue's policy.
func (q *QueueDest) Policy() policy.Policy { return q.policy }

// NextSeq is the sequence the queue's next message gets.
func (q *QueueDest) NextSeq() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nextSeq
}

// MemoryUsed reports the bytes the queue holds in memory and its limit.
func (q *QueueDest) MemoryUsed() (used, limit int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.memBytes, q.memLimit
}

// RecoverStored records what the store holds of the queue at start: its last sequence
// and its messages, which stay in the store until a consumer needs them (read in
// pages, so start-up does not depend on how deep the queues are).
func (q *QueueDest) RecoverStored(lastSeq uint64, msgs int64) {
	q.nextSeq = max(q.nextSeq, lastSeq+1)
	if msgs > 0 {
		q.paged, q.pageAfter, q.pagedOut, q.pageBlocked = true, 0, msgs, false
		q.enqueued = msgs
	}
}

// NewView makes the queue through which durable subscription key reads topic t: a
// queue of its own whose messages are the topic's single stored copies, acknowledged
// with AckSub, dispatched, paged, redelivered and dead-lettered as a queue's, with the
// topic's policy.
func NewView(env *Env, key persistence.SubKey, t *TopicDest) *QueueDest {
	p := env.Policy(Topic, t.name)
	q := NewQueue(env, "durable:"+key.String(), env.Policy(Queue, "durable:"+key.String()), 0)
	q.client = t.client
	q.dest = t.dest
	q.origin = Name{Kind: Topic, Name: t.name}
	k := key
	q.sub = &k
	q.policy.Redelivery, q.policy.DeadLetter, q.policy.NackPolicy = p.Redelivery, p.DeadLetter, p.NackPolicy
	q.policy.MemoryLimit, q.memLimit = p.MemoryLimit, MemoryLimitOf(p)
	q.policy.ExpireMessagesPeriod = p.ExpireMessagesPeriod
	return q
}

// RecoverView records that a recovered durable subscription's messages are in the store
// only: n of them (as the store counts them), taking bytes (0 when their size was not
// read).
func (q *QueueDest) RecoverView(n, bytes int64) {
	q.paged, q.pageAfter, q.pageBlocked = true, 0, false
	q.pagedOut, q.pagedOutBytes = n, bytes
}

// Backlog is what waits for the queue's consumers: messages, and their size
// (Message.Size), in memory or in the store only.
func (q *QueueDest) Backlog() (n int64, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(q.pending.Len()) + q.pagedOut, q.memBytes + q.pagedOutBytes
}

// Drop forgets every waiting message, releasing its memory (a deleted temporary queue
// or durable subscription: the store's copies are the caller's).
func (q *QueueDest) Drop() {
	q.mu.Lock()
	q.pending.RemoveIf(func(e *Entry) bool { q.release(e.Size); return true })
	if q.sub != nil {
		q.paged, q.pagedOut, q.pagedOutBytes = false, 0, 0
	}
	q.mu.Unlock()
}

// Browse returns up to max messages waiting on the queue, in dispatch order, without
// consuming them: those held in memory first, then those paged out to the store.
// Messages dispatched to a consumer and not yet acknowledged are not included.
func (q *QueueDest) Browse(ctx context.Context, sel *selector.Selector, max int) ([]*persistence.Message, error) {
	var out []*persistence.Message
	now := q.env.Time().UnixMilli()
	live := func(m *persistence.Message) bool { return m.Expires == 0 || m.Expires > now }
	q.mu.Lock()
	q.pending.Each(func(e *Entry) bool {
		if e.Ready && !e.Failed && live(e.Msg) && sel.MatchesMessage(e.Msg, e.Deliveries+1) {
			out = append(out, e.Msg)
		}
		return len(out) < max
	})
	paged, after := q.paged, q.pageAfter
	q.mu.Unlock()
	if !paged || len(out) >= max {
		return out, nil
	}
	stop := errors.New("enough")
	err := q.env.Store.Scan(ctx, q.dest, after, max, func(m *persistence.Message) error {
		if live(m) && sel.MatchesMessage(m, m.RedeliveryCount+1) {
			out = append(out, m.Clone())
		}
		if len(out) >= max {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return out, err
	}
	return out, nil
}

// StoreAck is one store acknowledgement: of a queue message, or (Sub set) of a topic
// message by a durable subscription.
type StoreAck struct {
	Dest string
	Sub  *persistence.SubKey
	Seq  uint64
}

// AddTo adds the acknowledgement to batch.
func (a StoreAck) AddTo(batch persistence.Batch) {
	if a.Sub != nil {
		batch.AckSub(*a.Sub, a.Seq)
		return
	}
	batch.Ack(a.Dest, a.Seq)
}

// AckOf is the store acknowledgement of m, a message of q.
func (q *QueueDest) AckOf(m *persistence.Message) StoreAck {
	return StoreAck{Dest: m.Dest, Sub: q.sub, Seq: m.Seq}
}

// Env is the environment the queue works in.
func (q *QueueDest) Env() *Env { return q.env }

// Paged reports whether some of the queue's messages are in the store only.
func (q *QueueDest) Paged() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.paged
}
