package logstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
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
type request = groupcommit.Request[op]

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
	s      *Store
	q      *groupcommit.Queue[op]
	flush  FlushPolicy
	exited chan struct{}

	// Owned by the writer goroutine.
	recs []kafkalog.Record
}

func newWriter(s *Store, callbacks *completion.Runner) *writer {
	w := &writer{s: s, flush: s.opts.Flush, exited: make(chan struct{})}
	w.q = groupcommit.New[op](groupcommit.Config{
		MaxGroupBytes:       maxGroupBytes,
		MaxQueuedBytes:      maxQueuedBytes,
		MaxLinger:           maxLinger,
		MaxRecordBytes:      MaxRecordBytes,
		ErrTooLarge:         ErrTooLarge,
		CheckOpen:           s.checkOpen,
		StoreBeforeDispatch: s.opts.StoreBeforeDispatch,
		Callbacks:           callbacks,
	})
	return w
}

// close makes the writer drain the queue and exit.
func (w *writer) close() error {
	w.q.Close()
	<-w.exited
	return w.failure()
}

// failure returns the sticky error, or nil.
func (w *writer) failure() error { return w.q.Failure() }

// fail records the first I/O error and returns the error the affected requests get.
func (w *writer) fail(err error) error {
	failed, first := w.q.Fail(fmt.Errorf("%w: %w", ErrFailed, err))
	if first {
		w.s.lg.Error("logstore: write failed; the store refuses further writes until it is reopened",
			slog.String("dir", w.s.opts.Dir), slog.Any("err", err))
	}
	return failed
}

func (w *writer) run() {
	defer close(w.exited)
	for {
		w.q.Gather()
		group, closing := w.q.Take()
		if len(group) > 0 {
			w.process(group)
			continue
		}
		if closing {
			return
		}
		<-w.q.Wake()
	}
}

// process appends, syncs, applies and completes one round.
func (w *writer) process(group []*request) {
	if err := w.failure(); err != nil {
		w.q.Complete(group, err)
		return
	}
	recs := w.recs[:0]
	needSync, syncWaiters := false, 0
	for _, r := range group {
		if !r.Take() {
			r.Err = persistence.ErrCanceled // withdrawn: neither appended nor applied
			continue
		}
		if r.Err != nil {
			continue
		}
		if r.Dur == persistence.Sync && w.flush == FlushBatch {
			needSync = true
			if r.Done == nil {
				syncWaiters++
			}
		}
		if r.Rec != nil {
			recs = append(recs, kafkalog.Record{Value: r.Rec})
		}
	}
	var base int64
	if len(recs) > 0 {
		var err error
		base, err = w.s.log.Append(logTopic, 0, recs)
		clear(recs) // the log copied the records into its frame
		w.recs = recs[:0]
		if err != nil {
			w.q.Complete(group, w.fail(fmt.Errorf("append: %w", err)))
			return
		}
	}
	if needSync {
		// Also covers Async rounds before this one that were never synced: a Sync
		// commit is a barrier for everything committed before it.
		start := time.Now()
		if err := w.s.log.Flush(); err != nil {
			w.q.Complete(group, w.fail(fmt.Errorf("sync: %w", err)))
			return
		}
		w.q.Synced(syncWaiters, time.Since(start))
	}
	w.s.applyGroup(group, base)
	w.q.Complete(group, nil)
}
