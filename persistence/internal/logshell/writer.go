package logshell

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
)

// Request is one committed batch on its way through the writer, or a barrier (Rec nil,
// Force set) that only asks that everything before it be made durable.
type Request[O any] = groupcommit.Request[O]

// Log is what the writer drives: the adapter's files. Every method but Final is called
// by the writer goroutine while it handles a group; an error of Add, Write, Sync or
// Final fails the store for good (see Shell.Fail), so each wraps its own I/O error with
// what it did ("write <file>: ...").
type Log[O any] interface {
	// Due reports whether the group about to be written must be synced whatever its
	// commits ask (a periodic sync is due).
	Due() bool
	// Add takes the record of r (not nil, r.Err nil) into the group being written. The
	// record's buffer is the Log's from then on (groupcommit.PutBuf it once copied).
	Add(r *Request[O]) error
	// Write writes what Add took since the last Write (possibly nothing).
	Write() error
	// Sync makes everything written durable; a no-op when nothing is unsynced.
	Sync() error
	// Apply applies the written group to the index: the requests whose Err is nil, in
	// order. The writer holds Shell.Mu for writing.
	Apply(group []*Request[O])
	// Final is the writer's last act at Close, once the queue is drained and the store
	// has not failed (the journal syncs what is unsynced).
	Final() error
}

// writer is the single goroutine that writes to the log. Each round it takes every
// request queued since the last one (up to the queue's MaxGroupBytes), hands their
// records to the Log, writes them, syncs once if the policy or a request asks for it,
// applies the batches to the index in queue order under one lock (so a batch is never
// visible in part and readers see batches in log order), and then wakes the
// committers. While it writes and syncs, the next group gathers in the queue: the more
// committers, the more batches per fsync.
//
// Durability and visibility: a group is applied after its write and, if it is synced,
// after its sync, so a Commit(Sync) under a SyncEach policy returns only when its batch
// is on disk, and a batch whose write or sync failed is never applied.
type writer[O any] struct {
	s   *Shell[O]
	log Log[O]

	exited  chan struct{}
	exitErr error // an error of Final, for Close

	// unsynced is when the first group written since the last sync went out unsynced
	// (Config.AsyncWithin; zero: none), and bound fires AsyncWithin after it.
	unsynced time.Time
	bound    *time.Timer
}

func (w *writer[O]) run() {
	defer close(w.exited)
	s := w.s
	var tick <-chan time.Time
	if s.cfg.SyncEvery > 0 {
		t := time.NewTicker(s.cfg.SyncEvery)
		defer t.Stop()
		tick = t.C
	}
	var bound <-chan time.Time
	if s.cfg.SyncCommits && s.cfg.AsyncWithin > 0 {
		w.bound = time.NewTimer(s.cfg.AsyncWithin)
		w.bound.Stop()
		defer w.bound.Stop()
		bound = w.bound.C
	}
	for {
		s.q.Gather()
		s.q.Hold()
		group, closing := s.q.Take()
		if len(group) > 0 {
			w.process(group)
			continue
		}
		if closing {
			if s.Failure() == nil {
				if err := w.log.Final(); err != nil {
					w.exitErr = s.Fail(err)
				}
			}
			return
		}
		select {
		case <-s.q.Wake():
		case <-tick:
			w.syncIdle()
		case <-bound:
			if !w.unsynced.IsZero() {
				w.unsynced = time.Time{}
				w.syncIdle()
			}
		}
	}
}

// syncIdle syncs what is unsynced while the writer has nothing to write.
func (w *writer[O]) syncIdle() {
	if w.s.Failure() == nil {
		if err := w.log.Sync(); err != nil {
			w.s.Fail(err)
		}
	}
}

// process writes, syncs, applies and completes one group.
func (w *writer[O]) process(group []*Request[O]) {
	s := w.s
	if err := s.Failure(); err != nil {
		s.q.Complete(group, err)
		return
	}
	needSync := w.log.Due() || w.asyncDue()
	wrote := false
	for _, r := range group {
		if !r.Take() {
			r.Err = persistence.ErrCanceled // withdrawn: neither written nor applied
			continue
		}
		if r.Force || (r.Dur == persistence.Sync && s.cfg.SyncCommits) {
			needSync = true
		}
		if r.Rec == nil || r.Err != nil {
			continue
		}
		if err := w.log.Add(r); err != nil {
			s.q.Complete(group, s.Fail(err))
			return
		}
		wrote = true
	}
	if err := w.log.Write(); err != nil {
		s.q.Complete(group, s.Fail(err))
		return
	}
	if needSync {
		// Also covers earlier groups that were not synced: a Sync commit is a barrier
		// for everything committed before it.
		start := time.Now()
		if err := w.log.Sync(); err != nil {
			s.q.Complete(group, s.Fail(err))
			return
		}
		waiters := 0
		for _, r := range group {
			if r.Done == nil && r.Dur == persistence.Sync && !r.Force {
				waiters++
			}
		}
		s.q.Synced(waiters, time.Since(start))
		w.unsynced = time.Time{}
	} else if wrote && w.bound != nil && w.unsynced.IsZero() {
		w.unsynced = time.Now()
		w.bound.Reset(s.cfg.AsyncWithin)
	}
	s.Mu.Lock()
	w.log.Apply(group)
	s.Mu.Unlock()
	s.q.Complete(group, nil)
}

// asyncDue reports that Async commits have waited AsyncWithin for a sync: under a
// steady load of them the writer never idles at its timer, so the group syncs.
func (w *writer[O]) asyncDue() bool {
	return !w.unsynced.IsZero() && time.Since(w.unsynced) >= w.s.cfg.AsyncWithin
}

// Fail records the first I/O error of the write path (logging it once) and returns the
// error the affected requests get: the adapter's ErrFailed wrapping err. From then on
// every commit fails with it.
func (s *Shell[O]) Fail(err error) error {
	failed, first := s.q.Fail(fmt.Errorf("%w: %w", s.cfg.ErrFailed, err))
	if first {
		s.cfg.Logger.Error(s.cfg.Name+": write failed; the store refuses further writes until it is reopened",
			slog.String("dir", s.cfg.Dir), slog.Any("err", err))
	}
	return failed
}

// Failure returns the error that failed the store, or nil.
func (s *Shell[O]) Failure() error { return s.q.Failure() }

// Barrier waits until everything committed before it is durable, whatever the policy.
func (s *Shell[O]) Barrier() error { return s.q.Barrier() }
