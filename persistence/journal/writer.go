package journal

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/persistence"
)

// Group-commit limits.
const (
	// maxGroupBytes caps what one write takes from the queue (a larger record is
	// written alone).
	maxGroupBytes = 4 << 20
	// maxQueuedBytes is how much may wait in the queue before committers block
	// (backpressure for CommitAsync pipelines).
	maxQueuedBytes = 64 << 20
	// maxLinger bounds how long the writer waits for committers to come back after a
	// synced group (see gather).
	maxLinger = 500 * time.Microsecond
)

// request is one unit of work for the writer: a batch record to append, or a barrier
// (rec == nil) that only asks that everything before it be made durable.
type request struct {
	rec   []byte // the framed record; the writer owns it once submitted
	ops   []op
	dur   persistence.Durability
	force bool        // sync whatever the strategy (barriers of checkpoints)
	wait  chan error  // Commit: receives the result
	done  func(error) // CommitAsync: called with the result on the completion goroutine
	err   error       // set for a batch that failed before it was written: completed in order with it
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

// take reports whether the writer may write r: true unless its committer withdrew it.
func (r *request) take() bool {
	return r.state == nil || r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.Load() == reqTaken
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

// writer is the single goroutine that appends to the journal. It takes every request
// queued since its last round (up to maxGroupBytes), writes their records with one
// Write, syncs once if the strategy or a request asks for it, applies the batches to the
// index in queue order under one lock (so a batch is never visible in part and readers
// see batches in journal order), and then wakes the waiters. While it writes and syncs,
// the next group gathers in the queue: the more committers, the more batches per fsync.
//
// Durability and visibility: a group is applied after its write and, if it is synced,
// after its fsync, so a Commit(Sync) under SyncAlways returns only when its batch is on
// disk, and a batch whose write or sync failed is never applied. Any write or sync error
// puts the store in a failed state for good (see ErrFailed).
type writer struct {
	s        *Store
	strategy SyncStrategy
	interval time.Duration
	maxFile  int64
	log      *slog.Logger

	mu      sync.Mutex
	space   *sync.Cond // signalled when the queue shrinks, or on close/failure
	queue   []*request
	queued  int
	closing bool
	failed  error // sticky; wraps ErrFailed and the I/O error
	wake    chan struct{}
	exited  chan struct{}
	exitErr error // a sync error of the final flush, for Close

	// Owned by the writer goroutine.
	expect   int           // Commit(Sync) waiters woken by the last synced group
	lastSync time.Duration // how long its fsync took
	syncedAt time.Time     // when the last fsync ended (SyncPeriodic)
	linger   *time.Timer
	active   *segment
	size     int64      // end of the active segment
	dirty    []*segment // segments written since their last sync
	buf      []byte
	group    []*request
}

func newWriter(s *Store, active *segment) *writer {
	w := &writer{
		s:        s,
		strategy: s.opts.SyncStrategy,
		interval: s.opts.SyncInterval,
		maxFile:  s.opts.MaxFileLength,
		log:      s.log,
		wake:     make(chan struct{}, 1),
		exited:   make(chan struct{}),
		active:   active,
		size:     active.size.Load(),
		syncedAt: time.Now(),
	}
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

// barrier waits until everything submitted before it is durable, whatever the strategy.
func (w *writer) barrier() error {
	r := requestPool.Get().(*request)
	r.force = true
	err := w.submit(r)
	if err == nil {
		err = <-r.wait
	}
	release(r)
	return err
}

// close makes the writer drain the queue, sync, and exit; it returns the error of that
// final sync.
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
	return w.exitErr
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
		w.log.Error("journal: write failed; the store refuses further writes until it is reopened",
			slog.String("dir", w.s.opts.Dir), slog.Any("err", err))
	}
	return w.failed
}

func (w *writer) run() {
	defer close(w.exited)
	var tick <-chan time.Time
	if w.strategy == SyncPeriodic {
		t := time.NewTicker(w.interval)
		defer t.Stop()
		tick = t.C
	}
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
			if w.failure() == nil {
				if err := w.syncDirty(); err != nil {
					w.exitErr = w.fail(err)
				}
			}
			return
		}
		select {
		case <-w.wake:
		case <-tick:
			if len(w.dirty) > 0 && w.failure() == nil {
				if err := w.syncDirty(); err != nil {
					w.fail(err)
				}
			}
		}
	}
}

// gather waits, after a synced group, until as many requests are queued as the group
// woke committers, or for half the fsync's duration (at most maxLinger): the committers
// just woken usually commit again at once, and without the wait the writer would take
// only those that were not in the last group, so groups would alternate between large
// and small and every writer would pay an fsync twice as often.
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

// take removes the next group from the queue.
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

// process writes, syncs, applies and completes one group.
func (w *writer) process(group []*request) {
	defer func() {
		clear(group)
		w.group = group[:0]
	}()
	if err := w.failure(); err != nil {
		w.complete(group, err)
		return
	}
	// SyncPeriodic: under a steady load the writer never idles at its ticker, so it
	// also syncs here once the interval has passed.
	needSync := w.strategy == SyncPeriodic && time.Since(w.syncedAt) >= w.interval
	buf := w.buf[:0]
	for _, r := range group {
		if !r.take() {
			r.err = persistence.ErrCanceled // withdrawn: neither written nor applied
			continue
		}
		if r.force || (r.dur == persistence.Sync && w.strategy == SyncAlways) {
			needSync = true
		}
		if r.rec == nil || r.err != nil {
			continue
		}
		end := w.size + int64(len(buf))
		if end > segHeaderSize && end+int64(len(r.rec)) > w.maxFile {
			if err := w.write(buf); err != nil {
				w.complete(group, w.fail(err))
				return
			}
			buf = buf[:0]
			if err := w.roll(); err != nil {
				w.complete(group, w.fail(err))
				return
			}
		}
		base := uint32(w.size) + uint32(len(buf))
		for i := range r.ops {
			if o := &r.ops[i]; o.kind == opAdd || o.kind == opMove {
				o.loc.seg, o.loc.off = w.active.id, base+o.msgOff
			}
		}
		buf = append(buf, r.rec...)
		putRecordBuf(r.rec)
		r.rec = nil
	}
	if cap(buf) <= 2*maxGroupBytes {
		w.buf = buf[:0]
	}
	if err := w.write(buf); err != nil {
		w.complete(group, w.fail(err))
		return
	}
	if needSync {
		start := time.Now()
		if err := w.syncDirty(); err != nil {
			w.complete(group, w.fail(err))
			return
		}
		w.lastSync = time.Since(start)
		for _, r := range group {
			if r.done == nil && r.dur == persistence.Sync && !r.force {
				w.expect++
			}
		}
	}
	w.s.applyGroup(group, pos{w.active.id, w.size})
	w.complete(group, nil)
}

// write appends p to the active segment.
func (w *writer) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	n, err := w.active.f.Write(p)
	w.size += int64(n)
	w.active.size.Store(w.size)
	if n > 0 && (len(w.dirty) == 0 || w.dirty[len(w.dirty)-1] != w.active) {
		w.dirty = append(w.dirty, w.active)
	}
	if err == nil && n < len(p) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(p))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", w.active.path, err)
	}
	return nil
}

// syncDirty fsyncs every segment written since its last sync.
func (w *writer) syncDirty() error {
	if len(w.dirty) == 0 {
		return nil
	}
	for len(w.dirty) > 0 {
		seg := w.dirty[0]
		if err := seg.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", seg.path, err)
		}
		w.dirty = w.dirty[1:]
	}
	w.dirty = w.dirty[:0]
	w.syncedAt = time.Now()
	return nil
}

// roll starts a new segment. Whatever the strategy, the old segment is synced first and
// the new one's directory entry is synced before any record goes into it: a power cut
// then always leaves a prefix of the journal (a torn tail only in the last segment).
func (w *writer) roll() error {
	if err := w.syncDirty(); err != nil {
		return err
	}
	seg, err := w.s.segs.create(w.active.id+1, true)
	if err != nil {
		return fmt.Errorf("create segment %s: %w", segmentName(w.active.id+1), err)
	}
	w.active, w.size = seg, seg.size.Load()
	w.log.Debug("journal: new segment", slog.String("file", seg.path))
	return nil
}

// complete reports err (nil: success) to every request of the group, in order.
func (w *writer) complete(group []*request, err error) {
	for _, r := range group {
		rerr := err
		if r.err != nil {
			rerr = r.err
		}
		if !r.take() {
			rerr = persistence.ErrCanceled // also when the group failed: the committer answered already
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
