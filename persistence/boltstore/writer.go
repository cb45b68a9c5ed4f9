package boltstore

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
)

// Group limits: the writer takes every queued batch into one transaction, up to these
// (always at least one batch). They bound the memory of one transaction's dirty pages
// and the wait of the first batch of a group.
const (
	maxGroupBatches = 4096
	maxGroupBytes   = 16 << 20
)

// request is one committed batch on its way through the writer. A request queued with
// err already set (a CommitAsync of a done or invalid batch) is not applied, only
// completed in its turn.
type request struct {
	ops   []op
	bytes int
	async bool // committed with persistence.Async: may wait for company (AsyncCommitDelay)

	// state moves from queued to taken (by the writer) or cancelled (by Commit, whose
	// ctx ended first); whoever moves it first decides.
	state atomic.Int32

	err  error         // the outcome, set before wait is closed or done is called
	wait chan struct{} // Commit: closed when err is set
	done func(error)   // CommitAsync
}

const (
	reqQueued int32 = iota
	reqTaken
	reqCancelled
)

// cancel withdraws a request the writer has not taken yet.
func (r *request) cancel() bool { return r.state.CompareAndSwap(reqQueued, reqCancelled) }

// writer is the single goroutine that writes: it takes every queued request, applies
// them in one bbolt Update (one commit: bbolt writes the pages, fdatasyncs, writes the
// meta page and fdatasyncs again), wakes the waiting Commits and hands
// the CommitAsync callbacks to the completer.
type writer struct {
	s *Store

	mu      sync.Mutex
	queue   []*request
	spare   []*request // the previous queue's array, reused
	closing bool
	failed  error // sticky: set once a commit left the file's state unknown

	wake   chan struct{} // capacity 1: something was queued, or closing
	exited chan struct{} // closed when run returns

	// Owned by the run goroutine: since when only Async requests have waited (zero:
	// not waiting), and the timer that ends the wait (Options.AsyncCommitDelay).
	asyncSince time.Time
	linger     *time.Timer

	// Counters for tests and diagnostics.
	updates atomic.Uint64 // bbolt Update calls (each one commit)
	batches atomic.Uint64 // requests applied by a successful Update

	completer *completion.Runner
}

func newWriter(s *Store) *writer {
	w := &writer{
		s:         s,
		wake:      make(chan struct{}, 1),
		exited:    make(chan struct{}),
		completer: completion.NewRunner(),
	}
	go w.run()
	return w
}

// check reports whether a commit could be accepted now.
func (w *writer) check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checkLocked()
}

func (w *writer) checkLocked() error {
	switch {
	case w.closing:
		return persistence.ErrClosed
	case w.failed != nil:
		return w.failed
	}
	return nil
}

// failure returns the sticky failure, nil if there is none.
func (w *writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// submit queues r for the writer.
func (w *writer) submit(r *request) error {
	w.mu.Lock()
	if err := w.checkLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// close stops accepting requests, lets the writer finish what is queued and waits
// for it and for every completion.
func (w *writer) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.exited
	w.completer.Close()
}

func (w *writer) run() {
	defer close(w.exited)
	var group []*request
	w.linger = time.NewTimer(time.Hour)
	w.linger.Stop()
	defer w.linger.Stop()
	for {
		if w.waitForSync() {
			continue
		}
		var closing bool
		group, closing = w.take(group[:0])
		if len(group) == 0 {
			if closing {
				return
			}
			<-w.wake
			continue
		}
		w.commitGroup(group)
		w.complete(group)
	}
}

// waitForSync holds back a queue of Async requests only, up to AsyncCommitDelay from
// when the first was found waiting, so that they share the transaction (and its syncs)
// of the next Commit(Sync) rather than cost one of their own. It reports whether it
// waited (the caller looks at the queue again); it does not wait once a Sync request is
// queued, the delay has passed, or the store closes.
func (w *writer) waitForSync() bool {
	delay := w.s.opts.AsyncCommitDelay
	if delay <= 0 {
		return false
	}
	w.mu.Lock()
	asyncOnly := len(w.queue) > 0 && !w.closing
	for _, r := range w.queue {
		if !r.async {
			asyncOnly = false
			break
		}
	}
	w.mu.Unlock()
	if !asyncOnly {
		w.asyncSince = time.Time{}
		return false
	}
	if w.asyncSince.IsZero() {
		w.asyncSince = time.Now()
	}
	left := delay - time.Since(w.asyncSince)
	if left <= 0 {
		w.asyncSince = time.Time{}
		return false
	}
	w.linger.Reset(left)
	select {
	case <-w.wake:
	case <-w.linger.C:
	}
	w.linger.Stop()
	return true
}

// complete wakes the Commits of group at once and hands its CommitAsync callbacks to
// the completer, in commit order.
func (w *writer) complete(group []*request) {
	for i, r := range group {
		if r.done == nil {
			close(r.wait)
		} else {
			w.completer.Push(r.done, r.err)
		}
		group[i] = nil
	}
}

// take moves queued requests into group, up to the group limits, skipping cancelled
// ones.
func (w *writer) take(group []*request) ([]*request, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, bytes := 0, 0
	for _, r := range w.queue {
		if len(group) > 0 && (len(group) >= maxGroupBatches || bytes+r.bytes > maxGroupBytes) {
			break
		}
		n++
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			group = append(group, r)
			bytes += r.bytes
		}
	}
	rest := len(w.queue) - n
	if rest == 0 {
		clear(w.queue)
		w.queue, w.spare = w.spare[:0], w.queue[:0]
	} else {
		copy(w.queue, w.queue[n:])
		clear(w.queue[rest:])
		w.queue = w.queue[:rest]
		select { // come back for the rest without waiting
		case w.wake <- struct{}{}:
		default:
		}
	}
	return group, w.closing
}

// commitGroup applies group in one Update and sets every request's err. A request whose
// operations fail to apply (an error of this adapter or a bbolt error before the
// commit, which bbolt rolls back cleanly) fails alone: the Update is retried without
// it. A failed commit fails the whole group; see fail for what happens next.
func (w *writer) commitGroup(group []*request) {
	s := w.s
	for {
		live := 0
		for _, r := range group {
			if r.err == nil && len(r.ops) > 0 {
				live++
			}
		}
		if live == 0 {
			return // only empty or failed requests: nothing to write
		}
		var (
			culprit  = -1
			applyErr error
			applied  bool
			txid     int
		)
		a := s.applier
		start := time.Now()
		err := s.db.Update(func(tx *bolt.Tx) error {
			txid = tx.ID()
			a.begin(tx)
			for i, r := range group {
				if r.err != nil || len(r.ops) == 0 {
					continue
				}
				if s.testHookApply != nil {
					if err := s.testHookApply(r.ops); err != nil {
						culprit, applyErr = i, err
						return err
					}
				}
				if err := a.applyBatch(r.ops); err != nil {
					culprit, applyErr = i, err
					return err
				}
			}
			if err := a.finish(); err != nil {
				return err
			}
			applied = true
			return nil
		})
		w.updates.Add(1)
		switch {
		case err == nil:
			w.batches.Add(uint64(live))
			s.observeSync(start)
			a.publish()
			return
		case culprit >= 0:
			a.discard()
			group[culprit].err = applyErr
			continue // again without the culprit
		case !applied:
			a.discard()
			for _, r := range group {
				if r.err == nil {
					r.err = err
				}
			}
			return
		default:
			a.discard()
			w.fail(group, txid, err)
			return
		}
	}
}

// fail handles a failed bbolt commit of transaction txid. bbolt rolls its in-memory
// state back, and as long as the new meta page did not take effect that is clean: the
// pages written belong to no committed tree, so later commits may proceed and each
// batch of the group simply failed. But if the meta page was written and only its sync
// failed, bbolt already reads the new state from the mapped file while the adapter's
// counters were discarded, and nobody knows whether that state is on disk. Then the
// store refuses every further write (ErrFailed) until it is reopened, which reads what
// is really on disk.
func (w *writer) fail(group []*request, txid int, err error) {
	var cur int
	verr := w.s.db.View(func(tx *bolt.Tx) error { cur = tx.ID(); return nil })
	if verr == nil && cur < txid {
		err = fmt.Errorf("boltstore: commit failed (nothing of it took effect): %w", err)
	} else {
		err = fmt.Errorf("%w: %w", ErrFailed, err)
		w.mu.Lock()
		w.failed = err
		w.mu.Unlock()
		w.s.log.Error("boltstore: commit failed, refusing further writes until reopened",
			slog.String("path", w.s.opts.Path), slog.Any("err", err))
	}
	for _, r := range group {
		if r.err == nil {
			r.err = err
		}
	}
}
