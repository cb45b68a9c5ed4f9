// Package groupcommit is the commit path shared by the adapters that encode each batch
// into one record and hand it to a single writer goroutine (journal, logstore): the
// request a committed batch becomes, the bounded queue in front of the writer (with
// backpressure, a sticky failure and close), the gathering of groups after an fsync,
// in-order completion of the committers, and the recording half of a batch with its
// Commit, CommitAsync and CommitCancelable.
//
// What a writer does with a group (segments and records, a kafkalog append) stays in the
// adapter: it loops on Queue.Take, writes, syncs, applies, and calls Queue.Complete.
package groupcommit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
)

// Request is one committed batch on its way through the writer, or a barrier (Rec nil,
// Force set) that only asks that everything before it be made durable. O is the
// adapter's decoded operation.
type Request[O any] struct {
	Rec   []byte // the encoded record; the writer owns it once submitted
	Ops   []O
	Dur   persistence.Durability
	Force bool        // sync whatever the adapter's policy (barriers)
	Done  func(error) // CommitAsync: called with the result on the completion goroutine
	Err   error       // failed before it was written: completed in order with it

	wait chan error // Commit: receives the result
	// state is set for CommitCancelable: whoever moves it from queued first decides
	// whether the batch is written (the writer) or withdrawn (the committer's cancel).
	state *atomic.Uint32
}

// States of a cancelable request.
const (
	reqQueued uint32 = iota
	reqTaken
	reqCanceled
)

// Take reports whether the writer may write r: true unless its committer withdrew it.
// Once it returned true for a request it always does.
func (r *Request[O]) Take() bool {
	return r.state == nil || r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.Load() == reqTaken
}

// Config sets up a Queue.
type Config struct {
	// MaxGroupBytes caps the record bytes one Take returns (a larger record comes
	// alone).
	MaxGroupBytes int
	// MaxQueuedBytes is how much may wait before Submit blocks (backpressure for
	// CommitAsync pipelines).
	MaxQueuedBytes int
	// MaxLinger bounds how long Gather waits.
	MaxLinger time.Duration
	// MaxRecordBytes is the largest record a batch may commit; a larger one fails with
	// ErrTooLarge (wrapped with the sizes).
	MaxRecordBytes int
	ErrTooLarge    error
	// Seal, if set, completes a batch's record before it is queued (nops operations).
	Seal func(rec []byte, nops int) []byte
	// CheckOpen reports whether the store takes commits (a closed or failed store
	// does not); an empty Async commit returns it instead of joining the queue.
	CheckOpen func() error
	// StoreBeforeDispatch makes CommitCancelable a plain CommitAsync that returns nil
	// (no concurrent store and dispatch).
	StoreBeforeDispatch bool
	// HoldCancelable lets Hold wait for withdrawals: for a writer that syncs the groups
	// holding a Commit(Sync).
	HoldCancelable bool
	// Callbacks runs the Done callbacks, in completion order.
	Callbacks *completion.Runner
}

// Queue is the queue in front of an adapter's writer goroutine. Submit, Close, Fail and
// Failure are safe for concurrent use; Take, Gather, Synced and Complete belong to the
// writer goroutine.
type Queue[O any] struct {
	cfg  Config
	pool sync.Pool

	mu      sync.Mutex
	space   *sync.Cond // signalled when the queue shrinks, or on close or failure
	queue   []*Request[O]
	queued  int
	closing bool
	failed  error // sticky
	wake    chan struct{}

	// Owned by the writer goroutine.
	expect   int           // Commit(Sync) waiters woken by the last synced group
	lastSync time.Duration // how long its fsync took
	linger   *time.Timer
	group    []*Request[O]
	// Hold's state: holds still worth making after the last one that saw a withdrawal,
	// and the holds it skipped since (one in holdProbe is made anyway).
	holdCredit, holdSkipped int
	// holds counts the holds made (for tests and diagnostics).
	holds atomic.Uint64
}

// Hold's tuning: after a hold that saw a withdrawal, the next holdCredit holds are made
// whatever they see; with no credit left, one hold in holdProbe is made to find out
// whether withdrawals come again.
const (
	holdCredit = 16
	holdProbe  = 64
)

// New returns an empty queue.
func New[O any](cfg Config) *Queue[O] {
	q := &Queue[O]{cfg: cfg, wake: make(chan struct{}, 1)}
	q.pool.New = func() any { return &Request[O]{wait: make(chan error, 1)} }
	q.space = sync.NewCond(&q.mu)
	return q
}

// newRequest returns a cleared request from the pool.
func (q *Queue[O]) newRequest() *Request[O] { return q.pool.Get().(*Request[O]) }

// release puts a request that nobody else holds back into the pool.
func (q *Queue[O]) release(r *Request[O]) {
	if r.Rec != nil {
		PutBuf(r.Rec)
	}
	*r = Request[O]{wait: r.wait}
	q.pool.Put(r)
}

// Wake is signalled when something was queued, or on Close.
func (q *Queue[O]) Wake() <-chan struct{} { return q.wake }

func (q *Queue[O]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Submit queues r. It blocks while more than MaxQueuedBytes wait. It fails with
// persistence.ErrClosed once Close was called, and with the sticky error once the
// queue failed; r is then not queued.
func (q *Queue[O]) Submit(r *Request[O]) error {
	q.mu.Lock()
	for q.queued > q.cfg.MaxQueuedBytes && !q.closing && q.failed == nil {
		q.space.Wait()
	}
	switch {
	case q.closing:
		q.mu.Unlock()
		return persistence.ErrClosed
	case q.failed != nil:
		err := q.failed
		q.mu.Unlock()
		return err
	}
	q.queue = append(q.queue, r)
	q.queued += len(r.Rec)
	q.mu.Unlock()
	q.signal()
	return nil
}

// Close refuses further submissions and wakes the writer, which drains what is queued
// (Take reports closing once it is empty).
func (q *Queue[O]) Close() {
	q.mu.Lock()
	q.closing = true
	q.space.Broadcast()
	q.mu.Unlock()
	q.signal()
}

// Failure returns the sticky error, or nil.
func (q *Queue[O]) Failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}

// Fail makes err the sticky error unless there is one already; it returns the sticky
// error and whether err became it (so the adapter logs the failure once).
func (q *Queue[O]) Fail(err error) (sticky error, first bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failed == nil {
		q.failed, first = err, true
		q.space.Broadcast()
	}
	return q.failed, first
}

// Take removes the next group from the queue: at least one request, more while their
// records fit in MaxGroupBytes. closing reports that Close was called. The group's
// array is reused by the next Take once Complete has run.
func (q *Queue[O]) Take() (group []*Request[O], closing bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, bytes := 0, 0
	for n < len(q.queue) && (n == 0 || bytes+len(q.queue[n].Rec) <= q.cfg.MaxGroupBytes) {
		bytes += len(q.queue[n].Rec)
		n++
	}
	group = append(q.group[:0], q.queue[:n]...)
	clear(q.queue[:n])
	q.queue = q.queue[n:]
	if len(q.queue) == 0 {
		q.queue = q.queue[:0:0] // let the backing array go once drained
	}
	before := q.queued
	q.queued -= bytes
	if before > q.cfg.MaxQueuedBytes && q.queued <= q.cfg.MaxQueuedBytes {
		q.space.Broadcast()
	}
	return group, q.closing
}

// Synced records that the writer synced a group, which took took and woke waiters
// Commit(Sync) callers; the next Gather waits for them to come back.
func (q *Queue[O]) Synced(waiters int, took time.Duration) {
	q.expect, q.lastSync = waiters, took
}

// Gather waits, after a synced group, until as many requests are queued as the group
// woke committers, or for half the fsync's duration (at most MaxLinger): the committers
// just woken usually commit again at once, and without the wait the writer would take
// only those that were not in the last group, so groups would alternate between large
// and small and every committer would pay an fsync twice as often.
func (q *Queue[O]) Gather() {
	if q.expect == 0 {
		return
	}
	expect, wait := q.expect, min(q.lastSync/2, q.cfg.MaxLinger)
	q.expect = 0
	deadline := time.Now().Add(wait)
	if q.linger == nil {
		q.linger = time.NewTimer(time.Hour)
		q.linger.Stop()
	}
	for {
		q.mu.Lock()
		n, closing := len(q.queue), q.closing
		q.mu.Unlock()
		left := time.Until(deadline)
		if n >= expect || closing || left <= 0 {
			return
		}
		q.linger.Reset(left)
		select {
		case <-q.wake:
		case <-q.linger.C:
		}
	}
}

// Hold waits, when the queue holds nothing but Async commits and cancelable ones
// (CommitCancelable: messages dispatched while their writes wait), for the cancelable
// ones to be withdrawn: a consumer that acknowledges such a message before its write
// began withdraws it, and it then costs neither a write nor a sync. It waits at most as
// long as the last sync took (MaxLinger at most), so a producer waits no longer than
// behind a writer busy with a sync, and it returns as soon as none is left to withdraw.
// Holds are made while they see withdrawals (consumers keep up); once holdCredit holds
// in a row saw none, only one in holdProbe is made, so traffic nobody consumes at once
// is hardly delayed. Without HoldCancelable, or before the first sync, it returns at
// once. It belongs to the writer goroutine, before Take.
func (q *Queue[O]) Hold() {
	if !q.cfg.HoldCancelable || q.lastSync <= 0 {
		return
	}
	open, withdrawn := q.holdable()
	if open == 0 {
		return
	}
	if q.holdCredit <= 0 {
		if q.holdSkipped++; q.holdSkipped < holdProbe {
			return
		}
		q.holdSkipped = 0
	}
	q.holds.Add(1)
	if q.linger == nil {
		q.linger = time.NewTimer(time.Hour)
		q.linger.Stop()
	}
	deadline := time.Now().Add(min(q.lastSync, q.cfg.MaxLinger))
	for {
		left := time.Until(deadline)
		if left > 0 {
			q.linger.Reset(left)
			select {
			case <-q.wake:
			case <-q.linger.C:
			}
			q.linger.Stop()
		}
		n, w := q.holdable()
		if w > withdrawn {
			q.holdCredit = holdCredit
		}
		if n == 0 || left <= 0 || time.Until(deadline) <= 0 {
			if w <= withdrawn && q.holdCredit > 0 {
				q.holdCredit--
			}
			return
		}
	}
}

// holdable counts the cancelable requests queued and not withdrawn (open) and those
// withdrawn; open is 0 when anything else than Async and cancelable commits is queued,
// or the queue closes.
func (q *Queue[O]) holdable() (open, withdrawn int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing {
		return 0, 0
	}
	for _, r := range q.queue {
		switch {
		case r.state != nil && r.state.Load() == reqCanceled:
			withdrawn++
		case r.state != nil:
			open++
		case r.Dur != persistence.Async || r.Force:
			return 0, withdrawn
		}
	}
	return open, withdrawn
}

// Complete reports err (nil: success) to every request of group, in order: a request's
// own Err wins, and a withdrawn one is left alone (its cancel reported
// persistence.ErrCanceled, also when the group failed: its committer answered already).
// Commit waiters are woken at once, Done callbacks handed to the completion Runner. Complete must be called once per Take.
func (q *Queue[O]) Complete(group []*Request[O], err error) {
	for _, r := range group {
		rerr := err
		if r.Err != nil {
			rerr = r.Err
		}
		if !r.Take() {
			if r.Done != nil { // its cancel has called Done already
				q.release(r)
				continue
			}
			rerr = persistence.ErrCanceled
		}
		if r.Done != nil {
			q.cfg.Callbacks.Push(r.Done, rerr)
			q.release(r)
			continue
		}
		if r.Rec != nil {
			PutBuf(r.Rec)
			r.Rec = nil
		}
		r.Ops = nil
		r.wait <- rerr // the waiter releases r
	}
	clear(group)
	q.group = group[:0]
}

// Barrier waits until everything submitted before it is durable: it queues a Force
// request with no record.
func (q *Queue[O]) Barrier() error {
	r := q.newRequest()
	r.Force = true
	err := q.Submit(r)
	if err == nil {
		err = <-r.wait
	}
	q.release(r)
	return err
}

// recordPool recycles the record buffers of small batches.
var recordPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// GetBuf returns an empty record buffer.
func GetBuf() []byte { return (*recordPool.Get().(*[]byte))[:0] }

// PutBuf recycles a record buffer that nobody uses any more (large ones are dropped).
func PutBuf(b []byte) {
	if cap(b) <= 64<<10 {
		b = b[:0]
		recordPool.Put(&b)
	}
}
