package kafkalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/internal/vfs"
)

// File name suffixes of a segment's three files.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentPrefix is the path of a segment's files without suffix: the base offset in 20
// digits.
func segmentPrefix(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d", base))
}

// parseSegmentName returns the base offset and suffix of a segment file name.
func parseSegmentName(name string) (int64, string, bool) {
	dot := strings.IndexByte(name, '.')
	if dot != 20 {
		return 0, "", false
	}
	base, err := strconv.ParseInt(name[:dot], 10, 64)
	if err != nil || base < 0 {
		return 0, "", false
	}
	return base, name[dot:], true
}

// segment is one file of a partition's log with its two indexes. The partition's lock
// guards every field; the log file may be read concurrently (ReadAt).
type segment struct {
	fs       vfs.FS
	base     int64
	prefix   string
	log      vfs.File
	idx      offsetIndex
	tidx     timeIndex
	size     int64 // bytes of whole batches in the log file
	next     int64 // offset after the segment's last record (base if empty)
	maxTs    int64 // largest record timestamp, math.MinInt64 if empty
	maxTsOff int64 // offset of a record with maxTs
	firstTs  int64 // wall time (ms) of the first append, for rolling by age; 0 if empty
	since    int   // log bytes since the last index entry
	interval int
	tail     tail
}

// createSegment creates the three (empty) files of a new segment. The caller syncs the
// directory.
func createSegment(fsys vfs.FS, dir string, base int64, interval int) (*segment, error) {
	s := &segment{fs: fsys, base: base, prefix: segmentPrefix(dir, base), next: base,
		maxTs: math.MinInt64, interval: interval}
	var err error
	if s.log, err = fsys.Create(s.prefix + logSuffix); err != nil {
		return nil, err
	}
	if s.idx.f, err = fsys.Create(s.prefix + indexSuffix); err != nil {
		s.close()
		return nil, err
	}
	if s.tidx.f, err = fsys.Create(s.prefix + timeIndexSuffix); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openSegment opens an existing segment's files, creating missing index files, and loads
// its indexes. It reports whether the indexes must be rebuilt (missing or failing their
// sanity check). nextBase is the next segment's base offset, or -1 for the last segment.
func openSegment(fsys vfs.FS, dir string, base, nextBase int64, interval int) (s *segment, rebuild bool, err error) {
	s = &segment{fs: fsys, base: base, prefix: segmentPrefix(dir, base), next: base,
		maxTs: math.MinInt64, interval: interval}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.log, err = fsys.OpenReadWrite(s.prefix + logSuffix); err != nil {
		return nil, false, err
	}
	if s.size, err = s.log.Size(); err != nil {
		return nil, false, err
	}
	maxRel := int64(-1)
	if nextBase >= 0 {
		maxRel = nextBase - base
	}
	b, missing, err := openIndexFile(fsys, s.prefix+indexSuffix, &s.idx.f)
	if err != nil {
		return nil, false, err
	}
	rebuild = missing
	if !rebuild {
		if s.idx.entries, err = parseOffsetIndex(b, s.size, maxRel); err != nil {
			rebuild = true
		}
	}
	b, missing, err = openIndexFile(fsys, s.prefix+timeIndexSuffix, &s.tidx.f)
	if err != nil {
		return nil, false, err
	}
	rebuild = rebuild || missing
	if !rebuild {
		if s.tidx.entries, err = parseTimeIndex(b, maxRel); err != nil {
			rebuild = true
		}
	}
	return s, rebuild, nil
}

// openIndexFile opens (or creates, reporting missing) an index file and returns its
// contents.
func openIndexFile(fsys vfs.FS, path string, f *vfs.File) ([]byte, bool, error) {
	var err error
	*f, err = fsys.OpenReadWrite(path)
	if errors.Is(err, fs.ErrNotExist) {
		*f, err = fsys.Create(path)
		return nil, true, err
	}
	if err != nil {
		return nil, false, err
	}
	n, err := (*f).Size()
	if err != nil {
		return nil, false, err
	}
	b := make([]byte, n)
	if _, err := (*f).ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return b, false, nil
}

// append writes one encoded batch (header h) and updates the indexes. now is the wall
// time in ms.
func (s *segment) append(frame []byte, h *batchHeader, now int64) error {
	pos := s.size
	if _, err := s.log.Write(frame); err != nil {
		return err
	}
	s.size += int64(len(frame))
	if s.firstTs == 0 {
		s.firstTs = now
	}
	if err := s.noteBatch(h, pos); err != nil {
		return err
	}
	s.tail.keep(frame)
	return nil
}

// noteBatch updates the in-memory state and the indexes for a batch at pos (append and
// rebuild).
func (s *segment) noteBatch(h *batchHeader, pos int64) error {
	s.next = h.lastOffset() + 1
	s.tail.note(uint32(h.BaseOffset-s.base), pos)
	if h.MaxTimestamp > s.maxTs {
		s.maxTs = h.MaxTimestamp
		s.maxTsOff = h.lastOffset() // an upper bound is enough for the time index
	}
	if s.since >= s.interval {
		if err := s.idx.add(uint32(h.BaseOffset-s.base), uint32(pos)); err != nil {
			return err
		}
		if err := s.tidx.maybeAdd(s.maxTs, uint32(s.maxTsOff-s.base)); err != nil {
			return err
		}
		s.since = 0
	}
	s.since += h.size()
	return nil
}

// rebuild rescans the whole log file: every batch is checked (framing, CRC, dense
// offsets from the base), the indexes are rebuilt, and a torn or corrupt tail is cut
// off. It returns the number of bytes truncated.
func (s *segment) rebuild(maxBatch int) (int64, error) {
	if err := s.idx.reset(); err != nil {
		return 0, err
	}
	if err := s.tidx.reset(); err != nil {
		return 0, err
	}
	fileSize, err := s.log.Size()
	if err != nil {
		return 0, err
	}
	s.next, s.maxTs, s.since, s.size = s.base, math.MinInt64, 0, 0
	sc := batchScanner{f: s.log, pos: 0, end: fileSize, chunk: 1 << 20, maxBatch: maxBatch, verify: true}
	for {
		pos := sc.pos
		frame, h, err := sc.next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrCorrupt) || err == nil && h.BaseOffset != s.next {
			break
		}
		if err != nil {
			return 0, err
		}
		if err := s.noteBatch(&h, pos); err != nil {
			return 0, err
		}
		s.size = pos + int64(len(frame))
		if s.firstTs == 0 {
			s.firstTs = h.FirstTimestamp
		}
	}
	if err := s.flushIndexes(); err != nil {
		return 0, err
	}
	cut := fileSize - s.size
	if cut > 0 {
		if err := s.log.Truncate(s.size); err != nil {
			return 0, err
		}
	}
	return cut, nil
}

// loadTail finds the end of a segment whose indexes are trusted (after a clean
// shutdown): it scans from the last index entry to the end of the file, as rebuild
// does, and reports whether the scan found the batches dense and whole.
func (s *segment) loadTail(maxBatch int) (bool, error) {
	start, startOff := int64(0), s.base
	if n := len(s.idx.entries); n > 0 {
		start, startOff = int64(s.idx.entries[n-1].pos), s.base+int64(s.idx.entries[n-1].rel)
	}
	if e, ok := s.tidx.last(); ok {
		s.maxTs, s.maxTsOff = e.ts, s.base+int64(e.rel)
	}
	if s.size >= batchHeaderSize {
		var hb [batchHeaderSize]byte
		if _, err := s.log.ReadAt(hb[:], 0); err != nil {
			return false, err
		}
		h, err := parseBatchHeader(hb[:], maxBatch)
		if err != nil {
			return false, nil
		}
		s.firstTs = h.FirstTimestamp
	}
	sc := batchScanner{f: s.log, pos: start, end: s.size, chunk: 1 << 20, maxBatch: maxBatch, verify: true}
	next := startOff
	for {
		_, h, err := sc.next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrCorrupt) || err == nil && h.BaseOffset != next {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		next = h.lastOffset() + 1
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.maxTsOff = h.MaxTimestamp, h.lastOffset()
		}
	}
	s.next = next
	s.since = int(s.size - start)
	return true, nil
}

// read appends to dst the records with offsets in [from, hw), batch by batch, while the
// frames read stay within budget bytes (the first batch is taken whatever its size when
// dst is empty). It returns the bytes used and whether it stopped early (budget or hw).
func (s *segment) read(dst []Record, from, hw int64, budget int, maxBatch int) ([]Record, int, bool, error) {
	rel := uint32(max(from-s.base, 0))
	pos, i := s.tail.lookup(rel)
	if i < 0 {
		pos = s.idx.lookup(rel)
	}
	end := s.size
	chunk := min(max(budget+2*s.interval, 64<<10), 8<<20)
	sc := batchScanner{f: s.log, pos: pos, end: end, chunk: chunk, maxBatch: maxBatch, fresh: true}
	if i >= 0 && s.tail.heldFrom(i) {
		sc.tail, sc.tailNext = &s.tail, i
	}
	used := 0
	for {
		frame, h, err := sc.next()
		if err == io.EOF {
			return dst, used, false, nil
		}
		if err != nil {
			return dst, used, true, err
		}
		if h.BaseOffset >= hw {
			return dst, used, true, nil
		}
		if h.lastOffset() < from {
			continue
		}
		if len(dst) > 0 && used+len(frame) > budget {
			return dst, used, true, nil
		}
		if dst == nil {
			// Size the result for the whole budget at once, but no larger than what is
			// visible: a reader at the tail reads a few records at a time.
			visible := hw - max(from, h.BaseOffset)
			dst = make([]Record, 0, min(int64(h.Count)*int64(budget/len(frame)+1), 1<<16, visible))
		}
		n := len(dst)
		if dst, _, err = decodeBatch(dst, frame, maxBatch); err != nil {
			return dst[:n], used, true, fmt.Errorf("segment %s at %d: %w", s.prefix, sc.pos-int64(len(frame)), err)
		}
		// drop records before from and at or after hw
		kept := dst[:n]
		for _, r := range dst[n:] {
			if r.Offset >= from && r.Offset < hw {
				kept = append(kept, r)
			}
		}
		dst = kept
		used += len(frame)
		if h.lastOffset()+1 >= hw {
			return dst, used, true, nil
		}
	}
}

// offsetForTime returns the offset of the first record with a timestamp ≥ ts, below hw.
func (s *segment) offsetForTime(ts, hw int64, maxBatch int) (int64, bool, error) {
	rel := s.tidx.lookup(ts)
	pos := s.idx.lookup(rel)
	sc := batchScanner{f: s.log, pos: pos, end: s.size, chunk: 1 << 20, maxBatch: maxBatch}
	for {
		frame, h, err := sc.next()
		if err == io.EOF || err == nil && h.BaseOffset >= hw {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		if h.MaxTimestamp < ts {
			continue
		}
		recs, _, err := decodeBatch(nil, frame, maxBatch)
		if err != nil {
			return 0, false, err
		}
		for _, r := range recs {
			if r.Offset >= hw {
				return 0, false, nil
			}
			if r.Timestamp >= ts {
				return r.Offset, true, nil
			}
		}
	}
}

// sealIndex adds the final time index entry, in memory: the first step of sealing a
// segment (on roll and close), with the partition's lock held for writing (readers look
// the index up). The readers' in-memory tail is dropped too, then or later.
func (s *segment) sealIndex() {
	if s.maxTs != math.MinInt64 {
		s.tidx.note(s.maxTs, uint32(s.maxTsOff-s.base))
	}
}

// syncSealed writes the index entries still in memory and fsyncs the segment's three
// files: the second step of sealing, without the partition's lock (only the writer
// touches the files and the entries not yet written).
func (s *segment) syncSealed() error {
	if err := s.flushIndexes(); err != nil {
		return err
	}
	return errors.Join(s.log.Sync(), s.idx.f.Sync(), s.tidx.f.Sync())
}

// flushIndexes writes the index entries gathered in memory to the index files.
func (s *segment) flushIndexes() error {
	return errors.Join(s.idx.flush(), s.tidx.flush())
}

// close closes the files that are open.
func (s *segment) close() error {
	var errs []error
	for _, f := range []vfs.File{s.log, s.idx.f, s.tidx.f} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// remove closes and deletes the segment's files, the log first so that a crash midway
// leaves only orphan index files, which open removes. The caller syncs the directory.
func (s *segment) remove() error {
	cerr := s.close()
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Remove(s.prefix + suf); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, cerr)...)
}

// batchScanner walks the batch frames of a log file from pos to end, reading chunk bytes
// at a time.
type batchScanner struct {
	f        vfs.File
	pos, end int64
	chunk    int
	maxBatch int
	verify   bool // check every frame's CRC (decodeBatch checks the ones it decodes)
	fresh    bool // allocate a new buffer on every refill, so frames stay valid

	buf    []byte
	bufPos int64

	// tail, if set, serves the frames from memory instead, from its batch tailNext on
	// (held from there to end).
	tail     *tail
	tailNext int
}

// next returns the frame at the scanner's position and advances past it. It returns
// io.EOF at end, an error wrapping ErrCorrupt for a torn or bad frame, and I/O errors as
// they are.
func (sc *batchScanner) next() ([]byte, batchHeader, error) {
	if sc.pos >= sc.end {
		return nil, batchHeader{}, io.EOF
	}
	if sc.tail != nil {
		frame := sc.tail.frame(sc.tailNext)
		if sc.fresh {
			frame = bytes.Clone(frame) // what Read returns owns its memory
		}
		h, err := parseBatchHeader(frame, sc.maxBatch)
		if err != nil {
			return nil, h, err
		}
		if sc.verify {
			if err := verifyBatch(frame, &h); err != nil {
				return nil, h, err
			}
		}
		sc.tailNext++
		sc.pos += int64(len(frame))
		return frame, h, nil
	}
	if sc.pos+batchHeaderSize > sc.end {
		return nil, batchHeader{}, fmt.Errorf("%w: torn batch header at %d", ErrCorrupt, sc.pos)
	}
	hb, err := sc.window(batchHeaderSize)
	if err != nil {
		return nil, batchHeader{}, err
	}
	h, err := parseBatchHeader(hb, sc.maxBatch)
	if err != nil {
		return nil, h, err
	}
	if sc.pos+int64(h.size()) > sc.end {
		return nil, h, fmt.Errorf("%w: torn batch at %d", ErrCorrupt, sc.pos)
	}
	frame, err := sc.window(h.size())
	if err != nil {
		return nil, h, err
	}
	if sc.verify {
		if err := verifyBatch(frame, &h); err != nil {
			return nil, h, err
		}
	}
	sc.pos += int64(len(frame))
	return frame, h, nil
}

// window returns n bytes at pos, refilling the buffer if needed.
func (sc *batchScanner) window(n int) ([]byte, error) {
	off := sc.pos - sc.bufPos
	if sc.buf != nil && off >= 0 && off+int64(n) <= int64(len(sc.buf)) {
		return sc.buf[off : off+int64(n)], nil
	}
	size := int(min(int64(max(n, sc.chunk)), sc.end-sc.pos))
	if sc.fresh || cap(sc.buf) < size {
		sc.buf = make([]byte, size)
	}
	sc.buf = sc.buf[:size]
	if _, err := sc.f.ReadAt(sc.buf, sc.pos); err != nil && !(errors.Is(err, io.EOF)) {
		sc.buf = nil
		return nil, err
	}
	sc.bufPos = sc.pos
	return sc.buf[:n], nil
}
