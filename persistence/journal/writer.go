package journal

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
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
// (Rec == nil, Force set) that only asks that everything before it be made durable.
type request = groupcommit.Request[op]

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
	q        *groupcommit.Queue[op]
	strategy SyncStrategy
	interval time.Duration
	maxFile  int64
	log      *slog.Logger

	exited  chan struct{}
	exitErr error // a sync error of the final flush, for Close

	// Owned by the writer goroutine.
	syncedAt time.Time // when the last fsync ended (SyncPeriodic)
	active   *segment
	size     int64      // end of the active segment
	dirty    []*segment // segments written since their last sync
	buf      []byte
}

func newWriter(s *Store, active *segment, callbacks *completion.Runner) *writer {
	w := &writer{
		s:        s,
		strategy: s.opts.SyncStrategy,
		interval: s.opts.SyncInterval,
		maxFile:  s.opts.MaxFileLength,
		log:      s.log,
		exited:   make(chan struct{}),
		active:   active,
		size:     active.size.Load(),
		syncedAt: time.Now(),
	}
	w.q = groupcommit.New[op](groupcommit.Config{
		MaxGroupBytes:       maxGroupBytes,
		MaxQueuedBytes:      maxQueuedBytes,
		MaxLinger:           maxLinger,
		MaxRecordBytes:      MaxRecordSize,
		ErrTooLarge:         ErrTooLarge,
		Seal:                finishRecord,
		CheckOpen:           s.checkOpen,
		StoreBeforeDispatch: s.opts.StoreBeforeDispatch,
		Callbacks:           callbacks,
	})
	return w
}

// barrier waits until everything submitted before it is durable, whatever the strategy.
func (w *writer) barrier() error { return w.q.Barrier() }

// close makes the writer drain the queue, sync, and exit; it returns the error of that
// final sync.
func (w *writer) close() error {
	w.q.Close()
	<-w.exited
	return w.exitErr
}

// failure returns the sticky error, or nil.
func (w *writer) failure() error { return w.q.Failure() }

// fail records the first I/O error and returns the error the affected requests get.
func (w *writer) fail(err error) error {
	failed, first := w.q.Fail(fmt.Errorf("%w: %w", ErrFailed, err))
	if first {
		w.log.Error("journal: write failed; the store refuses further writes until it is reopened",
			slog.String("dir", w.s.opts.Dir), slog.Any("err", err))
	}
	return failed
}

func (w *writer) run() {
	defer close(w.exited)
	var tick <-chan time.Time
	if w.strategy == SyncPeriodic {
		t := time.NewTicker(w.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		w.q.Gather()
		group, closing := w.q.Take()
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
		case <-w.q.Wake():
		case <-tick:
			if len(w.dirty) > 0 && w.failure() == nil {
				if err := w.syncDirty(); err != nil {
					w.fail(err)
				}
			}
		}
	}
}

// process writes, syncs, applies and completes one group.
func (w *writer) process(group []*request) {
	if err := w.failure(); err != nil {
		w.q.Complete(group, err)
		return
	}
	// SyncPeriodic: under a steady load the writer never idles at its ticker, so it
	// also syncs here once the interval has passed.
	needSync := w.strategy == SyncPeriodic && time.Since(w.syncedAt) >= w.interval
	buf := w.buf[:0]
	for _, r := range group {
		if !r.Take() {
			r.Err = persistence.ErrCanceled // withdrawn: neither written nor applied
			continue
		}
		if r.Force || (r.Dur == persistence.Sync && w.strategy == SyncAlways) {
			needSync = true
		}
		if r.Rec == nil || r.Err != nil {
			continue
		}
		end := w.size + int64(len(buf))
		if end > segHeaderSize && end+int64(len(r.Rec)) > w.maxFile {
			if err := w.write(buf); err != nil {
				w.q.Complete(group, w.fail(err))
				return
			}
			buf = buf[:0]
			if err := w.roll(); err != nil {
				w.q.Complete(group, w.fail(err))
				return
			}
		}
		base := uint32(w.size) + uint32(len(buf))
		for i := range r.Ops {
			if o := &r.Ops[i]; o.kind == opAdd || o.kind == opMove {
				o.loc.seg, o.loc.off = w.active.id, base+o.msgOff
			}
		}
		buf = append(buf, r.Rec...)
		groupcommit.PutBuf(r.Rec)
		r.Rec = nil
	}
	if cap(buf) <= 2*maxGroupBytes {
		w.buf = buf[:0]
	}
	if err := w.write(buf); err != nil {
		w.q.Complete(group, w.fail(err))
		return
	}
	if needSync {
		start := time.Now()
		if err := w.syncDirty(); err != nil {
			w.q.Complete(group, w.fail(err))
			return
		}
		waiters := 0
		for _, r := range group {
			if r.Done == nil && r.Dur == persistence.Sync && !r.Force {
				waiters++
			}
		}
		w.q.Synced(waiters, time.Since(start))
	}
	w.s.applyGroup(group, pos{w.active.id, w.size})
	w.q.Complete(group, nil)
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
	start := time.Now()
	for len(w.dirty) > 0 {
		seg := w.dirty[0]
		if err := seg.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", seg.path, err)
		}
		w.dirty = w.dirty[1:]
	}
	w.dirty = w.dirty[:0]
	w.syncedAt = time.Now()
	if obs := w.s.syncObs.Load(); obs != nil {
		(*obs)(w.syncedAt.Sub(start))
	}
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
