package logstore

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
)

// Group-commit limits.
const (
	// maxGroupBytes caps the records one round takes from the queue (a larger record is
	// appended alone). A round is one log batch, and a log batch is the unit the log
	// reads and decodes: a scan needing one message of it decodes all of it, so it stays
	// small enough for that (1 MiB is still a thousand 1 KiB messages per fsync).
	maxGroupBytes = 1 << 20
	// maxQueuedBytes is how much may wait in the queue before committers block
	// (backpressure for CommitAsync pipelines).
	maxQueuedBytes = 64 << 20
	// maxLinger bounds how long the writer waits for committers to come back after a
	// synced round (see gather).
	maxLinger = 500 * time.Microsecond
)

// request is one committed batch on its way through the writer.
type request struct {
	rec  []byte // the encoded batch record; nil for a batch with no operations
	ops  []op
	dur  persistence.Durability
	wait chan error  // Commit: receives the result
	done func(error) // CommitAsync: called with the result on the completion goroutine
	err  error       // failed before it was queued (done, invalid): completed in order with it
}

var requestPool = sync.Pool{New: func() any { return &request{wait: make(chan error, 1)} }}

// release puts a request that nobody else holds back into the pool.
func release(r *request) {
	if r.rec != nil {
		putRecordBuf(r.rec)
	}
	*r = request{wait: r.wait}
	requestPool.Put(r)
}

// recordPool recycles the record buffers of small batches.
var recordPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func getRecordBuf() []byte { return (*recordPool.Get().(*[]byte))[:0] }

func putRecordBuf(b []byte) {
	if cap(b) <= 64<<10 {
		b = b[:0]
		recordPool.Put(&b)
	}
}

// writer is the single goroutine that appends to the log. Each round it takes every
// request queued since the last one (up to maxGroupBytes), appends their records as ONE
// kafkalog batch (one CRC frame: the round is atomic on disk), fsyncs once if the policy
// is FlushBatch and a request of the round committed with Sync, applies the batches to
// the index in queue order under one lock, and then wakes the committers. While it
// appends and syncs, the next round gathers in the queue: the more committers, the more
// batches per fsync.
//
// A batch is applied only after its append (and, if it waits for one, its fsync)
// succeeded, so a failed batch is never visible. Any append or sync error fails the
// store for good (see ErrFailed): after a failed fsync the kernel may have dropped the
// dirty pages, and only a reopen (which recovers the log) knows what is on disk.
type writer struct {
	s     *Store
	flush FlushPolicy

	mu      sync.Mutex
	space   *sync.Cond // signalled when the queue shrinks, or on close or failure
	queue   []*request
	queued  int
	closing bool
	failed  error // sticky; wraps ErrFailed and the I/O error
	wake    chan struct{}
	exited  chan struct{}

	// Owned by the writer goroutine.
	expect   int           // Commit(Sync) waiters woken by the last synced round
	lastSync time.Duration // how long its fsync took
	linger   *time.Timer
	group    []*request
	recs     []kafkalog.Record
}

func newWriter(s *Store) *writer {
	w := &writer{s: s, flush: s.opts.Flush, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	w.space = sync.NewCond(&w.mu)
	return w
}

// submit queues r. It blocks while the queue is over maxQueuedBytes. It fails with
// persistence.ErrClosed once Close began, and with the sticky error once the store
// failed; r is then not queued.
func (w *writer) submit(r *request) error {
	w.mu.Lock()
	for w.queued > maxQueuedBytes && !w.closing && w.failed == nil {
		w.space.Wait()
	}
	switch {
	case w.closing:
		w.mu.Unlock()
		return persistence.ErrClosed
	case w.failed != nil:
		err := w.failed
		w.mu.Unlock()
		return err
	}
	w.queue = append(w.queue, r)
	w.queued += len(r.rec)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// close makes the writer drain the queue and exit.
func (w *writer) close() error {
	w.mu.Lock()
	w.closing = true
	w.space.Broadcast()
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.exited
	return w.failure()
}

// failure returns the sticky error, or nil.
func (w *writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// fail records the first I/O error and returns the error the affected requests get.
func (w *writer) fail(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = fmt.Errorf("%w: %w", ErrFailed, err)
		w.space.Broadcast()
		w.s.lg.Error("logstore: write failed; the store refuses further writes until it is reopened",
			slog.String("dir", w.s.opts.Dir), slog.Any("err", err))
	}
	return w.failed
}

func (w *writer) run() {
	defer close(w.exited)
	w.linger = time.NewTimer(time.Hour)
	w.linger.Stop()
	defer w.linger.Stop()
	for {
		w.gather()
		group, closing := w.take()
		if len(group) > 0 {
			w.process(group)
			continue
		}
		if closing {
			return
		}
		<-w.wake
	}
}

// gather waits, after a synced round, until as many requests are queued as the round
// woke committers, or for half the fsync's duration (at most maxLinger): committers just
// woken usually commit again at once, and without the wait the next round would take
// only those that were not in the last one, so rounds would alternate between large and
// small and every committer would pay an fsync twice as often.
func (w *writer) gather() {
	if w.expect == 0 {
		return
	}
	expect, wait := w.expect, min(w.lastSync/2, maxLinger)
	w.expect = 0
	deadline := time.Now().Add(wait)
	for {
		w.mu.Lock()
		n, closing := len(w.queue), w.closing
		w.mu.Unlock()
		left := time.Until(deadline)
		if n >= expect || closing || left <= 0 {
			return
		}
		w.linger.Reset(left)
		select {
		case <-w.wake:
		case <-w.linger.C:
		}
	}
}

// take removes the next round from the queue.
func (w *writer) take() ([]*request, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, bytes := 0, 0
	for n < len(w.queue) && (n == 0 || bytes+len(w.queue[n].rec) <= maxGroupBytes) {
		bytes += len(w.queue[n].rec)
		n++
	}
	group := append(w.group[:0], w.queue[:n]...)
	clear(w.queue[:n])
	w.queue = w.queue[n:]
	if len(w.queue) == 0 {
		w.queue = w.queue[:0:0] // let the backing array go once drained
	}
	before := w.queued
	w.queued -= bytes
	if before > maxQueuedBytes && w.queued <= maxQueuedBytes {
		w.space.Broadcast()
	}
	return group, w.closing
}

// process appends, syncs, applies and completes one round.
func (w *writer) process(group []*request) {
	defer func() {
		clear(group)
		w.group = group[:0]
	}()
	if err := w.failure(); err != nil {
		w.complete(group, err)
		return
	}
	recs := w.recs[:0]
	needSync, syncWaiters := false, 0
	for _, r := range group {
		if r.err != nil {
			continue
		}
		if r.dur == persistence.Sync && w.flush == FlushBatch {
			needSync = true
			if r.done == nil {
				syncWaiters++
			}
		}
		if r.rec != nil {
			recs = append(recs, kafkalog.Record{Value: r.rec})
		}
	}
	var base int64
	if len(recs) > 0 {
		var err error
		base, err = w.s.log.Append(logTopic, 0, recs)
		clear(recs) // the log copied the records into its frame
		w.recs = recs[:0]
		if err != nil {
			w.complete(group, w.fail(fmt.Errorf("append: %w", err)))
			return
		}
	}
	if needSync {
		// Also covers Async rounds before this one that were never synced: a Sync
		// commit is a barrier for everything committed before it.
		start := time.Now()
		if err := w.s.log.Flush(); err != nil {
			w.complete(group, w.fail(fmt.Errorf("sync: %w", err)))
			return
		}
		w.lastSync, w.expect = time.Since(start), syncWaiters
	}
	w.s.applyGroup(group, base)
	w.complete(group, nil)
}

// complete reports err (nil: success) to every request of the round, in order.
func (w *writer) complete(group []*request, err error) {
	for _, r := range group {
		rerr := err
		if r.err != nil {
			rerr = r.err
		}
		if r.done != nil {
			w.s.callbacks.push(r.done, rerr)
			release(r)
			continue
		}
		if r.rec != nil {
			putRecordBuf(r.rec)
			r.rec = nil
		}
		r.ops = nil
		r.wait <- rerr // the waiter releases r
	}
}

// completer runs the done callbacks of CommitAsync on one goroutine, in the order the
// writer completed them, so a slow callback never stalls the writer.
type completer struct {
	mu     sync.Mutex
	queue  []completion
	closed bool
	wake   chan struct{}
	exited chan struct{}
}

type completion struct {
	done func(error)
	err  error
}

func newCompleter() *completer {
	c := &completer{wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go c.run()
	return c
}

// push queues done(err). Once the completer is closed (every earlier callback has run)
// it calls done on the caller's goroutine instead.
func (c *completer) push(done func(error), err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		done(err)
		return
	}
	c.queue = append(c.queue, completion{done, err})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *completer) run() {
	defer close(c.exited)
	var batch []completion
	for {
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		closed := c.closed
		c.mu.Unlock()
		for i, cb := range batch {
			cb.done(cb.err)
			batch[i] = completion{}
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			return
		}
		<-c.wake
	}
}

// close runs what is queued and stops the goroutine.
func (c *completer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.exited
}
