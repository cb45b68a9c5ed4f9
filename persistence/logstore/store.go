package logstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
	"github.com/activemq-go/broker/persistence/internal/logshell"
)

// The registered opener parses the kafkaLog block and opens the store on the real file
// system. Registering holds a *Store to logshell.Store (a persistence.Store with the
// SpaceReporter and Sizer powers).
func init() { logshell.Register("kafkalog", ParseOptions, Open) }

// Layout inside Options.Dir.
const (
	// logDir is the kafkalog directory.
	logDir = "log"
	// logTopic is the internal single-partition topic holding the batch records.
	logTopic = "store"
)

// Size limits of the log.
const (
	// MaxRecordBytes bounds the record of one batch.
	MaxRecordBytes = 63 << 20
	// maxFrameBytes is the log's MaxBatchBytes: one record of MaxRecordBytes, or a group
	// of smaller ones (at most maxGroupBytes), plus framing.
	maxFrameBytes = 64 << 20
)

// Store is the kafkaLog persistence adapter. It is safe for concurrent use.
type Store struct {
	opts Options
	fs   vfs.FS
	lg   *slog.Logger
	log  *kafkalog.Log

	// shell.Mu guards the index and shell.Closed.
	shell logshell.Shell[op]
	idx   *index

	// delMu keeps segment deletion (and closing the log) out of scans: a scan holds it
	// for reading from before it picks the offsets of a page until it has read them.
	delMu sync.RWMutex

	ckptMu   sync.Mutex
	ckptLow  int64 // the low-water mark of the checkpoint on disk
	ckptSize atomic.Int64

	recovery RecoveryInfo
}

// RecoveryInfo says what Open found and did.
type RecoveryInfo struct {
	LowWater        int64 // the checkpoint's low-water mark: where replay started
	NextOffset      int64 // the end of the log
	ReplayedRecords int   // batch records replayed
	Duration        time.Duration
}

// Recovery returns what Open found and did.
func (s *Store) Recovery() RecoveryInfo { return s.recovery }

// Open opens (creating it if needed) the store in o.Dir, rebuilds its index from the
// checkpoint and the log after the low-water mark, and starts the writer and the
// background checkpointer.
func Open(ctx context.Context, o Options) (*Store, error) {
	o, err := options.Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := o.FS.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("logstore: create directory: %w", err)
	}
	flush := kafkalog.FlushOS // FlushBatch: the writer fsyncs itself, only for Sync commits
	if o.Flush == FlushInterval {
		flush = kafkalog.FlushInterval
	}
	l, err := kafkalog.Open(kafkalog.Options{
		FS:            o.FS,
		Dir:           filepath.Join(o.Dir, logDir),
		SegmentBytes:  o.SegmentBytes,
		Flush:         flush,
		FlushInterval: o.FlushInterval,
		// Live messages must never be dropped by time or size: only the low-water mark
		// deletes segments (DeleteBefore).
		Retention:              -1,
		RetentionBytes:         0,
		RetentionCheckInterval: -1,
		MaxBatchBytes:          maxFrameBytes,
		Logger:                 o.Logger,
	})
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, o.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("logstore: open log: %w", err)
	}
	switch n := l.Partitions(logTopic); n {
	case 0:
		if err := l.CreateTopic(logTopic, 1); err != nil {
			return nil, errors.Join(fmt.Errorf("logstore: create topic: %w", err), l.Close())
		}
	case 1:
	default:
		return nil, errors.Join(fmt.Errorf("%w: topic %q of %s has %d partitions, not 1", ErrCorrupt, logTopic, o.Dir, n), l.Close())
	}
	s := &Store{
		opts: o,
		fs:   o.FS,
		lg:   o.Logger,
		log:  l,
		idx:  newIndex(),
	}
	if err := s.recover(ctx); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	s.shell.Start(s.shellConfig(), &writer{s: s})
	return s, nil
}

// shellConfig is how the shell runs the store: group commit into the log, a flush per
// round holding a Sync commit under FlushBatch, checkpoints in the background.
func (s *Store) shellConfig() logshell.Config[op] {
	o := s.opts
	return logshell.Config[op]{
		Name: "logstore", Dir: o.Dir, Logger: o.Logger, ErrFailed: ErrFailed,
		Index: s.idx, Records: &recAdapter,
		Queue: groupcommit.Config{
			MaxGroupBytes:       maxGroupBytes,
			MaxRecordBytes:      MaxRecordBytes,
			ErrTooLarge:         ErrTooLarge,
			StoreBeforeDispatch: o.StoreBeforeDispatch,
		},
		SyncCommits: o.Flush == FlushBatch,
		Jobs:        []logshell.Job{{What: "checkpoint", Every: o.CheckpointInterval, Run: s.checkpoint}},
	}
}

// checkOpen returns ErrClosed after Close and the sticky error of a failed store.
func (s *Store) checkOpen() error { return s.shell.CheckOpen() }

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

// DiskUsage returns the bytes the store occupies on disk: the log's segment files and
// the checkpoint. (The log's sparse indexes, about 0.5% of the segments, are not
// counted: the broker reads this several times a second, and the log keeps the segment
// sizes in memory.)
func (s *Store) DiskUsage() int64 {
	n := s.ckptSize.Load()
	if st, err := s.log.Stats(logTopic, 0); err == nil {
		n += st.Bytes
	}
	return n
}

// Size is DiskUsage, for systemUsage storeUsage.
func (s *Store) Size(context.Context) (int64, error) { return s.DiskUsage(), nil }

// OldestSegment reports the log segment file holding the low-water mark, which keeps
// every later segment on disk, and the destination of the stored message that pins it:
// what keeps the log from shrinking (a forgotten queue, a DLQ, an offline durable
// subscriber). ok is false when nothing is stored.
func (s *Store) OldestSegment() (file, dest string, ok bool) {
	s.shell.Mu.RLock()
	if s.shell.Closed {
		s.shell.Mu.RUnlock()
		return "", "", false
	}
	low, ok := s.idx.pins.low()
	if ok {
		dest = s.idx.pinnedBy(low)
	}
	s.shell.Mu.RUnlock()
	if !ok {
		return "", "", false
	}
	return s.segmentFile(low), dest, true
}

// pinnedBy returns the destination of a stored message in the record at off.
func (x *index) pinnedBy(off int64) string {
	// Usually the message is at the head of its destination; otherwise look further.
	for _, full := range []bool{false, true} {
		for _, d := range x.dests {
			found := false
			d.log.After(0, func(_ uint64, l *msgLoc) bool {
				found = l.off == off
				return full && !found
			})
			if found {
				return d.name
			}
		}
	}
	return ""
}

// segmentFile returns the path of the log segment holding offset off: the one with the
// greatest base offset at or below it (kafkalog names segments by base offset, in 20
// digits).
func (s *Store) segmentFile(off int64) string {
	dir := filepath.Join(s.opts.Dir, logDir, logTopic+"-0")
	names, err := s.fs.List(dir)
	if err != nil {
		return ""
	}
	file := ""
	for _, name := range names {
		digits, isLog := strings.CutSuffix(name, ".log")
		base, err := strconv.ParseInt(digits, 10, 64)
		if isLog && len(digits) == 20 && err == nil && base <= off {
			file = filepath.Join(dir, name) // names are sorted: the last match wins
		}
	}
	return file
}

// Close stops the checkpointer, appends and syncs everything committed, writes a final
// checkpoint (so the next Open replays little) and closes the log. It returns the first
// error of that, or the error that failed the store earlier. A second Close returns nil.
func (s *Store) Close() error {
	return s.shell.Close(s.checkpoint, func() error {
		s.delMu.Lock() // wait for scans still reading the log
		defer s.delMu.Unlock()
		return s.log.Close()
	})
}
