package journal

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/persistence/internal/batchrec"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
	"github.com/activemq-go/broker/persistence/internal/logshell"
)

// Group-commit limits (the others are logshell's).
const (
	// maxGroupBytes caps what one write takes from the queue (a larger record is
	// written alone).
	maxGroupBytes = 4 << 20
)

// request is one unit of work for the writer: a batch record to append, or a barrier
// (Rec == nil, Force set) that only asks that everything before it be made durable.
type request = logshell.Request[op]

// writer is the journal's side of the shell's writer goroutine (logshell.Log): it
// appends each group's records to the active segment with one Write, rolling over to a
// new segment when one is full, and fsyncs the segments written since their last sync.
// Any write or sync error puts the store in a failed state for good (see ErrFailed).
type writer struct {
	s        *Store
	strategy SyncStrategy
	interval time.Duration
	maxFile  int64
	log      *slog.Logger

	// Owned by the writer goroutine.
	syncedAt time.Time // when the last fsync ended (SyncPeriodic)
	active   *segment
	size     int64      // end of the active segment
	dirty    []*segment // segments written since their last sync
	buf      []byte
}

func newWriter(s *Store, active *segment) *writer {
	return &writer{
		s:        s,
		strategy: s.opts.SyncStrategy,
		interval: s.opts.SyncInterval,
		maxFile:  s.opts.MaxFileLength,
		log:      s.log,
		active:   active,
		size:     active.size.Load(),
		syncedAt: time.Now(),
	}
}

// Due reports, under SyncPeriodic, that the interval has passed: under a steady load
// the writer never idles at its ticker, so it also syncs a group then.
func (w *writer) Due() bool {
	return w.strategy == SyncPeriodic && time.Since(w.syncedAt) >= w.interval
}

// Add puts r's record into the group's buffer, rolling over to a new segment first
// when it would not fit the active one, and places its messages there.
func (w *writer) Add(r *request) error {
	end := w.size + int64(len(w.buf))
	if end > segHeaderSize && end+int64(len(r.Rec)) > w.maxFile {
		if err := w.Write(); err != nil {
			return err
		}
		if err := w.roll(); err != nil {
			return err
		}
	}
	base := uint32(w.size) + uint32(len(w.buf))
	for i := range r.Ops {
		if o := &r.Ops[i]; o.Kind == batchrec.OpAdd || o.Kind == opMove {
			o.loc.seg, o.loc.off = w.active.id, base+o.msgOff
		}
	}
	w.buf = append(w.buf, r.Rec...)
	groupcommit.PutBuf(r.Rec)
	r.Rec = nil
	return nil
}

// Write appends the group's buffer to the active segment.
func (w *writer) Write() error {
	err := w.write(w.buf)
	if cap(w.buf) <= 2*maxGroupBytes {
		w.buf = w.buf[:0]
	} else {
		w.buf = nil
	}
	return err
}

// Sync fsyncs the segments written since their last sync.
func (w *writer) Sync() error { return w.syncDirty() }

// Final syncs what Close leaves unsynced.
func (w *writer) Final() error { return w.syncDirty() }

// Apply applies the batches of a written group to the index and records the journal
// position it reaches.
func (w *writer) Apply(group []*request) {
	x := w.s.idx
	for _, r := range group {
		if r.Err != nil {
			continue
		}
		for i := range r.Ops {
			x.apply(&r.Ops[i])
		}
	}
	x.applied = pos{w.active.id, w.size}
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
