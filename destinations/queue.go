package destinations

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// QueueDest is a point-to-point destination: each message goes to exactly one consumer,
// round-robin among the consumers that have prefetch credit.
//
// Memory stays bounded: the queue holds at most memLimit bytes of messages (pending and
// dispatched-but-unacknowledged). A persistent message that arrives over the limit is
// written to the store only ("paged out"), and is read back in sequence order as
// consumers drain the queue (ActiveMQ's store cursor). Non-persistent messages cannot be
// paged out; over the broker-wide limit the producer gets an error instead.
type QueueDest struct {
	env    *Env
	name   string
	dest   string // qualified store name
	client string // the name as clients know it (Name.String()), carried by every delivery
	// origin is where its messages were sent: the queue itself, or the topic of a
	// durable subscription's view (the dead-letter strategy names the DLQ after it).
	origin Name

	mu        sync.Mutex
	pending   *Pending
	consumers []*Consumer
	rr        int
	nextSeq   uint64
	enqueued  int64
	dequeued  int64
	// dispatched counts deliveries, inFlight those not yet acknowledged or given back,
	// expired the messages that expired waiting (for Stats).
	dispatched int64
	inFlight   int
	expired    int64

	policy   policy.Policy
	memLimit int64
	memBytes int64

	groups map[string]*Consumer // JMSXGroupID -> owner

	// Dispatch high-water mark, kept in the store so that after a restart the messages
	// that may have been delivered before it come back flagged redelivered.
	dispatchHWM    uint64
	markerWritten  uint64
	markerInFlight bool
	markerLogged   time.Time    // the last "dispatch mark failed" log line
	markWaiters    []markWaiter // WhenMarked callers waiting for the mark to be stored
	recoveredHWM   uint64
	hwmHint        atomic.Uint64
	timer          *time.Timer // wakes dispatch for delayed redeliveries
	timerAt        int64
	scratch        []take
	dlqBatch       []*Entry

	// sub is set on a durable subscription's view of its topic: a queue of its own whose
	// messages are the topic's single stored copies, acknowledged with AckSub.
	sub *persistence.SubKey

	// Paging state: while paged, every stored message with a sequence above pageAfter
	// is in the store only, except those whose write is still in flight (inflight).
	paged        bool
	pageAfter    uint64
	pagingNow    bool
	pagedAccepts uint64
	inflight     map[uint64]int64 // sequence -> size
	// pageFloor is the lowest sequence paged out since the running page-in took its
	// snapshot of inflight (MaxUint64: none). Such a message was not in that snapshot,
	// and the writes of two of them may complete in either order: the scan may see a
	// later one whose earlier one is not in the store yet, so the page-in keeps only
	// what it read below pageFloor and never moves pageAfter past an unwritten message.
	pageFloor uint64
	// pagedSettled counts the paged-out writes settled. pageBlocked says that the last
	// page-in read nothing and no write settled while it ran: whatever the store holds
	// after pageAfter waits behind a write in flight, so no page-in starts (it would
	// read nothing again, over and over) until pagedDone settles one.
	pagedSettled uint64
	pageBlocked  bool
	pagedOut     int64 // messages in the store only
	// pagedOutBytes is the size of those (Message.Size): a durable subscription's
	// offline maxPendingBytes counts them with memBytes.
	pagedOutBytes int64
	pagingLogged  time.Time

	lastSwept time.Time // of the expiry sweeper (sweepExpired), which alone uses it
	gc        gcState   // see gc.go

	// What an operator's requests use (manage.go): pagingIdle is closed when a page-in
	// or a claim ends, writesIdle when the last store write in flight completes (for
	// Drain); expired counts the messages that expired here, head remembers the
	// timestamp of the first message held in the store only, dlq marks a dead-letter
	// queue.
	pagingIdle chan struct{}
	writesIdle chan struct{}
	head       headCache
	dlq        atomic.Bool
	// cursors are the sequences of the messages the last browse pages ended at, by
	// id: the next page starts there (manage.go).
	cursors map[string]uint64

	// shared is the engine of a shared queue (shared.go), nil for a local one; sh is
	// its claim bookkeeping.
	shared SharedQueues
	sh     sharedState
}

// MemoryLimitOf is the memory limit a policy gives a destination: its MemoryLimit, or
// none of its own for 0 (the broker-wide memoryUsage still applies).
func MemoryLimitOf(p policy.Policy) int64 {
	if p.MemoryLimit <= 0 {
		return math.MaxInt64
	}
	return int64(p.MemoryLimit)
}

// NewQueue makes the queue called name with policy p (a temporary queue's is its own
// kind's). Its sequences start above seqFloor.
func NewQueue(env *Env, name string, p policy.Policy, seqFloor uint64) *QueueDest {
	n := Name{Kind: Queue, Name: name}
	return &QueueDest{
		env:       env,
		name:      name,
		dest:      n.Qualified(),
		client:    n.String(),
		origin:    n,
		policy:    p,
		pending:   NewPending(p.PrioritizedMessages),
		nextSeq:   max(1, seqFloor),
		memLimit:  MemoryLimitOf(p),
		inflight:  map[uint64]int64{},
		pageFloor: math.MaxUint64,
		groups:    map[string]*Consumer{},
	}
}

// Accept assigns the message its sequence and queues it. The entry is ready at once for
// a message that needs no store write; otherwise the caller settles it with commitDone
// when the write completes. A persistent message over the memory limit is not kept in
// memory at all: accept returns a nil entry and the message's sequence is settled with
// pagedDone.
func (q *QueueDest) Accept(m *persistence.Message, ready bool) (*Entry, error) {
	ExpireAfter(m, q.policy.DefaultTimeToLive)
	size := int64(m.Size())
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gc.removed.Load() {
		return nil, ErrRemoved
	}
	q.gc.touch()
	over := q.memBytes+size > q.memLimit || !q.env.Memory.Fits(size)
	if over && !m.Persistent {
		return nil, ErrMemoryFull
	}
	m.Dest = q.dest
	m.Seq = q.nextSeq
	q.nextSeq++
	q.enqueued++
	if m.Persistent && (q.paged || over) {
		if !q.paged {
			q.paged = true
			q.pageAfter = m.Seq - 1
			q.pageBlocked = false
			q.head = headCache{valid: true, after: q.pageAfter, ts: m.Timestamp}
			if now := q.env.Time(); now.Sub(q.pagingLogged) > time.Minute {
				q.pagingLogged = now
				used, limit := q.env.Memory.Used()
				q.env.Log.Info("queue over its memory limit: paging new messages to the store",
					slog.String("dest", q.client), slog.Int64("memoryLimit", int64(q.policy.MemoryLimit)),
					slog.Int64("memoryUsed", used), slog.Int64("memoryUsage", limit))
			}
		}
		q.inflight[m.Seq] = size
		q.pageFloor = min(q.pageFloor, m.Seq)
		q.pagedAccepts++
		q.pagedOut++
		q.pagedOutBytes += size
		return nil, nil
	}
	e := &Entry{Msg: m, Ready: ready, Size: size}
	q.hold(size)
	q.pending.Push(e)
	if ready {
		q.dispatchLocked()
	}
	return e, nil
}

// StoreAck adds the store write that acknowledges m to batch.
func (q *QueueDest) StoreAck(batch persistence.Batch, m *persistence.Message) {
	if q.sub != nil {
		batch.AckSub(*q.sub, m.Seq)
		return
	}
	batch.Ack(m.Dest, m.Seq)
}

// AcceptView queues a topic message (its sequence already assigned) on a durable
// subscription's view. A stored message over the memory limit stays in the store only.
func (q *QueueDest) AcceptView(m *persistence.Message, ready bool) *Entry {
	size := int64(m.Size())
	q.mu.Lock()
	defer q.mu.Unlock()
	q.enqueued++
	if m.Persistent && (q.paged || q.memBytes+size > q.memLimit || !q.env.Memory.Fits(size)) {
		if !q.paged {
			q.paged = true
			q.pageAfter = m.Seq - 1
			q.pageBlocked = false
		}
		q.inflight[m.Seq] = size
		q.pageFloor = min(q.pageFloor, m.Seq)
		q.pagedAccepts++
		q.pagedOut++
		q.pagedOutBytes += size
		return nil
	}
	e := &Entry{Msg: m, Ready: ready, Size: size}
	q.hold(size)
	q.pending.Push(e)
	if ready {
		q.dispatchLocked()
	}
	return e
}

func (q *QueueDest) hold(size int64) {
	q.memBytes += size
	q.env.Memory.Add(size)
}

func (q *QueueDest) release(size int64) {
	q.memBytes -= size
	q.env.Memory.Add(-size)
	q.env.Space.Notify()
}

// commitDone settles an entry whose store write finished.
func (q *QueueDest) commitDone(e *Entry, err error) {
	q.mu.Lock()
	e.withdraw.Store(nil) // under the lock: DispatchWhileStoring cannot set it after this
	if err != nil {
		e.Failed = true
		q.enqueued--
	} else {
		e.Ready = true
	}
	q.dispatchLocked()
	q.wakeRetireLocked()
	q.mu.Unlock()
}

// DispatchWhileStoring makes an entry whose store write is queued ready for dispatch,
// with withdraw to call when it is acknowledged. If the write already finished
// (commitDone ran first) the entry was dispatchable since then and is left alone: a
// consumer may hold it, so its Withdraw must not change.
func (q *QueueDest) DispatchWhileStoring(e *Entry, withdraw func() bool) {
	q.mu.Lock()
	if !e.Ready && !e.Failed {
		e.withdraw.Store(&withdraw)
		e.Ready = true
		q.dispatchLocked()
	}
	q.mu.Unlock()
}

// AddConsumer adds s to the queue's consumers; false if the collector removed the queue
// (the caller looks it up again).
func (q *QueueDest) AddConsumer(s *Consumer) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gc.removed.Load() {
		return false
	}
	q.consumers = append(q.consumers, s)
	q.dispatchLocked()
	return true
}

// ConsumerCount is the number of the queue's consumers.
func (q *QueueDest) ConsumerCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.consumers)
}

// RemoveConsumer takes s off the queue's consumers; the groups it owned move on.
func (q *QueueDest) RemoveConsumer(s *Consumer) {
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
	var gone []string
	for gid, owner := range q.groups {
		if owner == s {
			delete(q.groups, gid) // the group moves to another consumer
			gone = append(gone, gid)
		}
	}
	if q.shared != nil {
		q.removeConsumerShared(s, gone)
	}
	q.mu.Unlock()
}

// Acked accounts for acknowledged messages leaving memory; the store write is the caller's.
func (q *QueueDest) Acked(n int, bytes int64) {
	q.mu.Lock()
	q.dequeued += int64(n)
	q.inFlight -= n
	q.release(bytes)
	q.maybePageInLocked()
	q.mu.Unlock()
}

// Stats is a snapshot of the queue's counters.
func (q *QueueDest) Stats() Stats {
	st := q.MemoryStats()
	st.Stored, _ = q.env.Store.Stats(q.dest)
	return st
}

// MemoryStats is Stats without Stored, which it does not ask the store for: what the
// queue keeps in memory, for readers that take every queue's often (metrics).
func (q *QueueDest) MemoryStats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := Stats{
		Name:            q.client,
		Pending:         q.pending.Len() + int(q.pagedOut),
		Consumers:       len(q.consumers),
		Enqueued:        q.enqueued,
		Dequeued:        q.dequeued,
		MemoryBytes:     q.memBytes,
		Dispatched:      q.dispatched,
		InFlight:        q.inFlight,
		Expired:         q.expired,
		OldestTimestamp: q.oldestLocked(),
	}
	if q.memLimit != math.MaxInt64 {
		st.MemoryLimit = q.memLimit
	}
	return st
}
