package destinations

import (
	"context"
	"errors"
	"fmt"
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

// pageBatch is the most messages one page-in reads.
const pageBatch = 2000

// maxScan bounds how many waiting messages one dispatch pass looks at past messages no
// consumer can take (selectors, groups, delays), as ActiveMQ's maxPageSize does.
const maxScan = 1000

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

type take struct {
	e *Entry
	s *Consumer
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

// pagedDone settles a paged-out message whose store write finished.
func (q *QueueDest) pagedDone(seq uint64, err error) {
	q.mu.Lock()
	size := q.inflight[seq]
	delete(q.inflight, seq)
	q.pagedSettled++
	q.pageBlocked = false
	if err != nil {
		q.enqueued--
		q.pagedOut--
		q.pagedOutBytes -= size
	}
	q.maybePageInLocked()
	q.wakeRetireLocked()
	q.mu.Unlock()
}

// Dispatch hands waiting messages to consumers with credit.
func (q *QueueDest) Dispatch() {
	q.mu.Lock()
	q.dispatchLocked()
	q.mu.Unlock()
}

func (q *QueueDest) dispatchLocked() {
	if len(q.consumers) > 0 && q.pending.Len() > 0 {
		q.dispatchPass()
	}
	q.maybePageInLocked()
	if q.shared != nil {
		q.claimLocked()
	}
}

// dispatchPass hands waiting messages to consumers in order. A message no consumer may
// take now (selector, group owner without credit, redelivery delay) is passed over and
// later ones go ahead; a message whose store write is in flight stops the pass, so
// consumers never see messages out of order.
func (q *QueueDest) dispatchPass() {
	var now, wake int64
	takes := q.scratch[:0]
	var expired []*Entry
	skipped := 0
	q.pending.Each(func(e *Entry) bool {
		if e.Failed {
			expired = append(expired, e) // dropped below, without dead-lettering
			return true
		}
		if !e.Ready {
			return false
		}
		if e.Msg.Expires != 0 || e.NotBefore != 0 {
			if now == 0 {
				now = q.env.Time().UnixNano()
			}
			if e.Msg.Expires != 0 && e.Msg.Expires*int64(time.Millisecond) <= now {
				expired = append(expired, e)
				return true
			}
			if e.NotBefore > now {
				if wake == 0 || e.NotBefore < wake {
					wake = e.NotBefore
				}
				skipped++
				return skipped < maxScan
			}
		}
		s := q.pickFor(e)
		if s == nil {
			skipped++
			return skipped < maxScan && q.anyCredit()
		}
		s.Credit.Add(-1)
		takes = append(takes, take{e, s})
		return true
	})
	for _, t := range takes {
		e, s := t.e, t.s
		q.pending.Remove(e)
		e.Deliveries++
		e.NotBefore = 0
		d := &Delivery{Sub: s, Msg: e.Msg, Destination: q.client, Redelivered: e.Redelivered, DeliveryCount: e.Deliveries, entry: e, Queue: q}
		if gid, ok := e.Msg.Headers.Get("JMSXGroupID"); ok {
			if q.groups[gid] != s {
				q.groups[gid] = s
				d.GroupFirst = true
			}
			if seq, ok := e.Msg.Headers.Get("JMSXGroupSeq"); ok && len(seq) > 0 && seq[0] == '-' {
				delete(q.groups, gid) // a negative sequence closes the group
				if q.shared != nil {
					q.releaseGroupsLocked([]string{gid})
				}
			}
		}
		s.Sink.Push(d)
	}
	q.dispatched += int64(len(takes))
	q.inFlight += len(takes)
	clear(takes)
	q.scratch = takes[:0]
	var dead []*Entry
	for _, e := range expired {
		q.pending.Remove(e)
		if e.Failed {
			q.release(e.Size)
			continue
		}
		dead = append(dead, e)
	}
	if len(dead) > 0 {
		q.expire(dead)
	}
	if wake != 0 {
		q.wakeAt(wake)
	}
}

// pickFor chooses the consumer for e: the owner of its message group if it has one;
// otherwise, among the consumers allowed (only the exclusive one if there is one), the
// highest-priority one with credit whose selector matches, round-robin among equals.
func (q *QueueDest) pickFor(e *Entry) *Consumer {
	m := e.Msg
	if gid, ok := m.Headers.Get("JMSXGroupID"); ok {
		if s := q.groups[gid]; s != nil {
			if s.Credit.Load() > 0 && s.Selector.MatchesMessage(m, e.Deliveries+1) {
				return s
			}
			return nil
		}
	}
	if x := q.exclusiveLocked(); x != nil {
		if x.Credit.Load() > 0 && x.Selector.MatchesMessage(m, e.Deliveries+1) {
			return x
		}
		return nil
	}
	n := len(q.consumers)
	var best *Consumer
	bestIdx := 0
	for i := 0; i < n; i++ {
		idx := (q.rr + i) % n
		s := q.consumers[idx]
		if s.Credit.Load() <= 0 || (best != nil && s.Priority <= best.Priority) {
			continue
		}
		if s.Selector != nil && !s.Selector.MatchesMessage(m, e.Deliveries+1) {
			continue
		}
		best, bestIdx = s, idx
	}
	if best != nil {
		q.rr = (bestIdx + 1) % n
	}
	return best
}

// exclusiveLocked is the consumer that takes everything, if any consumer asked to be
// exclusive (or the policy makes all of them exclusive): the highest-priority one, the
// earliest among equals.
func (q *QueueDest) exclusiveLocked() *Consumer {
	var x *Consumer
	for _, s := range q.consumers {
		if (s.Exclusive || q.policy.AllConsumersExclusiveByDefault) && (x == nil || s.Priority > x.Priority) {
			x = s
		}
	}
	return x
}

func (q *QueueDest) anyCredit() bool {
	for _, s := range q.consumers {
		if s.Credit.Load() > 0 {
			return true
		}
	}
	return false
}

// wakeAt makes sure dispatch runs again at t (ns since the epoch).
func (q *QueueDest) wakeAt(t int64) {
	if q.timer != nil && q.timerAt != 0 && q.timerAt <= t {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.timerAt = t
	q.timer = time.AfterFunc(time.Until(time.Unix(0, t)), func() {
		q.mu.Lock()
		q.timerAt = 0
		q.dispatchLocked()
		q.mu.Unlock()
	})
}

// maybePageInLocked starts reading paged-out messages back when consumers have drained
// the queue to half its memory limit.
func (q *QueueDest) maybePageInLocked() {
	if !q.paged || q.pagingNow || q.pageBlocked || len(q.consumers) == 0 || q.memBytes > q.memLimit/2 || q.env.Memory.Over() {
		return
	}
	q.pagingNow = true
	q.env.Background.Add(1)
	go q.pageIn()
}

var errStopScan = errors.New("stop scan")

// pageIn reads the next paged-out messages from the store into memory, in order, up to
// half the memory limit, never past a message whose write is still in flight.
func (q *QueueDest) pageIn() {
	defer q.env.Background.Done()
	q.mu.Lock()
	after := q.pageAfter
	bound := uint64(math.MaxUint64)
	for s := range q.inflight {
		bound = min(bound, s)
	}
	accepts, settled := q.pagedAccepts, q.pagedSettled
	q.pageFloor = math.MaxUint64
	used, limit := q.env.Memory.Used()
	budget := max(min(q.memLimit/2-q.memBytes, limit/4*3-used), 1)
	hwm := q.recoveredHWM
	q.mu.Unlock()

	var got []*Entry
	var loaded int64
	last, complete := after, true
	scan := q.env.Store.Scan
	dest := q.dest
	if q.sub != nil {
		key := *q.sub
		scan = func(ctx context.Context, _ string, after uint64, max int, fn func(*persistence.Message) error) error {
			return q.env.Store.ScanSub(ctx, key, after, max, fn)
		}
	}
	err := scan(context.Background(), dest, after, pageBatch, func(m *persistence.Message) error {
		if m.Seq >= bound {
			complete = false
			return errStopScan
		}
		c := m.Clone()
		size := int64(c.Size())
		deliveries := c.RedeliveryCount
		if deliveries == 0 && c.Seq <= hwm {
			deliveries = 1 // dispatched before the restart: possibly delivered
		}
		got = append(got, &Entry{Msg: c, Ready: true, Size: size,
			Redelivered: deliveries > 0, Deliveries: deliveries})
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
	q.releasePagingLocked()
	if err != nil && !errors.Is(err, errStopScan) {
		q.env.Log.Error("paging messages in from the store failed", slog.String("dest", q.client), slog.Any("err", err))
		return
	}
	// What was paged out after the snapshot is left to the next page-in from the first
	// such message on (see pageFloor): its write, or that of one before it, may have
	// completed only after the scan passed.
	kept := 0
	for kept < len(got) && got[kept].Msg.Seq < q.pageFloor {
		kept++
	}
	if kept < len(got) {
		complete = false
		for _, e := range got[kept:] {
			loaded -= e.Size
		}
		clear(got[kept:])
		got = got[:kept]
		last = after
		if kept > 0 {
			last = got[kept-1].Msg.Seq
		}
	}
	for _, e := range got {
		q.hold(e.Size)
		q.pending.Push(e)
	}
	q.pagedOut -= int64(len(got))
	q.pagedOutBytes = max(q.pagedOutBytes-loaded, 0)
	q.pageAfter = last
	if complete && len(q.inflight) == 0 && q.pagedAccepts == accepts {
		q.paged = false
		q.pagedOut, q.pagedOutBytes = 0, 0
	}
	q.pageBlocked = q.paged && len(got) == 0 && q.pagedSettled == settled
	q.dispatchLocked()
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

// Requeue gives dispatched entries back; delivered ones come back flagged redelivered.
// They go before every later message, so other consumers get them first. Every
// redelivery counts: a message delivered more often than the redelivery policy allows
// goes to the dead-letter queue instead. With delay, a redelivered message waits the
// policy's redelivery delay first (a NACK under the redeliver policy).
func (q *QueueDest) Requeue(ds []*Delivery, delay bool) {
	q.mu.Lock()
	if q.shared != nil {
		var claimed []*Delivery
		ds, claimed = splitClaimed(ds)
		q.requeueShared(claimed)
	}
	q.inFlight -= len(ds)
	var dead []*Entry
	now := q.env.Time()
	for _, d := range ds {
		e := d.entry
		if !d.Written {
			e.Deliveries--
			q.pending.Requeue(e)
			continue
		}
		e.Redelivered = true
		if q.sub == nil { // a durable subscription's message is shared with other subscriptions
			e.Msg.RedeliveryCount = e.Deliveries
		}
		if q.policy.Redelivery.Exceeded(int(e.Deliveries)) {
			dead = append(dead, e)
			continue
		}
		if delay {
			if d := q.policy.Redelivery.Delay(int(e.Deliveries)); d > 0 {
				e.NotBefore = now.Add(d).UnixNano()
			}
		}
		q.pending.Requeue(e)
	}
	if len(dead) > 0 {
		q.retire(dead, fmt.Sprintf("maximum redeliveries (%d) exceeded", q.policy.Redelivery.MaximumRedeliveries), true, DeadLetterMaxRedeliveries)
	}
	q.dispatchLocked()
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

// DispatchHWMHint is a racy read of the mark, only to skip taking the lock when a
// delivery cannot move it.
func (q *QueueDest) DispatchHWMHint() uint64 { return q.hwmHint.Load() }

// MarkWritten records that persistent messages up to seq were written to a consumer.
func (q *QueueDest) MarkWritten(seq uint64) {
	q.mu.Lock()
	if seq > q.dispatchHWM {
		q.dispatchHWM = seq
		q.hwmHint.Store(seq)
		q.writeMarkerLocked()
	}
	q.mu.Unlock()
}

// writeMarkerLocked stores the dispatch high-water mark if it moved, one write in flight
// per queue at a time; the write is asynchronous and batched with other store traffic.
func (q *QueueDest) writeMarkerLocked() {
	if q.markerInFlight || q.dispatchHWM <= q.markerWritten {
		return
	}
	q.markerInFlight = true
	hwm := q.dispatchHWM
	batch := q.env.Store.Begin()
	batch.Add(MarkerMessage(q.MarkerDest(), hwm))
	q.env.Background.Add(1)
	go q.env.Commit(batch, persistence.Async, func(err error) {
		defer q.env.Background.Done()
		q.mu.Lock()
		var ready []func()
		if err != nil {
			// Tried again after a pause (with a log line at most once a minute); the
			// write in flight meanwhile keeps others from starting. Who waits for the
			// mark is let go: the store is failing, and their own writes with it.
			if now := q.env.Time(); now.Sub(q.markerLogged) > time.Minute {
				q.markerLogged = now
				q.env.Log.Error("storing a queue's dispatch mark failed; trying again", slog.String("dest", q.client),
					slog.Duration("in", markerRetryDelay), slog.Any("err", err))
			}
			ready = q.takeMarkWaitersLocked(math.MaxUint64)
			time.AfterFunc(markerRetryDelay, func() {
				q.mu.Lock()
				defer q.mu.Unlock()
				q.markerInFlight = false
				if !q.env.Stopping() {
					q.writeMarkerLocked()
				}
			})
		} else {
			q.markerInFlight = false
			q.markerWritten = hwm
			ready = q.takeMarkWaitersLocked(hwm)
			q.writeMarkerLocked()
		}
		q.mu.Unlock()
		for _, fn := range ready {
			fn()
		}
	})
}

// markWaiter is a WhenMarked caller: fn runs once the stored mark reaches need.
type markWaiter struct {
	need uint64
	fn   func()
}

// WhenMarked calls fn once the stored dispatch mark covers every persistent message
// dispatched from q so far: at once if it does already, else from the store's
// completion of the mark's write (or of its failure). An acknowledgement's answer waits
// for it, so that the messages a client was given before the RECEIPT of an ACK or
// COMMIT come back flagged redelivered after a crash that follows it: the mark is
// written asynchronously, and without the wait a fast client could get its RECEIPT
// first. The mark is usually stored long before the client acknowledges anything.
func (q *QueueDest) WhenMarked(fn func()) {
	q.mu.Lock()
	if q.dispatchHWM <= q.markerWritten {
		q.mu.Unlock()
		fn()
		return
	}
	q.markWaiters = append(q.markWaiters, markWaiter{need: q.dispatchHWM, fn: fn})
	q.writeMarkerLocked()
	q.mu.Unlock()
}

// takeMarkWaitersLocked removes and returns the callbacks of the waiters the stored mark
// upto now satisfies.
func (q *QueueDest) takeMarkWaitersLocked(upto uint64) []func() {
	var ready []func()
	kept := q.markWaiters[:0]
	for _, w := range q.markWaiters {
		if w.need <= upto {
			ready = append(ready, w.fn)
		} else {
			kept = append(kept, w)
		}
	}
	clear(q.markWaiters[len(kept):])
	q.markWaiters = kept
	return ready
}

// markerRetryDelay is the pause before a failed dispatch mark write is tried again.
const markerRetryDelay = 500 * time.Millisecond
