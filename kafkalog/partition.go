package kafkalog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/activemq-go/broker/internal/vfs"
)

// partition is one partition's log: an ordered list of segments, the last of which is
// active (appended to).
//
// Locking: appendMu serializes appends, with the roll an append may do, and close.
// syncMu serializes fsyncs of segments (the group commit of the active one, the sealing
// of a rolled one) and the detaching of segments to delete. mu guards everything else;
// readers take only mu. Order: appendMu, syncMu, mu. Work that waits on the disk (fsync,
// file creation and removal, directory sync, the checkpoint's atomic rewrite) is done
// holding appendMu or syncMu at most, never mu, so a slow disk does not hold readers:
// a roll prepares the new segment and swaps it in under mu; retention and DeleteBefore
// detach segments under mu and delete their files afterwards. Appends write the batch
// (to the page cache) under mu.
type partition struct {
	opts  *Options
	fs    vfs.FS
	topic string
	id    int
	dir   string
	// topicCfg is the topic's settings (retention), shared by its partitions.
	topicCfg *atomic.Pointer[TopicConfig]

	appendMu sync.Mutex
	marked   bool // the checkpoint says "unclean" since this open; guarded by appendMu

	syncMu sync.Mutex

	mu      sync.RWMutex
	segs    []*segment
	next    int64 // offset of the next record to append
	hw      int64 // records below are visible to readers
	synced  int64 // records below are fsynced
	failed  error // the first write or sync error; the partition refuses writes after it
	waitCh  chan struct{}
	closed  bool
	metrics struct{ appends, syncs int64 }
}

// encBufs recycles batch encoding buffers.
var encBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// name is "<topic>-<partition>".
func (p *partition) name() string { return fmt.Sprintf("%s-%d", p.topic, p.id) }

func (p *partition) active() *segment { return p.segs[len(p.segs)-1] }

// append appends recs as one batch and returns the first record's offset. With
// FlushBatch it returns once the batch is fsynced.
func (p *partition) append(recs []Record) (int64, error) {
	if len(recs) == 0 {
		return 0, ErrEmptyBatch
	}
	now := p.opts.Now()
	nowMs := now.UnixMilli()
	bp := encBufs.Get().(*[]byte)
	defer encBufs.Put(bp)
	// The base offset lies outside the CRC, so the batch is encoded before the lock is
	// taken and stamped with its offset under it.
	frame, h := appendBatch((*bp)[:0], 0, recs, nowMs)
	*bp = frame
	if len(frame) > p.opts.MaxBatchBytes {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(frame), p.opts.MaxBatchBytes)
	}

	base, end, err := p.write(frame, &h, nowMs)
	if err != nil {
		return 0, err
	}
	if p.opts.Flush == FlushBatch {
		return base, p.syncTo(end)
	}
	return base, nil
}

// write stamps frame (header h) with the next offset and writes it to the active
// segment, rolling it first if the frame does not belong in it. It returns the frame's
// first offset and the offset after it.
func (p *partition) write(frame []byte, h *batchHeader, nowMs int64) (base, end int64, err error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	// Under appendMu only this goroutine changes next and the active segment.
	p.mu.RLock()
	err = p.writable()
	active := p.active()
	base = p.next
	p.mu.RUnlock()
	if err != nil {
		return 0, 0, err
	}
	if !p.marked {
		if err := writeCheckpoint(p.fs, p.dir, checkpoint{point: active.base}); err != nil {
			return 0, 0, err // nothing written: the next append tries again
		}
		p.marked = true
	}
	h.BaseOffset = base
	binary.BigEndian.PutUint64(frame[bhBaseOffset:], uint64(base))
	p.mu.RLock()
	roll := p.shouldRoll(len(frame), h.lastOffset(), nowMs)
	p.mu.RUnlock()
	if roll {
		if err := p.roll(); err != nil {
			return 0, 0, p.fail(err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.writable(); err != nil { // a sync may have failed meanwhile
		return 0, 0, err
	}
	if err := p.active().append(frame, h, nowMs); err != nil {
		p.failed = err
		return 0, 0, err
	}
	p.next = h.lastOffset() + 1
	p.metrics.appends++
	if p.opts.Flush != FlushBatch {
		p.advance(p.next)
	}
	return base, p.next, nil
}

// fail records err as the partition's failure, unless it failed before, and returns it.
func (p *partition) fail(err error) error {
	p.mu.Lock()
	if p.failed == nil {
		p.failed = err
	}
	p.mu.Unlock()
	return err
}

// writable returns why the partition cannot take writes, if so. The caller holds mu.
func (p *partition) writable() error {
	switch {
	case p.closed:
		return ErrClosed
	case p.failed != nil:
		return fmt.Errorf("%w: %w", ErrPartitionFailed, p.failed)
	}
	return nil
}

// shouldRoll says whether a frame of n bytes ending at offset last must go to a new
// segment. The caller holds mu.
func (p *partition) shouldRoll(n int, last int64, nowMs int64) bool {
	s := p.active()
	if s.size == 0 {
		return false
	}
	return s.size+int64(n) > p.opts.SegmentBytes ||
		last-s.base > math.MaxUint32 ||
		p.opts.SegmentAge > 0 && nowMs-s.firstTs >= p.opts.SegmentAge.Milliseconds()
}

// roll seals the active segment (fsyncing it) and starts a new one at p.next. The
// caller holds appendMu, so neither changes meanwhile, and not mu: the disk work is done
// while readers read on, and the new segment is swapped in under mu at the end.
func (p *partition) roll() error {
	p.syncMu.Lock() // no group-commit fsync of the segment while it is sealed
	defer p.syncMu.Unlock()
	p.mu.Lock()
	old, base := p.active(), p.next
	old.sealIndex()
	p.mu.Unlock()
	if err := old.syncSealed(); err != nil {
		return err
	}
	s, err := createSegment(p.fs, p.dir, base, p.opts.IndexIntervalBytes)
	if err != nil {
		return err
	}
	if err := p.fs.SyncDir(p.dir); err != nil {
		s.close()
		return err
	}
	// Everything before the new segment is durable: recovery may start there.
	if err := writeCheckpoint(p.fs, p.dir, checkpoint{point: base}); err != nil {
		s.close()
		return err
	}
	p.mu.Lock()
	old.tail.drop() // readers of a sealed segment are behind: they read the file
	p.segs = append(p.segs, s)
	p.synced = max(p.synced, base)
	if p.opts.Flush == FlushBatch {
		p.advance(p.synced)
	}
	p.mu.Unlock()
	p.opts.Logger.Debug("kafkalog: segment rolled", slog.String("partition", p.name()), slog.Int64("base", s.base))
	return nil
}

// advance makes records below hw visible and wakes waiters. The caller holds mu.
func (p *partition) advance(hw int64) {
	if hw <= p.hw {
		return
	}
	p.hw = hw
	if p.waitCh != nil {
		close(p.waitCh)
		p.waitCh = nil
	}
}

// syncTo returns once every record below end is fsynced, syncing the active segment if no
// concurrent sync has covered end (group commit: one fsync serves every appender that
// wrote before it started).
func (p *partition) syncTo(end int64) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	p.mu.RLock()
	if p.synced >= end {
		p.mu.RUnlock()
		return nil
	}
	if err := p.writable(); err != nil {
		p.mu.RUnlock()
		return err
	}
	s, target := p.active(), p.next
	p.mu.RUnlock()
	err := s.log.Sync()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.failed == nil {
			p.failed = err
		}
		return fmt.Errorf("%w: %w", ErrPartitionFailed, err)
	}
	p.metrics.syncs++
	p.synced = max(p.synced, target)
	if p.opts.Flush == FlushBatch {
		p.advance(p.synced)
	}
	return nil
}

// flush fsyncs whatever is not yet synced (FlushInterval, Close).
func (p *partition) flush() error {
	p.mu.RLock()
	end, synced := p.next, p.synced
	p.mu.RUnlock()
	if synced >= end {
		return nil
	}
	return p.syncTo(end)
}

// read returns records from offset on, up to about maxBytes; see Log.Read.
func (p *partition) read(from int64, maxBytes int) ([]Record, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	oldest := p.segs[0].base
	if from < oldest || from > p.next {
		return nil, fmt.Errorf("%w: offset %d, partition %s-%d holds [%d, %d)", ErrOffsetOutOfRange,
			from, p.topic, p.id, oldest, p.next)
	}
	if from >= p.hw {
		return nil, nil
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base > from }) - 1
	var recs []Record
	used := 0
	for ; i < len(p.segs); i++ {
		var stop bool
		var n int
		var err error
		recs, n, stop, err = p.segs[i].read(recs, from, p.hw, maxBytes-used, p.opts.MaxBatchBytes)
		used += n
		if err != nil {
			return recs, err
		}
		if stop {
			break
		}
	}
	return recs, nil
}

// offsetForTime returns the offset of the first visible record with a timestamp ≥ ts, or
// the high watermark if none.
func (p *partition) offsetForTime(ts int64) (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return 0, ErrClosed
	}
	for _, s := range p.segs {
		if s.maxTs < ts || s.base >= p.hw {
			continue
		}
		off, ok, err := s.offsetForTime(ts, p.hw, p.opts.MaxBatchBytes)
		if err != nil || ok {
			return off, err
		}
	}
	return p.hw, nil
}

// wait returns once a record at or after offset is visible, or ctx is done.
func (p *partition) wait(ctx context.Context, offset int64) error {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return ErrClosed
		}
		if p.hw > offset {
			p.mu.Unlock()
			return nil
		}
		if p.waitCh == nil {
			p.waitCh = make(chan struct{})
		}
		ch := p.waitCh
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// bounds returns the oldest offset, the high watermark and the next offset.
func (p *partition) bounds() (oldest, hw, next int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.segs[0].base, p.hw, p.next
}

// close seals the active segment and writes a clean-shutdown checkpoint. Readers see
// ErrClosed from the start; the disk work follows outside mu.
func (p *partition) close() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.waitCh != nil {
		close(p.waitCh)
		p.waitCh = nil
	}
	failed, segs, next := p.failed, p.segs, p.next
	if failed == nil {
		p.active().sealIndex()
		p.active().tail.drop()
	}
	p.mu.Unlock()
	var errs []error
	if failed == nil {
		if err := segs[len(segs)-1].syncSealed(); err != nil {
			errs = append(errs, err)
		} else if err := writeCheckpoint(p.fs, p.dir, checkpoint{point: next, clean: true}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range segs {
		errs = append(errs, s.close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafkalog: close %s-%d: %w", p.topic, p.id, err)
	}
	return nil
}

func (p *partition) stats() PartitionStats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	st := PartitionStats{Segments: len(p.segs), Appends: p.metrics.appends, Syncs: p.metrics.syncs}
	for _, s := range p.segs {
		st.Bytes += s.size
	}
	return st
}
