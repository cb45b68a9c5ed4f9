package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
	"github.com/activemq-go/broker/persistence/internal/indexstate"
)

func init() { persistence.Register("kahadb", open) }

// open is the registered opener: it parses the kahaDB block and opens the store on the
// real file system.
func open(ctx context.Context, po persistence.Options) (persistence.Store, error) {
	o, err := ParseOptions(po)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Compile-time guards: a Store is a persistence.Store with the SpaceReporter power.
var (
	_ persistence.Store         = (*Store)(nil)
	_ persistence.SpaceReporter = (*Store)(nil)
	_ persistence.Sizer         = (*Store)(nil)
	_ persistence.Container     = (*Store)(nil)
	_ persistence.SyncObserver  = (*Store)(nil)
)

// Store is the journal persistence adapter. It is safe for concurrent use.
type Store struct {
	pinnedLogged string // the oldest live segment last logged by cleanup

	opts Options
	fs   vfs.FS
	log  *slog.Logger
	lock io.Closer

	// mu guards the index and closed. Lock order: segs.mu, then mu.
	mu     sync.RWMutex
	idx    *index
	closed bool

	segs      *segmentSet
	w         *writer
	callbacks *completion.Runner

	ckptMu  sync.Mutex    // one checkpoint at a time
	ckpts   []checkpointF // retained checkpoint files, oldest first
	nextGen uint64
	nextRun uint64 // the last run file id used (ckptMu)
	closing bool   // the final checkpoint runs (ckptMu)

	// runFiles are the run files by segment, deleted with it; segs.mu guards them.
	runFiles map[uint32][]runFile

	stop      chan struct{}
	bgDone    chan struct{}
	closeOnce sync.Once
	closeErr  error

	recovery RecoveryInfo

	corruptMu   sync.Mutex
	corruptSeen map[loc]bool // messages Scan found corrupt, logged once each

	syncObs atomic.Pointer[func(time.Duration)] // see SetSyncObserver
}

// SetSyncObserver makes the writer report how long each fsync of the journal's
// segments took (persistence.SyncObserver): one report per synced group commit.
func (s *Store) SetSyncObserver(fn func(time.Duration)) {
	if fn == nil {
		s.syncObs.Store(nil)
		return
	}
	s.syncObs.Store(&fn)
}

// Open opens (creating it if needed) the journal in o.Dir, recovers its index and starts
// the writer and the background checkpointer.
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:        o,
		fs:          o.FS,
		log:         o.Logger,
		segs:        &segmentSet{dir: o.Dir, fs: o.FS, segs: make(map[uint32]*segment)},
		stop:        make(chan struct{}),
		bgDone:      make(chan struct{}),
		corruptSeen: make(map[loc]bool),
		runFiles:    make(map[uint32][]runFile),
	}
	if err := s.fs.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: create directory: %w", err)
	}
	lock, err := s.fs.Lock(filepath.Join(o.Dir, "lock"))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, o.Dir)
		}
		return nil, fmt.Errorf("journal: lock %s: %w", o.Dir, err)
	}
	s.lock = lock
	active, err := s.recover(ctx)
	if err != nil {
		return nil, errors.Join(err, s.closeRunFiles(), s.segs.closeAll(), lock.Close())
	}
	s.callbacks = completion.NewRunner()
	s.w = newWriter(s, active, s.callbacks)
	go s.w.run()
	go s.background()
	return s, nil
}

// applyGroup applies the batches of a written group to the index, under one lock so no
// reader sees part of it, and records the journal position it reaches.
func (s *Store) applyGroup(group []*request, end pos) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range group {
		if r.Err != nil {
			continue
		}
		for i := range r.Ops {
			s.idx.apply(&r.Ops[i])
		}
	}
	s.idx.applied = end
}

// checkOpen returns ErrClosed after Close and the sticky error of a failed store.
func (s *Store) checkOpen() error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return persistence.ErrClosed
	}
	return s.w.failure()
}

// Contains implements persistence.Container: extents and the log answer from memory; of
// the runs, only those whose filter may hold seq are read, one fence block each.
func (s *Store) Contains(_ context.Context, dest string, seq uint64) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.idx.dests[dest]
	if d == nil {
		return false, nil
	}
	if d.extentOf(seq) != nil || d.log.Contains(seq) {
		return true, nil
	}
	var buf []byte
	_, _, _, ok, err := d.runFind(seq, &buf)
	return ok, err
}

// Begin starts a batch.
func (s *Store) Begin() persistence.Batch { return s.newBatch() }

// Recover reports the destinations an Add was ever committed to, sorted by name, and the
// durable subscriptions, sorted by client ID and name. It may be called at any time.
func (s *Store) Recover(ctx context.Context) (*persistence.Recovered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, persistence.ErrClosed
	}
	return indexstate.Recovered(s.idx.dests, s.idx.subs), nil
}

// Stats returns the number of stored messages of dest and the sum of their body lengths;
// (0, 0) for an unknown destination or a closed store.
func (s *Store) Stats(dest string) (msgs, bytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, 0
	}
	return indexstate.Stats(s.idx.dests, dest)
}

// DiskUsage returns the bytes the store occupies on disk: segments, run files and
// checkpoints.
func (s *Store) DiskUsage() int64 {
	n := s.segs.diskUsage() + s.runDiskUsage()
	s.ckptMu.Lock()
	for _, c := range s.ckpts {
		n += c.size
	}
	s.ckptMu.Unlock()
	return n
}

// Size is DiskUsage, for systemUsage storeUsage.
func (s *Store) Size(context.Context) (int64, error) { return s.DiskUsage(), nil }

// OldestSegment reports the oldest segment file that still holds a stored message, and
// the destination of one such message: what keeps the journal from shrinking (a
// forgotten queue, a DLQ, an offline durable subscriber). ok is false when no segment
// holds a stored message.
func (s *Store) OldestSegment() (file string, dest string, ok bool) {
	s.segs.mu.RLock()
	defer s.segs.mu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return "", "", false
	}
	for _, id := range s.segs.ids() {
		if st := s.idx.live[id]; st == nil || st.msgs == 0 {
			continue
		}
		file = s.segs.get(id).path
		for _, d := range s.idx.dests {
			if d.holdsIn(id) {
				return file, d.name, true
			}
		}
		return file, "", true
	}
	return "", "", false
}

// RecoveryInfo says what Open found and did.
type RecoveryInfo struct {
	Checkpoint      string         // the checkpoint file loaded, "" if none
	Segments        int            // segment files found
	ReplayedRecords int            // records replayed after the checkpoint
	ReplayedBytes   int64          // bytes of them
	TruncatedBytes  int64          // torn tail cut off the last segment
	Corrupt         []CorruptRange // damaged ranges skipped
	LostMessages    int            // indexed messages whose data is missing: dropped
	Duration        time.Duration
}

// CorruptRange is a damaged range of a file that recovery skipped.
type CorruptRange struct {
	File   string
	Offset int64
	Length int64
	Reason string
}

// Recovery returns what Open found and did.
func (s *Store) Recovery() RecoveryInfo { return s.recovery }

// background checkpoints and cleans up on the configured intervals until Close.
func (s *Store) background() {
	defer close(s.bgDone)
	ticker := func(d time.Duration) (<-chan time.Time, func()) {
		if d < 0 {
			return nil, func() {}
		}
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
	ckpt, stop1 := ticker(s.opts.CheckpointInterval)
	defer stop1()
	cleanup, stop2 := ticker(s.opts.CleanupInterval)
	defer stop2()
	for {
		select {
		case <-s.stop:
			return
		case <-ckpt:
			if err := s.checkpoint(true); err != nil && !errors.Is(err, persistence.ErrClosed) && !errors.Is(err, ErrFailed) {
				s.log.Error("journal: checkpoint failed", slog.String("dir", s.opts.Dir), slog.Any("err", err))
			}
		case <-cleanup:
			if err := s.cleanup(); err != nil && !errors.Is(err, persistence.ErrClosed) && !errors.Is(err, ErrFailed) {
				s.log.Error("journal: cleanup failed", slog.String("dir", s.opts.Dir), slog.Any("err", err))
			}
		}
	}
}

// Close stops the background work, writes and syncs everything committed, writes a final
// checkpoint (so the next Open replays nothing) and releases the files. It returns the
// first I/O error of that, or the error that failed the store earlier. A second Close
// returns nil.
func (s *Store) Close() error {
	first := false
	s.closeOnce.Do(func() {
		first = true
		s.closeErr = s.close()
	})
	if !first {
		return nil
	}
	return s.closeErr
}

func (s *Store) close() error {
	close(s.stop)
	<-s.bgDone
	var errs []error
	werr := s.w.close()
	s.callbacks.Close()
	s.ckptMu.Lock()
	s.closing = true
	s.ckptMu.Unlock()
	if failed := s.w.failure(); failed != nil {
		errs = append(errs, failed)
	} else if err := s.checkpoint(false); err != nil {
		errs = append(errs, fmt.Errorf("journal: final checkpoint: %w", err))
	}
	if werr != nil && !slices.Contains(errs, werr) {
		errs = append(errs, werr)
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	errs = append(errs, s.closeRunFiles(), s.segs.closeAll(), s.lock.Close())
	return errors.Join(errs...)
}

// logCorruptOnce logs a message that a scan found damaged, once per location.
func (s *Store) logCorruptOnce(dest string, seq uint64, l loc, err error) {
	s.corruptMu.Lock()
	seen := s.corruptSeen[l]
	s.corruptSeen[l] = true
	s.corruptMu.Unlock()
	if !seen {
		s.log.Error("journal: stored message is damaged and skipped",
			slog.String("dest", dest), slog.Uint64("seq", seq),
			slog.String("file", segmentName(l.seg)), slog.Uint64("offset", uint64(l.off)),
			slog.Any("err", err))
	}
}

// isNotExist tells a missing file from other errors.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
