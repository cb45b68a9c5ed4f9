package logstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
	"github.com/activemq-go/broker/persistence/internal/indexstate"
)

func init() { persistence.Register("kafkalog", open) }

// open is the registered opener: it parses the kafkaLog block and opens the store on the
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
)

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

	// mu guards the index and closed.
	mu     sync.RWMutex
	idx    *index
	closed bool

	// delMu keeps segment deletion (and closing the log) out of scans: a scan holds it
	// for reading from before it picks the offsets of a page until it has read them.
	delMu sync.RWMutex

	w         *writer
	callbacks *completion.Runner

	ckptMu   sync.Mutex
	ckptLow  int64 // the low-water mark of the checkpoint on disk
	ckptSize atomic.Int64

	stop      chan struct{}
	bgDone    chan struct{}
	closeOnce sync.Once
	closeErr  error

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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := o.withDefaults()
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
		opts:   o,
		fs:     o.FS,
		lg:     o.Logger,
		log:    l,
		idx:    newIndex(),
		stop:   make(chan struct{}),
		bgDone: make(chan struct{}),
	}
	if err := s.recover(ctx); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	s.callbacks = completion.NewRunner()
	s.w = newWriter(s, s.callbacks)
	go s.w.run()
	go s.background()
	return s, nil
}

// applyGroup applies the batches of an appended group to the index, under one lock so no
// reader sees part of it. The records of the group got the offsets from base on, in
// order.
func (s *Store) applyGroup(group []*request, base int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := base
	for _, r := range group {
		if r.Err != nil || r.Rec == nil {
			continue
		}
		s.idx.applyRecord(off, r.Ops)
		off++
	}
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
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return "", "", false
	}
	low, ok := s.idx.pins.low()
	if ok {
		dest = s.idx.pinnedBy(low)
	}
	s.mu.RUnlock()
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

// background checkpoints on the configured interval until Close.
func (s *Store) background() {
	defer close(s.bgDone)
	if s.opts.CheckpointInterval < 0 {
		<-s.stop
		return
	}
	t := time.NewTicker(s.opts.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.checkpoint(); err != nil && !errors.Is(err, persistence.ErrClosed) && !errors.Is(err, ErrFailed) {
				s.lg.Error("logstore: checkpoint failed", slog.String("dir", s.opts.Dir), slog.Any("err", err))
			}
		}
	}
}

// Close stops the checkpointer, appends and syncs everything committed, writes a final
// checkpoint (so the next Open replays little) and closes the log. It returns the first
// error of that, or the error that failed the store earlier. A second Close returns nil.
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
	if failed := s.w.failure(); failed != nil {
		errs = append(errs, failed)
	} else if err := s.checkpoint(); err != nil {
		errs = append(errs, fmt.Errorf("logstore: final checkpoint: %w", err))
	}
	if werr != nil && !slices.Contains(errs, werr) {
		errs = append(errs, werr)
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.delMu.Lock() // wait for scans still reading the log
	errs = append(errs, s.log.Close())
	s.delMu.Unlock()
	return errors.Join(errs...)
}
