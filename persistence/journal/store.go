package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
	"github.com/activemq-go/broker/persistence/internal/logshell"
)

// The registered opener parses the kahaDB block and opens the store on the real file
// system. Registering holds a *Store to logshell.Store (a persistence.Store with the
// SpaceReporter and Sizer powers).
func init() { logshell.Register("kahadb", ParseOptions, Open) }

// Compile-time guards: a Store also has the Container and SyncObserver powers.
var (
	_ persistence.Container    = (*Store)(nil)
	_ persistence.SyncObserver = (*Store)(nil)
)

// Store is the journal persistence adapter. It is safe for concurrent use.
type Store struct {
	pinnedLogged string // the oldest live segment last logged by cleanup

	opts Options
	fs   vfs.FS
	log  *slog.Logger
	lock io.Closer

	// shell.Mu guards the index and shell.Closed. Lock order: segs.mu, then shell.Mu.
	shell logshell.Shell[op]
	idx   *index

	segs *segmentSet
	w    *writer

	ckptMu  sync.Mutex    // one checkpoint at a time
	ckpts   []checkpointF // retained checkpoint files, oldest first
	nextGen uint64
	nextRun uint64 // the last run file id used (ckptMu)
	closing bool   // the final checkpoint runs (ckptMu)

	// runFiles are the run files by segment, deleted with it; segs.mu guards them.
	runFiles map[uint32][]runFile

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
	o, err := options.Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:        o,
		fs:          o.FS,
		log:         o.Logger,
		segs:        &segmentSet{dir: o.Dir, fs: o.FS, segs: make(map[uint32]*segment)},
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
	s.w = newWriter(s, active)
	s.shell.Start(s.shellConfig(), s.w)
	return s, nil
}

// shellConfig is how the shell runs the journal: group commit into segments, syncs as
// the strategy says, checkpoints and cleanup in the background.
func (s *Store) shellConfig() logshell.Config[op] {
	o := s.opts
	c := logshell.Config[op]{
		Name: "journal", Dir: o.Dir, Logger: o.Logger, ErrFailed: ErrFailed,
		Index: s.idx, Records: &recAdapter,
		Queue: groupcommit.Config{
			MaxGroupBytes:       maxGroupBytes,
			MaxRecordBytes:      MaxRecordSize,
			ErrTooLarge:         ErrTooLarge,
			Seal:                finishRecord,
			StoreBeforeDispatch: o.StoreBeforeDispatch,
		},
		SyncCommits: o.SyncStrategy == SyncAlways,
		AsyncWithin: o.AsyncSyncDelay,
		Jobs: []logshell.Job{
			{What: "checkpoint", Every: o.CheckpointInterval, Run: func() error { return s.checkpoint(true) }},
			{What: "cleanup", Every: o.CleanupInterval, Run: s.cleanup},
		},
	}
	if o.SyncStrategy == SyncPeriodic {
		c.SyncEvery = o.SyncInterval
	}
	return c
}

// checkOpen returns ErrClosed after Close and the sticky error of a failed store.
func (s *Store) checkOpen() error { return s.shell.CheckOpen() }

// Contains implements persistence.Container: extents and the log answer from memory; of
// the runs, only those whose filter may hold seq are read, one fence block each.
func (s *Store) Contains(_ context.Context, dest string, seq uint64) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	s.shell.Mu.RLock()
	defer s.shell.Mu.RUnlock()
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
func (s *Store) Begin() persistence.Batch { return s.shell.Begin() }

// Recover reports the destinations an Add was ever committed to, sorted by name, and the
// durable subscriptions, sorted by client ID and name. It may be called at any time.
func (s *Store) Recover(ctx context.Context) (*persistence.Recovered, error) {
	return s.shell.Recover(ctx)
}

// Stats returns the number of stored messages of dest and the sum of their body lengths;
// (0, 0) for an unknown destination or a closed store.
func (s *Store) Stats(dest string) (msgs, bytes int64) { return s.shell.Stats(dest) }

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
	s.shell.Mu.RLock()
	defer s.shell.Mu.RUnlock()
	if s.shell.Closed {
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

// Close stops the background work, writes and syncs everything committed, writes a final
// checkpoint (so the next Open replays nothing) and releases the files. It returns the
// first I/O error of that, or the error that failed the store earlier. A second Close
// returns nil.
func (s *Store) Close() error {
	return s.shell.Close(func() error {
		s.ckptMu.Lock()
		s.closing = true
		s.ckptMu.Unlock()
		return s.checkpoint(false)
	}, func() error {
		return errors.Join(s.closeRunFiles(), s.segs.closeAll(), s.lock.Close())
	})
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
