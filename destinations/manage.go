package destinations

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/activemq-go/broker/persistence"
)

// What an operator does to a queue's waiting messages (the admin listener's purge, move,
// copy and delete, and its browsing by page): messages are claimed, the operation writes
// what becomes of them in one store batch, and the claim is finished with that batch's
// outcome.
//
// A waiting message is in memory (the pending list) or, while the queue is paged, in
// the store only, above pageAfter. A claim takes the matching ones out of the pending
// list, so no consumer gets them while the operation runs, and owns the queue's paging
// (as a page-in does) while it reads the store, so no page-in brings in a message it is
// removing. Finish gives the claimed messages back if the batch failed, and otherwise
// forgets them; the store no longer has them then, so later page-ins skip them.
// Messages dispatched and not yet acknowledged are never claimed: they stay with their
// consumer.

// ClaimOptions says which waiting messages Claim takes.
type ClaimOptions struct {
	// Match selects messages; nil takes every one.
	Match func(m *persistence.Message) bool
	// Max bounds how many messages are taken (0: no bound); MaxBytes bounds the bytes
	// (Message.Size) of those kept for the caller (0: no bound).
	Max      int
	MaxBytes int64
	// Keep returns the messages taken (Claim.Msgs), for an operation that sends them
	// on; without it only their sequences are kept.
	Keep bool
	// Below takes only messages whose sequence is below it (0: no bound): those the
	// queue held when the operation began, so that one racing producers ends.
	Below uint64
	// After resumes the store scan of an earlier claim of the same operation
	// (Claim.Next): messages at or below it that were left alone are not looked at again.
	After uint64
}

// Claim is a set of waiting messages taken out of a queue by Claim.
type Claim struct {
	q *QueueDest
	// Msgs are the messages taken (with ClaimOptions.Keep), in dispatch order: those
	// that were in memory first, then those read from the store. The caller may keep
	// them but not change them.
	Msgs []*persistence.Message
	// Next is where the store scan stopped (for ClaimOptions.After), and More says that
	// the claim stopped at Max or MaxBytes: more messages may match.
	Next uint64
	More bool

	mem         []*Entry
	stored      []uint64 // sequences of the messages taken from the store only
	storedBytes int64
	done        bool
}

// Len is the number of messages claimed.
func (c *Claim) Len() int { return len(c.mem) + len(c.stored) }

// Ack adds the deletion of every claimed message that is in the store to batch.
func (c *Claim) Ack(batch persistence.Batch) {
	for _, e := range c.mem {
		if e.Msg.Persistent {
			batch.Ack(e.Msg.Dest, e.Msg.Seq)
		}
	}
	for _, seq := range c.stored {
		batch.Ack(c.q.dest, seq)
	}
}

// Finish ends the claim with the outcome of the batch that removed the messages from
// the store: on success they leave the queue (counted as dequeued, as ActiveMQ counts
// a purge), on failure they are given back as they were. It must be called exactly
// once, also when the caller decides to write nothing (with an error).
func (c *Claim) Finish(err error) {
	if c.done {
		return
	}
	c.done = true
	q := c.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		for _, e := range c.mem {
			q.pending.Requeue(e)
		}
	} else {
		var bytes int64
		for _, e := range c.mem {
			bytes += e.Size
		}
		q.release(bytes)
		q.dequeued += int64(c.Len())
		q.pagedOut = max(q.pagedOut-int64(len(c.stored)), 0)
		q.pagedOutBytes = max(q.pagedOutBytes-c.storedBytes, 0)
		if len(c.stored) > 0 {
			q.head.valid = false
		}
	}
	q.releasePagingLocked()
	q.dispatchLocked()
}

// Release ends the claim leaving the messages where they were (a copy took them):
// they wait again as before.
func (c *Claim) Release() { c.Finish(errReleased) }

var errReleased = errors.New("claim released")

// Qualified is the queue's store name.
func (q *QueueDest) Qualified() string { return q.dest }

// errStopClaim ends a store scan early.
var errStopClaim = errors.New("claim complete")

// Claim takes waiting messages out of the queue as o says. The caller writes what
// becomes of them and calls Finish; until then no consumer gets them and no page-in
// runs. A durable subscription's view cannot be claimed from.
func (q *QueueDest) Claim(ctx context.Context, o ClaimOptions) (*Claim, error) {
	if q.sub != nil {
		return nil, errorf(ErrInvalidDestination, "%s is a durable subscription's view", q.client)
	}
	match := o.Match
	if match == nil {
		match = func(*persistence.Message) bool { return true }
	}
	below := o.Below
	if below == 0 {
		below = math.MaxUint64
	}
	c := &Claim{q: q, Next: o.After}
	full := func(kept int64) bool {
		return (o.Max > 0 && c.Len() >= o.Max) || (o.MaxBytes > 0 && kept >= o.MaxBytes)
	}
	q.mu.Lock()
	if q.gc.removed.Load() {
		q.mu.Unlock()
		return nil, ErrRemoved
	}
	if q.shared != nil {
		// Its messages are the database's: a node holds only some of them, leased.
		q.mu.Unlock()
		return nil, errorf(ErrInvalidDestination, "%s is a shared queue (jdbc mode: shared): purging, moving or deleting its messages is not supported yet", q.client)
	}
	if err := q.ownPagingLocked(ctx); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	var kept int64
	q.pending.Each(func(e *Entry) bool {
		if full(kept) {
			c.More = true
			return false
		}
		if !e.Ready || e.Failed || e.Msg.Seq >= below || !match(e.Msg) {
			return true
		}
		c.mem = append(c.mem, e)
		if o.Keep {
			c.Msgs = append(c.Msgs, e.Msg)
			kept += e.Size
		}
		return true
	})
	for _, e := range c.mem {
		q.pending.Remove(e)
	}
	if !q.paged || c.More || full(kept) {
		c.More = c.More || (q.paged && full(kept))
		q.mu.Unlock()
		return c, nil
	}
	after := max(o.After, q.pageAfter)
	bound := below
	for s := range q.inflight {
		bound = min(bound, s)
	}
	q.mu.Unlock()

	c.Next = after
	err := q.env.Store.Scan(ctx, q.dest, after, 0, func(m *persistence.Message) error {
		if m.Seq >= bound {
			return errStopClaim
		}
		if full(kept) {
			c.More = true
			return errStopClaim
		}
		c.Next = m.Seq
		if !match(m) {
			return nil
		}
		c.stored = append(c.stored, m.Seq)
		size := int64(m.Size())
		c.storedBytes += size
		if o.Keep {
			c.Msgs = append(c.Msgs, m.Clone())
			kept += size
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopClaim) {
		c.Finish(err)
		return nil, err
	}
	return c, nil
}

// ownPagingLocked waits until no page-in runs, then keeps any from starting until
// releasePagingLocked. The caller holds q.mu, which is released while it waits.
func (q *QueueDest) ownPagingLocked(ctx context.Context) error {
	if err := q.waitLocked(ctx, func() bool { return q.pagingNow }, &q.pagingIdle); err != nil {
		return err
	}
	q.pagingNow = true
	return nil
}

// waitLocked waits until busy reports false, woken by the closing of the channel *idle
// (made here when nil; whoever ends the work closes it and sets it back to nil). The
// caller holds q.mu, which is released while it waits and held again on return.
func (q *QueueDest) waitLocked(ctx context.Context, busy func() bool, idle *chan struct{}) error {
	for busy() {
		if *idle == nil {
			*idle = make(chan struct{})
		}
		ch := *idle
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			q.mu.Lock()
			return ctx.Err()
		}
		q.mu.Lock()
	}
	return nil
}

// releasePagingLocked ends a page-in or a claim: another may start. The caller holds q.mu.
func (q *QueueDest) releasePagingLocked() {
	q.pagingNow = false
	if q.pagingIdle != nil {
		close(q.pagingIdle)
		q.pagingIdle = nil
	}
}

// Find returns a copy of the waiting message with id, or nil if the queue has none
// (dispatched messages are not waiting).
func (q *QueueDest) Find(ctx context.Context, id string) (*persistence.Message, error) {
	var found *persistence.Message
	_, err := q.browse(ctx, "", func(m *persistence.Message) bool {
		if m.ID == id {
			found = m.Clone()
			return false
		}
		return true
	})
	return found, err
}

// BrowsePage returns up to limit waiting messages in dispatch order (as Browse),
// starting after the message with id after ("" from the head), and the id to pass for
// the next page ("" at the end). A cursor that is no longer waiting is ErrNoCursor.
func (q *QueueDest) BrowsePage(ctx context.Context, after string, limit int) ([]*persistence.Message, string, error) {
	var out []*persistence.Message
	more := false
	found, err := q.browse(ctx, after, func(m *persistence.Message) bool {
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, m.Clone())
		return true
	})
	if err != nil {
		return nil, "", err
	}
	if !found {
		return nil, "", ErrNoCursor
	}
	next := ""
	if more && len(out) > 0 {
		last := out[len(out)-1]
		next = last.ID
		q.mu.Lock()
		if q.cursors == nil || len(q.cursors) >= maxCursors {
			q.cursors = map[string]uint64{}
		}
		q.cursors[next] = last.Seq
		q.mu.Unlock()
	}
	return out, next, nil
}

// maxCursors bounds the browse cursors a queue remembers.
const maxCursors = 64

// browse calls fn for the waiting messages after the one with id after ("" from the
// head), in dispatch order, until fn returns false: those in memory, then those in
// the store only. Expired messages are left out. fn must clone what it keeps. It
// reports whether after was found (always for "").
func (q *QueueDest) browse(ctx context.Context, after string, fn func(*persistence.Message) bool) (bool, error) {
	now := q.env.Time().UnixMilli()
	live := func(m *persistence.Message) bool { return m.Expires == 0 || m.Expires > now }
	found := after == ""
	stopped := false
	visit := func(m *persistence.Message) bool {
		if !found {
			found = m.ID == after
			return true
		}
		if !live(m) {
			return true
		}
		if !fn(m) {
			stopped = true
			return false
		}
		return true
	}
	q.mu.Lock()
	paged, from := q.paged, q.pageAfter
	// A cursor known to be in the store part (an earlier page ended there): every
	// message in memory comes before it, and the scan starts at it.
	seq, hinted := q.cursors[after]
	hinted = hinted && after != "" && paged && seq > from
	if hinted {
		from = seq - 1
	} else {
		q.pending.Each(func(e *Entry) bool {
			if !e.Ready || e.Failed {
				return true
			}
			return visit(e.Msg)
		})
	}
	q.mu.Unlock()
	if stopped || !paged {
		return found, nil
	}
	err := q.env.Store.Scan(ctx, q.dest, from, 0, func(m *persistence.Message) error {
		if hinted && !found && m.Seq > seq {
			return errStopClaim // the cursor is gone
		}
		if !visit(m) {
			return errStopClaim
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopClaim) {
		return found, err
	}
	return found, nil
}

// oldestLocked is the timestamp of the oldest waiting message: the oldest of the fronts
// of the pending list's priority levels, or, when only the store holds waiting messages,
// that of the first of them. That one is remembered when paging starts; otherwise (a
// queue recovered at start, or after a page-in or a claim) it is read from the store in
// the background, and 0 is reported until then.
func (q *QueueDest) oldestLocked() int64 {
	if ts := q.pending.OldestTimestamp(); ts != 0 || !q.paged || q.pagedOut == 0 || q.sub != nil {
		return ts
	}
	if q.head.valid && q.head.after == q.pageAfter {
		return q.head.ts
	}
	if !q.head.reading && !q.env.Stopping() {
		q.head.reading = true
		after := q.pageAfter
		q.env.Background.Add(1)
		go q.readHead(after)
	}
	return 0
}

// readHead reads the first message the store holds above after, for oldestLocked.
func (q *QueueDest) readHead(after uint64) {
	defer q.env.Background.Done()
	var ts int64
	err := q.env.Store.Scan(context.Background(), q.dest, after, 1, func(m *persistence.Message) error {
		ts = m.Timestamp
		return nil
	})
	q.mu.Lock()
	defer q.mu.Unlock()
	q.head.reading = false
	if err == nil && q.pageAfter == after && !q.pagingNow {
		q.head = headCache{valid: true, after: after, ts: ts}
	}
}

// headCache remembers the timestamp of the first message of a paged queue held in the
// store only: valid while pageAfter is still after.
type headCache struct {
	valid   bool
	reading bool
	after   uint64
	ts      int64
}

// MarkDLQ records that dead-lettered messages are sent to the queue.
func (q *QueueDest) MarkDLQ() {
	if !q.dlq.Load() {
		q.dlq.Store(true)
	}
}

// IsDLQ reports whether dead-lettered messages were sent to the queue since start.
func (q *QueueDest) IsDLQ() bool { return q.dlq.Load() }

// Consumers is the number of the queue's consumers.
func (q *QueueDest) Consumers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.consumers)
}

// Retire marks the queue removed at an operator's request, unless it has consumers
// (ErrInUse). The caller holds the broker's registry lock and takes the queue out of
// its map with it; then it calls Drain, and deletes the queue's messages from the
// store (Purge of Qualified, and of MarkerDest if MarkerWritten).
func (q *QueueDest) Retire() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gc.removed.Load() {
		return ErrRemoved
	}
	if n := len(q.consumers); n > 0 {
		return &Error{Message: fmt.Sprintf("%s has %d consumer(s): close them first", q.client, n), Err: ErrInUse}
	}
	q.gc.removed.Store(true)
	if q.timer != nil {
		q.timer.Stop()
	}
	return nil
}

// Drain waits, for a retired queue, until the store writes of the messages it accepted
// have completed and no page-in runs (none starts again), then forgets its waiting
// messages: a Purge of the store committed after it removes them all.
func (q *QueueDest) Drain(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.ownPagingLocked(ctx); err != nil {
		return err
	}
	if err := q.waitLocked(ctx, func() bool { return q.writesInFlightLocked() > 0 }, &q.writesIdle); err != nil {
		return err
	}
	q.pending.RemoveIf(func(e *Entry) bool { q.release(e.Size); return true })
	q.paged, q.pagedOut, q.pagedOutBytes = false, 0, 0
	return nil
}

// writesInFlightLocked counts the messages whose store write has not completed.
func (q *QueueDest) writesInFlightLocked() int {
	n := len(q.inflight)
	q.pending.Each(func(e *Entry) bool {
		if !e.Ready && !e.Failed {
			n++
		}
		return true
	})
	return n
}

// wakeRetireLocked tells a Retire waiting for store writes that one completed.
func (q *QueueDest) wakeRetireLocked() {
	if q.writesIdle != nil && q.writesInFlightLocked() == 0 {
		close(q.writesIdle)
		q.writesIdle = nil
	}
}

// Retire marks the topic removed at an operator's request, unless it has subscribers
// or durable subscriptions (ErrInUse), or is a stream (whose log retention removes
// messages). The caller holds the broker's registry lock and takes the topic out of
// its map with it.
func (t *TopicDest) Retire() error {
	if t.isStream {
		return errorf(ErrInvalidDestination, "%s is a stream: its messages go by its retention", t.client)
	}
	t.mu.Lock()
	if n := len(t.subs); n > 0 {
		t.mu.Unlock()
		return &Error{Message: fmt.Sprintf("%s has %d subscriber(s): close them first", t.client, n), Err: ErrInUse}
	}
	t.gc.removed.Store(true)
	t.mu.Unlock()
	t.pubMu.Lock()
	durable := t.durables != nil && t.durables.Len() > 0
	t.pubMu.Unlock()
	if durable {
		t.gc.removed.Store(false)
		return &Error{Message: t.client + " has durable subscriptions: remove them first", Err: ErrInUse}
	}
	t.Close()
	return nil
}
