// Package logshell is the shell the log-structured adapters (journal, logstore) share
// around their own files and index: the store's open/closed guard and index lock, Begin,
// Recover and Stats, the single writer goroutine of group commit (one write and at most
// one sync per group of batches), the background jobs (checkpoints, cleanup), Close, and
// the sync policy with its options.
//
// What is the adapter's stays there: how records are framed and written (a Log), what
// the index holds and how a batch applies to it, checkpoints and recovery.
package logshell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
	"github.com/activemq-go/broker/persistence/internal/completion"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
)

// Index is what Recover and Stats read of the adapter's index; the shell calls it with
// Mu held for reading.
type Index interface {
	// Recovered is Recover's answer (indexstate.Recovered of the index).
	Recovered() *persistence.Recovered
	// Stats is Stats's answer (indexstate.Stats of the index).
	Stats(dest string) (msgs, bytes int64)
}

// Job is work the shell runs in the background every Every until Close; jobs never run
// at the same time as each other.
type Job struct {
	What  string        // "checkpoint": an error is logged as "<Name>: checkpoint failed"
	Every time.Duration // negative: never
	Run   func() error
}

// Group-commit limits both adapters use; Init puts them in a Config.Queue that leaves
// them zero.
const (
	// MaxQueuedBytes is how much may wait in the queue before committers block
	// (backpressure for CommitAsync pipelines).
	MaxQueuedBytes = 64 << 20
	// MaxLinger bounds how long the writer waits for committers to come back after a
	// synced group (see groupcommit.Queue.Gather).
	MaxLinger = 500 * time.Microsecond
)

// Config sets up a Shell.
type Config[O any] struct {
	Name      string // the adapter's name, prefixing what it logs ("journal")
	Dir       string // the store's directory, for what it logs
	Logger    *slog.Logger
	ErrFailed error // the adapter's sentinel for a store failed by an I/O error
	// Index is the adapter's index, guarded by Mu.
	Index Index
	// Records is how the store's batches record operations.
	Records *batchrec.Adapter[O]
	// Queue configures the group-commit queue; Init sets its CheckOpen and Callbacks,
	// and MaxQueuedBytes and MaxLinger if zero.
	Queue groupcommit.Config
	// SyncCommits syncs every group that holds a Commit(Sync) before that Commit
	// returns (SyncEach).
	SyncCommits bool
	// SyncEvery, if positive, syncs what is unsynced every SyncEvery while the writer
	// is idle (SyncPeriodic; under a steady load Log.Due asks for it).
	SyncEvery time.Duration
	// AsyncWithin, if positive, bounds how long Async commits stay unsynced under
	// SyncCommits: they ride the next group that holds a Commit(Sync), and when none
	// comes within AsyncWithin of the first unsynced write, the writer syncs on its own
	// (at once when idle then, else with the next group). Zero or negative leaves them
	// to the next Commit(Sync), checkpoint, roll-over or Close.
	AsyncWithin time.Duration
	// Jobs run in the background until Close.
	Jobs []Job
}

// Shell is the part of a log-structured store the adapter embeds (as a named field:
// its exported fields are for the adapter, not the store's users). Init and Start set
// it up; Begin, Recover, Stats, CheckOpen and Close are the store's.
type Shell[O any] struct {
	// Mu guards the adapter's index and Closed: the writer applies each group under it
	// for writing, Recover and Stats read under it.
	Mu     sync.RWMutex
	Closed bool // set by Close, once the writer and the jobs stopped

	cfg       Config[O]
	q         *groupcommit.Queue[O]
	w         *writer[O]
	callbacks *completion.Runner

	stop      chan struct{}
	jobs      sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Store is what a log-structured adapter's store is: a persistence.Store that reports
// the space its files take (SpaceReporter, Sizer). Register holds the adapter's store
// type to it, so the adapter needs no compile-time guard of its own for these.
type Store interface {
	persistence.Store
	persistence.SpaceReporter
	persistence.Sizer
}

// Register registers an adapter under name (persistence.Register): its opener parses
// the adapter's block of options with parse and opens the store with open.
func Register[T any, S Store](name string, parse func(persistence.Options) (T, error),
	open func(context.Context, T) (S, error)) {
	persistence.Register(name, func(ctx context.Context, po persistence.Options) (persistence.Store, error) {
		o, err := parse(po)
		if err != nil {
			return nil, err
		}
		s, err := open(ctx, o)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

// Init sets the shell up to record batches: Begin works, and Commit once Start ran.
// callbacks runs the Done callbacks of asynchronous commits (nil in tests that only
// record).
func (s *Shell[O]) Init(cfg Config[O], callbacks *completion.Runner) {
	s.cfg = cfg
	s.callbacks = callbacks
	cfg.Queue.CheckOpen = s.CheckOpen
	cfg.Queue.Callbacks = callbacks
	if cfg.Queue.MaxQueuedBytes == 0 {
		cfg.Queue.MaxQueuedBytes = MaxQueuedBytes
	}
	if cfg.Queue.MaxLinger == 0 {
		cfg.Queue.MaxLinger = MaxLinger
	}
	cfg.Queue.HoldCancelable = cfg.SyncCommits
	s.q = groupcommit.New[O](cfg.Queue)
}

// Start sets the shell up (Init) and starts the writer over log and the jobs.
func (s *Shell[O]) Start(cfg Config[O], log Log[O]) {
	s.Init(cfg, completion.NewRunner())
	s.w = &writer[O]{s: s, log: log, exited: make(chan struct{})}
	go s.w.run()
	s.stop = make(chan struct{})
	var one sync.Mutex // jobs never overlap
	for _, j := range cfg.Jobs {
		if j.Every < 0 {
			continue
		}
		s.jobs.Go(func() {
			t := time.NewTicker(j.Every)
			defer t.Stop()
			for {
				select {
				case <-s.stop:
					return
				case <-t.C:
					one.Lock()
					s.runJob(j)
					one.Unlock()
				}
			}
		})
	}
}

// runJob runs j and logs its error unless the store is closed or failed (its failure
// was logged when it happened).
func (s *Shell[O]) runJob(j Job) {
	if err := j.Run(); err != nil && !errors.Is(err, persistence.ErrClosed) && !errors.Is(err, s.cfg.ErrFailed) {
		s.cfg.Logger.Error(s.cfg.Name+": "+j.What+" failed", slog.String("dir", s.cfg.Dir), slog.Any("err", err))
	}
}

// NewBatch starts a batch.
func (s *Shell[O]) NewBatch() *batchrec.Batch[O] {
	b := &batchrec.Batch[O]{}
	b.Init(s.q, s.cfg.Records)
	return b
}

// Begin starts a batch.
func (s *Shell[O]) Begin() persistence.Batch { return s.NewBatch() }

// CheckOpen returns persistence.ErrClosed after Close and the error of a failed store.
func (s *Shell[O]) CheckOpen() error {
	s.Mu.RLock()
	closed := s.Closed
	s.Mu.RUnlock()
	if closed {
		return persistence.ErrClosed
	}
	return s.Failure()
}

// Recover reports the destinations an Add was ever committed to, sorted by name, and the
// durable subscriptions, sorted by client ID and name. It may be called at any time.
func (s *Shell[O]) Recover(ctx context.Context) (*persistence.Recovered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	if s.Closed {
		return nil, persistence.ErrClosed
	}
	return s.cfg.Index.Recovered(), nil
}

// Stats returns the number of stored messages of dest and the sum of their body lengths;
// (0, 0) for an unknown destination or a closed store.
func (s *Shell[O]) Stats(dest string) (msgs, bytes int64) {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	if s.Closed {
		return 0, 0
	}
	return s.cfg.Index.Stats(dest)
}

// Close stops the jobs, makes the writer write (and Final) everything committed, runs
// the last callbacks, then, unless the store failed, final (the adapter's final
// checkpoint), marks the store closed and calls release (the adapter closes its files).
// It returns the errors of that, or the error that failed the store earlier. A second
// Close returns nil.
func (s *Shell[O]) Close(final, release func() error) error {
	first := false
	s.closeOnce.Do(func() {
		first = true
		s.closeErr = s.close(final, release)
	})
	if !first {
		return nil
	}
	return s.closeErr
}

func (s *Shell[O]) close(final, release func() error) error {
	close(s.stop)
	s.jobs.Wait()
	var errs []error
	s.q.Close()
	<-s.w.exited
	werr := s.w.exitErr
	s.callbacks.Close()
	if failed := s.Failure(); failed != nil {
		errs = append(errs, failed)
	} else if err := final(); err != nil {
		errs = append(errs, fmt.Errorf("%s: final checkpoint: %w", s.cfg.Name, err))
	}
	if werr != nil && !slices.Contains(errs, werr) {
		errs = append(errs, werr)
	}
	s.Mu.Lock()
	s.Closed = true
	s.Mu.Unlock()
	errs = append(errs, release())
	return errors.Join(errs...)
}
