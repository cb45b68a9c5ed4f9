package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/activemq-go/broker/internal/vfs"
)

// segment is one journal file, db-<id>.log. Its File is opened once and used for reading
// (ReadAt, concurrently) and, while it is the active segment, by the writer for
// appending.
type segment struct {
	id   uint32
	path string
	f    vfs.File
	size atomic.Int64 // bytes written so far (what readers may read)
}

// segmentName returns the file name of segment id.
func segmentName(id uint32) string { return "db-" + strconv.FormatUint(uint64(id), 10) + ".log" }

// parseSegmentName returns the id of a segment file name.
func parseSegmentName(name string) (uint32, bool) {
	s, ok := strings.CutPrefix(name, "db-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".log")
	if !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 {
		return 0, false
	}
	return uint32(id), true
}

// segmentHeader returns the 16-byte header of segment id.
func segmentHeader(id uint32) []byte {
	h := make([]byte, 0, segHeaderSize)
	h = append(h, segMagic...)
	h = binary.LittleEndian.AppendUint32(h, formatVersion)
	return binary.LittleEndian.AppendUint32(h, id)
}

// checkSegmentHeader checks the header of segment id.
func checkSegmentHeader(h []byte, id uint32) error {
	switch {
	case len(h) < segHeaderSize:
		return fmt.Errorf("%w: segment header is %d bytes", ErrCorrupt, len(h))
	case string(h[:8]) != segMagic:
		return fmt.Errorf("%w: not a journal segment (bad magic)", ErrCorrupt)
	case binary.LittleEndian.Uint32(h[8:]) != formatVersion:
		return fmt.Errorf("%w: unsupported segment format version %d (this build reads %d)",
			ErrCorrupt, binary.LittleEndian.Uint32(h[8:]), formatVersion)
	case binary.LittleEndian.Uint32(h[12:]) != id:
		return fmt.Errorf("%w: segment header names segment %d", ErrCorrupt, binary.LittleEndian.Uint32(h[12:]))
	}
	return nil
}

// segmentSet is the open segments. Readers (Scan, the compactor) hold mu for reading
// while they read segment files, so a segment is never closed under them; the writer
// takes it for writing to add a segment, the cleaner to delete one.
//
// Lock order: segmentSet.mu before Store.mu.
type segmentSet struct {
	mu   sync.RWMutex
	dir  string
	fs   vfs.FS
	segs map[uint32]*segment
}

// get returns segment id, or nil. The caller holds mu.
func (ss *segmentSet) get(id uint32) *segment { return ss.segs[id] }

// ids returns the ids of the open segments, sorted. The caller holds mu.
func (ss *segmentSet) ids() []uint32 {
	ids := make([]uint32, 0, len(ss.segs))
	for id := range ss.segs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// create creates segment id with its header, syncs it and (if syncDir) its directory
// entry, and adds it to the set.
func (ss *segmentSet) create(id uint32, syncDir bool) (*segment, error) {
	path := filepath.Join(ss.dir, segmentName(id))
	f, err := ss.fs.Create(path)
	if err != nil {
		return nil, err
	}
	seg := &segment{id: id, path: path, f: f}
	if _, err := f.Write(segmentHeader(id)); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if syncDir {
		if err := ss.fs.SyncDir(ss.dir); err != nil {
			return nil, errors.Join(err, f.Close())
		}
	}
	seg.size.Store(segHeaderSize)
	ss.mu.Lock()
	ss.segs[id] = seg
	ss.mu.Unlock()
	return seg, nil
}

// remove closes and deletes the segments ids. The caller holds mu for writing.
func (ss *segmentSet) remove(ids []uint32) error {
	var errs []error
	for _, id := range ids {
		seg := ss.segs[id]
		if seg == nil {
			continue
		}
		delete(ss.segs, id)
		errs = append(errs, seg.f.Close(), ss.fs.Remove(seg.path))
	}
	return errors.Join(errs...)
}

// closeAll closes every segment file.
func (ss *segmentSet) closeAll() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var errs []error
	for id, seg := range ss.segs {
		errs = append(errs, seg.f.Close())
		delete(ss.segs, id)
	}
	return errors.Join(errs...)
}

// diskUsage returns the bytes of all segments.
func (ss *segmentSet) diskUsage() int64 {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	var n int64
	for _, seg := range ss.segs {
		n += seg.size.Load()
	}
	return n
}

// readLocs reads the messages at locs into buf (reused) and returns, for each, its bytes
// (aliasing buf). Locations close to each other in one segment (as the messages of one
// batch are) are read with one ReadAt. A location whose bytes cannot be read gets a nil
// slice and its error in errs (errs is nil when all went well). The caller holds mu for
// reading.
func (ss *segmentSet) readLocs(locs []loc, buf []byte, out [][]byte) ([]byte, [][]byte, []error) {
	const (
		maxGap = 4 << 10 // read over gaps up to this size rather than issue another read
		maxRun = 1 << 20
	)
	type run struct {
		i, j     int // locs[i:j]
		from, to int64
	}
	var runsBuf [8]run
	runs := runsBuf[:0]
	total := 0
	for i := 0; i < len(locs); {
		from := int64(locs[i].off)
		to := from + int64(locs[i].n)
		j := i + 1
		for ; j < len(locs) && locs[j].seg == locs[i].seg; j++ {
			off, end := int64(locs[j].off), int64(locs[j].off)+int64(locs[j].n)
			if off < to || off-to > maxGap || end-from > maxRun {
				break
			}
			to = end
		}
		runs = append(runs, run{i, j, from, to})
		total += int(to - from)
		i = j
	}
	if cap(buf) < total {
		buf = make([]byte, total)
	}
	buf = buf[:total]
	out = out[:0]
	var errs []error
	at := 0
	for _, r := range runs {
		n := int(r.to - r.from)
		p := buf[at : at+n]
		var err error
		if seg := ss.segs[locs[r.i].seg]; seg == nil {
			err = fmt.Errorf("%w: segment %s is missing", ErrCorrupt, segmentName(locs[r.i].seg))
		} else if got, rerr := seg.f.ReadAt(p, r.from); got < n {
			err = rerr
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: short read (%d of %d bytes)", ErrCorrupt, got, n)
			}
		}
		for k := r.i; k < r.j; k++ {
			if err != nil {
				if errs == nil {
					errs = make([]error, len(locs))
				}
				errs[k] = fmt.Errorf("read %s at %d: %w", segmentName(locs[k].seg), locs[k].off, err)
				out = append(out, nil)
				continue
			}
			o := int(int64(locs[k].off) - r.from)
			out = append(out, p[o:o+int(locs[k].n):o+int(locs[k].n)])
		}
		at += n
	}
	return buf, out, errs
}
