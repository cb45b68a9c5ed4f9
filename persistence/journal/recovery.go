package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// recover builds the index at Open: load the newest usable checkpoint, open every
// segment, replay the records after the checkpoint's position, cut a torn tail off the
// last segment, skip (and report) damaged ranges, and drop index entries whose data is
// missing. It returns the segment the writer appends to.
func (s *Store) recover(ctx context.Context) (*segment, error) {
	start := time.Now()
	dir := s.opts.Dir
	names, err := s.fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var segIDs []uint32
	var gens []uint64
	for _, name := range names {
		if id, ok := parseSegmentName(name); ok {
			segIDs = append(segIDs, id)
		} else if gen, ok := parseCheckpointName(name); ok {
			gens = append(gens, gen)
		} else if strings.HasSuffix(name, ".ckpt"+vfs.TempSuffix) || strings.HasSuffix(name, ".idx"+vfs.TempSuffix) {
			if err := s.fs.Remove(filepath.Join(dir, name)); err != nil && !isNotExist(err) {
				return nil, fmt.Errorf("journal: remove %s: %w", name, err)
			}
		}
	}
	slices.Sort(segIDs)
	slices.Sort(gens)
	s.recovery.Segments = len(segIDs)

	segExists := make(map[uint32]bool, len(segIDs))
	for _, id := range segIDs {
		segExists[id] = true
	}
	from, err := s.loadNewestCheckpoint(gens, &runEnv{fs: s.fs, dir: dir, segs: segExists})
	if err != nil {
		return nil, err
	}
	if s.idx == nil {
		s.idx = newIndex()
		if len(segIDs) > 0 {
			from = pos{segIDs[0], segHeaderSize}
			if segIDs[0] != 1 || len(gens) > 0 {
				s.log.Warn("journal: no usable checkpoint; replaying every segment. Messages whose "+
					"acknowledgements were in deleted segments may reappear",
					slog.String("dir", dir), slog.String("first", segmentName(segIDs[0])))
			}
		}
	}

	if err := s.registerRunFiles(names, segExists); err != nil {
		return nil, fmt.Errorf("journal: run files: %w", err)
	}
	s.idx.runErr = func(err error) {
		s.log.Error("journal: cannot read a run file; the operation acts as if the message were not stored", slog.Any("err", err))
	}

	r := replayer{s: s, in: interner{}}
	var active *segment
	for i, id := range segIDs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		last := i == len(segIDs)-1
		seg, headerOK, err := s.openSegment(id, last)
		if err != nil {
			return nil, err
		}
		if last && headerOK {
			active = seg
		}
		if id < from.seg {
			continue
		}
		off := int64(segHeaderSize)
		if id == from.seg {
			off = from.off
		}
		if err := r.replay(seg, off, last); err != nil {
			return nil, err
		}
	}
	if active == nil { // no segment yet, or the last one's header is damaged
		id := from.seg + 1
		if n := len(segIDs); n > 0 {
			id = max(id, segIDs[n-1]+1)
		}
		if active, err = s.segs.create(id, true); err != nil {
			return nil, fmt.Errorf("journal: create segment: %w", err)
		}
	}
	s.dropMissing()
	if n := len(s.ckpts); n > 0 && s.ckpts[n-1].version == ckptVersionV1 {
		s.extentsFromLogs()
	}

	s.recovery.Duration = time.Since(start)
	msgs := int64(0)
	for _, d := range s.idx.dests {
		msgs += d.msgs
	}
	s.log.Info("journal: opened", slog.String("dir", dir), slog.Int("segments", len(segIDs)),
		slog.String("checkpoint", s.recovery.Checkpoint), slog.Int64("messages", msgs),
		slog.Int("replayedRecords", s.recovery.ReplayedRecords), slog.Int64("replayedBytes", s.recovery.ReplayedBytes),
		slog.Duration("took", s.recovery.Duration))
	return active, nil
}

// loadNewestCheckpoint loads the newest checkpoint that is intact into s.idx (leaving it
// nil if none is) and returns its position. Damaged newer ones are reported and
// removed; the one before the loaded one stays retained, older ones are removed.
func (s *Store) loadNewestCheckpoint(gens []uint64, env *runEnv) (pos, error) {
	dir := s.opts.Dir
	if n := len(gens); n > 0 {
		s.nextGen = gens[n-1]
	}
	for i := len(gens) - 1; i >= 0; i-- {
		path := filepath.Join(dir, checkpointName(gens[i]))
		x, c, err := loadCheckpoint(s.fs, path, env)
		if err != nil {
			s.log.Error("journal: checkpoint unusable; trying an older one", slog.String("file", path), slog.Any("err", err))
			s.recovery.Corrupt = append(s.recovery.Corrupt, CorruptRange{File: path, Reason: err.Error()})
			if err := s.fs.Remove(path); err != nil && !isNotExist(err) {
				return pos{}, fmt.Errorf("journal: remove %s: %w", path, err)
			}
			continue
		}
		s.idx, s.recovery.Checkpoint = x, path
		s.ckpts = []checkpointF{c}
		for j := i - 1; j >= 0; j-- {
			p := filepath.Join(dir, checkpointName(gens[j]))
			if j == i-1 {
				if prev, ok := peekCheckpoint(s.fs, p); ok {
					s.ckpts = []checkpointF{prev, c}
					continue
				}
			}
			if err := s.fs.Remove(p); err != nil && !isNotExist(err) {
				return pos{}, fmt.Errorf("journal: remove %s: %w", p, err)
			}
		}
		return c.pos, nil
	}
	return pos{}, nil
}

// peekCheckpoint reads the header of a checkpoint file.
func peekCheckpoint(fsys vfs.FS, path string) (checkpointF, bool) {
	f, err := fsys.Open(path)
	if err != nil {
		return checkpointF{}, false
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return checkpointF{}, false
	}
	h := make([]byte, ckptHeaderSize)
	if n, _ := f.ReadAt(h, 0); n < len(h) {
		return checkpointF{}, false
	}
	_, gen, p, err := readCheckpointHeader(h)
	if err != nil {
		return checkpointF{}, false
	}
	return checkpointF{gen: gen, pos: p, path: path, size: size}, true
}

// openSegment opens segment id (for appending if it is the last) and registers it. A
// damaged header is reported; a last segment too short to hold one (its creation was
// torn) gets it rewritten.
func (s *Store) openSegment(id uint32, last bool) (*segment, bool, error) {
	path := filepath.Join(s.opts.Dir, segmentName(id))
	var f vfs.File
	var err error
	if last {
		f, err = s.fs.OpenReadWrite(path)
	} else {
		f, err = s.fs.Open(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("journal: open %s: %w", path, err)
	}
	seg := &segment{id: id, path: path, f: f}
	s.segs.segs[id] = seg // closed by Open's error path
	size, err := f.Size()
	if err != nil {
		return nil, false, fmt.Errorf("journal: size of %s: %w", path, err)
	}
	h := make([]byte, segHeaderSize)
	n, _ := f.ReadAt(h, 0)
	herr := checkSegmentHeader(h[:n], id)
	switch {
	case herr == nil:
	case last && size < segHeaderSize:
		s.log.Warn("journal: rewriting the header of a segment whose creation was torn",
			slog.String("file", path), slog.Int64("bytes", size))
		s.recovery.TruncatedBytes += size
		if err := errors.Join(f.Truncate(0), writeAll(f, segmentHeader(id)), f.Sync()); err != nil {
			return nil, false, fmt.Errorf("journal: repair %s: %w", path, err)
		}
		size, herr = segHeaderSize, nil
	default:
		s.reportCorrupt(path, 0, min(size, segHeaderSize), herr)
	}
	seg.size.Store(size)
	return seg, herr == nil, nil
}

func writeAll(f vfs.File, p []byte) error {
	n, err := f.Write(p)
	if err == nil && n < len(p) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(p))
	}
	return err
}

// reportCorrupt records and logs a damaged range that recovery skips.
func (s *Store) reportCorrupt(file string, off, length int64, err error) {
	s.recovery.Corrupt = append(s.recovery.Corrupt, CorruptRange{File: file, Offset: off, Length: length, Reason: err.Error()})
	s.log.Error("journal: damaged data skipped", slog.String("file", file), slog.Int64("offset", off),
		slog.Int64("bytes", length), slog.Any("err", err))
}

// replayer replays segments into the store's index.
type replayer struct {
	s   *Store
	in  interner
	ops []op
	buf []byte
}

// replay applies the records of seg from off on. In the last segment, data after the
// last good record that holds no good record is a torn write: it is cut off. Anywhere
// else a bad range is reported and skipped, and replay goes on with the next good
// record.
func (r *replayer) replay(seg *segment, off int64, last bool) error {
	s := r.s
	size := seg.size.Load()
	if off > size {
		s.reportCorrupt(seg.path, size, off-size, fmt.Errorf("%w: segment ends before the checkpoint's position %d", ErrCorrupt, off))
		s.idx.applied = pos{seg.id, size}
		return nil
	}
	n := int(size - off)
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	data := r.buf[:n]
	if got, err := seg.f.ReadAt(data, off); got < n {
		return fmt.Errorf("journal: read %s: %w", seg.path, err)
	}
	p := 0
	for p < n {
		payload, rn, err := decodeFrame(data[p:])
		if err == nil {
			r.ops, err = decodeBatch(payload, r.in, r.ops)
			if err != nil { // a good checksum over a bad batch: skip the record
				s.reportCorrupt(seg.path, off+int64(p), int64(rn), err)
				p += rn
				continue
			}
			base := uint32(off) + uint32(p)
			for i := range r.ops {
				o := &r.ops[i]
				if o.Kind == batchrec.OpAdd || o.Kind == opMove {
					o.loc.seg, o.loc.off = seg.id, base+o.msgOff
				}
				s.idx.apply(o)
			}
			s.recovery.ReplayedRecords++
			s.recovery.ReplayedBytes += int64(rn)
			p += rn
			continue
		}
		next := resync(data, p, off)
		if next < 0 && last {
			if err := r.truncate(seg, off+int64(p)); err != nil {
				return err
			}
			n = p
			break
		}
		if next < 0 {
			next = n
		}
		s.reportCorrupt(seg.path, off+int64(p), int64(next-p), err)
		p = next
	}
	end := off + int64(p)
	if last && end%recordAlign != 0 { // the padding of the last record was cut: restore it
		pad := make([]byte, alignUp(int(end))-int(end))
		if err := errors.Join(writeAll(seg.f, pad), seg.f.Sync()); err != nil {
			return fmt.Errorf("journal: pad %s: %w", seg.path, err)
		}
		end += int64(len(pad))
		seg.size.Store(end)
	}
	s.idx.applied = pos{seg.id, end}
	return nil
}

// truncate cuts a torn tail off the last segment at off and syncs it, so the garbage
// cannot come back behind new records.
func (r *replayer) truncate(seg *segment, off int64) error {
	s := r.s
	size := seg.size.Load()
	if err := errors.Join(seg.f.Truncate(off), seg.f.Sync()); err != nil {
		return fmt.Errorf("journal: truncate %s: %w", seg.path, err)
	}
	seg.size.Store(off)
	s.recovery.TruncatedBytes += size - off
	s.log.Warn("journal: truncated a torn or damaged tail", slog.String("file", seg.path),
		slog.Int64("offset", off), slog.Int64("bytes", size-off))
	return nil
}

// resyncBudget bounds the bytes resync checksums while searching one damaged range, so
// data crafted to look like record headers cannot make recovery quadratic.
const resyncBudget = 256 << 20

// resync returns the index in data of the first good record after p (records start at
// file offsets that are multiples of recordAlign; data starts at file offset base), or
// -1.
func resync(data []byte, p int, base int64) int {
	q := p + 1
	if rem := (base + int64(q)) % recordAlign; rem != 0 {
		q += recordAlign - int(rem)
	}
	budget := resyncBudget
	for ; q+frameHeaderSize <= len(data) && budget > 0; q += recordAlign {
		if plausibleFrame(data[q:]) {
			if _, _, err := decodeFrame(data[q:]); err == nil {
				return q
			}
			budget -= min(int(binary.LittleEndian.Uint32(data[q+4:])), len(data)-q)
		}
	}
	return -1
}

// dropMissing removes index entries whose bytes are not in the segments (a segment
// deleted by hand, or shorter than the checkpoint says): those messages are lost, and
// the broker must not be handed places it cannot read.
func (s *Store) dropMissing() {
	lost := 0
	var rr recordReader
	for _, d := range s.idx.dests {
		var bad []uint64
		for _, e := range d.ext {
			bad = s.missingOfExtent(&rr, d, e, bad)
		}
		for _, e := range d.moved {
			bad = s.missingOfExtent(&rr, d, e, bad)
		}
		for _, r := range d.runs {
			bad = s.missingOfRun(r, bad)
		}
		d.log.After(0, func(seq uint64, l *loc) bool {
			seg := s.segs.segs[l.seg]
			if seg == nil || int64(l.off)+int64(l.n) > seg.size.Load() {
				bad = append(bad, seq)
			}
			return true
		})
		for _, seq := range bad {
			s.idx.drop(d, seq)
		}
		lost += len(bad)
		if len(bad) > 0 {
			slices.Sort(bad)
			s.log.Error("journal: stored messages lost: their data is missing from the segments",
				slog.String("dest", d.name), slog.Int("count", len(bad)), slog.Uint64("firstSeq", bad[0]))
		}
	}
	s.recovery.LostMessages = lost
}

// missingOfExtent appends to bad the messages of e whose data is not in its segment:
// all of them if the segment is gone, those not found before its end if it is shorter
// than e says.
func (s *Store) missingOfExtent(rr *recordReader, d *destination, e *extent, bad []uint64) []uint64 {
	seg := s.segs.segs[e.seg]
	if seg != nil && int64(e.end) <= seg.size.Load() {
		return bad
	}
	var want []uint64
	e.after(0, func(seq uint64) bool {
		want = append(want, seq)
		return true
	})
	if seg == nil || len(want) == 0 {
		return append(bad, want...)
	}
	out := make([]loc, len(want))
	// A read error ends the search: what was not found by then is lost.
	_, _ = rr.locate(e, seg, d.name, e.strideOff(want[0]), e.end, want, out, nil)
	for i, l := range out {
		if l.off == 0 || int64(l.off)+int64(l.n) > seg.size.Load() {
			bad = append(bad, want[i])
		}
	}
	return bad
}

// missingOfRun appends to bad the stored messages of r whose data is not in its
// segment (all of them if the segment is gone, or its file cannot be read).
func (s *Store) missingOfRun(r *run, bad []uint64) []uint64 {
	seg := s.segs.segs[r.seg]
	if seg != nil && int64(r.maxEnd) <= seg.size.Load() {
		return bad
	}
	var buf []byte
	all := seg == nil
	var seqs []uint64
	err := r.each(0, &buf, func(_ int, e runEntry) bool {
		if all || int64(e.l.off)+int64(e.l.n) > seg.size.Load() {
			seqs = append(seqs, e.seq)
		}
		return true
	})
	if err != nil {
		s.log.Error("journal: cannot read a run file", slog.String("file", r.path), slog.Any("err", err))
	}
	return append(bad, seqs...)
}
