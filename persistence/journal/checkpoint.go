package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// Checkpoint file constants (part of the on-disk format, see the package comment).
const (
	ckptMagic = "AMQGOIDX"
	// ckptVersion is the checkpoint layout this build writes; it reads it,
	// ckptVersionV2 (its extents' lengths converted at load; no runs: what a log held
	// in sealed segments stays in it until the next checkpoint spills it) and
	// ckptVersionV1 (converted at load: every message goes to its destination's log).
	ckptVersion    = 3
	ckptVersionV2  = 2
	ckptVersionV1  = 1
	ckptHeaderSize = 40
	ckptTrailer    = 12
	// retainedCheckpoints is how many checkpoint files are kept: if the newest is
	// damaged, the one before it still works, because segments are only deleted below
	// the oldest retained checkpoint's position.
	retainedCheckpoints = 2
)

// checkpointF is a checkpoint file on disk.
type checkpointF struct {
	version uint32 // of a loaded checkpoint (0: only its header was read)
	gen     uint64
	pos     pos // the journal position it covers: replay starts here
	path    string
	size    int64
	// runs are the paths of the run files it refers to; nil when unknown (only its
	// header was read).
	runs map[string]bool
}

func checkpointName(gen uint64) string {
	return "index-" + strconv.FormatUint(gen, 10) + ".ckpt"
}

func parseCheckpointName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "index-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".ckpt")
	if !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	gen, err := strconv.ParseUint(s, 10, 64)
	return gen, err == nil && gen > 0
}

// snapshot is a consistent copy of the index at a journal position, taken under the
// read lock and written out without it.
type snapshot struct {
	pos   pos
	dests []destSnap
}

type destSnap struct {
	name    string
	added   bool
	lastSeq uint64
	curSeg  uint32
	curMax  uint64
	addMin  uint64
	movMax  uint64
	ext     []*extent
	moved   []*extent
	keys    []uint64 // the log
	locs    []loc
	runs    []runSnap
	subs    []subSnap
}

// runSnap is what a checkpoint says of a run: its file and which entries are stored.
type runSnap struct {
	path  string
	id    uint64
	seg   uint32
	count int
	crc   uint32
	live  []uint64
}

type subSnap struct {
	info    persistence.SubInfo
	pending seqSet
}

// snapshot copies the index: extents (a bit per seq plus their tables), the logs' live
// entries (24 bytes each) and the subscriptions' pending sets (a bit a seq of their
// range, 8 bytes a seq far from it).
func (s *Store) snapshot() *snapshot {
	s.shell.Mu.RLock()
	defer s.shell.Mu.RUnlock()
	snap := &snapshot{pos: s.idx.applied, dests: make([]destSnap, 0, len(s.idx.dests))}
	for _, d := range s.idx.dests {
		ds := destSnap{name: d.name, added: d.added, lastSeq: d.lastSeq, curSeg: d.curSeg, curMax: d.curMax,
			addMin: d.curAddMin, movMax: d.curMovMax}
		ds.ext = make([]*extent, 0, len(d.ext))
		for _, e := range d.ext {
			ds.ext = append(ds.ext, e.clone())
		}
		for _, e := range d.moved {
			ds.moved = append(ds.moved, e.clone())
		}
		ds.keys, ds.locs = d.log.appendLive(make([]uint64, 0, d.log.Len()), make([]loc, 0, d.log.Len()))
		for _, r := range d.runs {
			ds.runs = append(ds.runs, runSnap{path: r.path, id: r.id, seg: r.seg, count: r.count, crc: r.crc, live: slices.Clone(r.live)})
		}
		for _, sub := range d.subs {
			ss := subSnap{info: sub.info}
			ss.pending = sub.pending.clone()
			ds.subs = append(ds.subs, ss)
		}
		snap.dests = append(snap.dests, ds)
	}
	return snap
}

// pinned returns the segments the snapshot refers to.
func (snap *snapshot) pinned() map[uint32]bool {
	m := make(map[uint32]bool)
	for i := range snap.dests {
		for _, e := range slices.Concat(snap.dests[i].ext, snap.dests[i].moved) {
			if e.n > 0 {
				m[e.seg] = true
			}
		}
		for _, r := range snap.dests[i].runs {
			m[r.seg] = true
		}
		last := uint32(0)
		for _, l := range snap.dests[i].locs {
			if l.seg != last {
				m[l.seg], last = true, l.seg
			}
		}
	}
	return m
}

// checkpoint writes the index to a new checkpoint file (write temp, fsync, rename, fsync
// directory), drops checkpoint files beyond the retained ones, and deletes the segments
// nothing refers to any more. With barrier, it first makes the journal durable up to the
// snapshot's position (a checkpoint must never describe records that are not on disk);
// Close passes false because the writer has synced everything already. Nothing is
// written when nothing was applied since the last checkpoint.
func (s *Store) checkpoint(barrier bool) error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	spilled, err := s.spill()
	if err != nil { // what was not spilled stays in the logs; the checkpoint goes on
		s.log.Warn("journal: cannot write a run file", slog.String("dir", s.opts.Dir), slog.Any("err", err))
	}
	snap := s.snapshot()
	if n := len(s.ckpts); n > 0 && s.ckpts[n-1].pos == snap.pos && s.ckpts[n-1].version == ckptVersion && spilled == 0 {
		return nil // nothing changed (an older version's checkpoint is rewritten)
	}
	if barrier {
		if err := s.shell.Barrier(); err != nil {
			return err
		}
	}
	s.nextGen++
	c, err := writeCheckpoint(s.fs, s.opts.Dir, s.nextGen, snap)
	if err != nil {
		return err
	}
	c.version = ckptVersion
	s.ckpts = append(s.ckpts, c)
	for len(s.ckpts) > retainedCheckpoints {
		if err := s.fs.Remove(s.ckpts[0].path); err != nil && !isNotExist(err) {
			s.log.Warn("journal: cannot remove an old checkpoint", slog.String("file", s.ckpts[0].path), slog.Any("err", err))
		}
		s.ckpts = s.ckpts[1:]
	}
	return errors.Join(s.deleteDead(snap), s.removeOrphanRuns())
}

// deleteDead deletes the segments below the oldest retained checkpoint's position that
// neither the newest checkpoint nor the index refers to. Below that position no record
// is ever replayed, so what such a segment holds (adds, acks, anything) is needed by
// no future recovery; see the package comment for why this never resurrects a message.
// The caller holds ckptMu.
func (s *Store) deleteDead(snap *snapshot) error {
	limit := s.ckpts[0].pos.seg
	for _, c := range s.ckpts {
		limit = min(limit, c.pos.seg)
	}
	pinned := snap.pinned()
	s.segs.mu.Lock()
	defer s.segs.mu.Unlock()
	s.shell.Mu.Lock()
	var dead []uint32
	for _, id := range s.segs.ids() {
		if id >= limit {
			break
		}
		if st := s.idx.live[id]; pinned[id] || (st != nil && st.msgs > 0) {
			continue
		}
		dead = append(dead, id)
		delete(s.idx.live, id)
	}
	s.shell.Mu.Unlock()
	if len(dead) == 0 {
		return nil
	}
	err := errors.Join(s.segs.remove(dead), s.removeRunFiles(dead))
	s.log.Info("journal: deleted dead segments", slog.String("dir", s.opts.Dir), slog.Int("count", len(dead)),
		slog.String("first", segmentName(dead[0])), slog.String("last", segmentName(dead[len(dead)-1])))
	if err != nil {
		return fmt.Errorf("journal: delete segments: %w", err)
	}
	return nil
}

// ckptWriter streams the checkpoint body, keeping its CRC and length.
type ckptWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	tmp []byte
}

func (cw *ckptWriter) write(p []byte) {
	cw.crc.Write(p)
	cw.w.Write(p) // errors are sticky in bufio.Writer and surface at Flush
	cw.n += int64(len(p))
}

func (cw *ckptWriter) uvarint(v uint64) {
	cw.tmp = binary.AppendUvarint(cw.tmp[:0], v)
	cw.write(cw.tmp)
}

func (cw *ckptWriter) varint(v int64) {
	cw.tmp = binary.AppendVarint(cw.tmp[:0], v)
	cw.write(cw.tmp)
}

func (cw *ckptWriter) str(s string) {
	cw.uvarint(uint64(len(s)))
	cw.tmp = append(cw.tmp[:0], s...)
	cw.write(cw.tmp)
}

// writeSeqSet writes a pending set: its bitmap, then the members in its log.
func (cw *ckptWriter) writeSeqSet(s *seqSet) {
	cw.uvarint(s.base)
	cw.uvarint(uint64(len(s.bits)))
	for _, w := range s.bits {
		cw.tmp = binary.LittleEndian.AppendUint64(cw.tmp[:0], w)
		cw.write(cw.tmp)
	}
	cw.uvarint(uint64(s.far.Len()))
	prev := uint64(0)
	s.far.After(0, func(seq uint64, _ *struct{}) bool {
		cw.uvarint(seq - prev)
		prev = seq
		return true
	})
}

// logEntry writes a message of a destination's log: its seq's delta from the one
// before, and its place.
func (cw *ckptWriter) logEntry(delta uint64, l loc) {
	cw.uvarint(delta)
	cw.uvarint(uint64(l.seg))
	cw.uvarint(uint64(l.off))
	cw.uvarint(uint64(l.n))
	cw.uvarint(uint64(l.body))
}

// writeExtentHead writes what an extent starts with, the same in versions 2 and 3: its
// range, places and bitmap.
func (cw *ckptWriter) writeExtentHead(e *extent) {
	cw.uvarint(uint64(e.seg))
	cw.uvarint(e.lo)
	cw.uvarint(e.hi - e.lo)
	cw.uvarint(uint64(e.end))
	cw.uvarint(uint64(e.fill))
	cw.uvarint(e.base)
	cw.uvarint(uint64(len(e.live)))
	for _, w := range e.live {
		cw.tmp = binary.LittleEndian.AppendUint64(cw.tmp[:0], w)
		cw.write(cw.tmp)
	}
}

// writeExtent writes e (see the package comment's checkpoint layout).
func (cw *ckptWriter) writeExtent(e *extent) {
	cw.writeExtentHead(e)
	cw.writeLens(e)
	cw.uvarint(uint64(len(e.strides)))
	prev := stride{}
	for _, st := range e.strides {
		cw.uvarint(uint64(st.seq - prev.seq))
		cw.uvarint(uint64(st.off - prev.off))
		prev = st
	}
}

// writeLens writes the length table of e: its runs, or its chunks from that of its
// first stored seq on.
func (cw *ckptWriter) writeLens(e *extent) {
	t := &e.lens
	if e.n == 0 {
		cw.uvarint(0)
		return
	}
	if len(t.chunks) == 0 {
		cw.uvarint(0)
		cw.uvarint(uint64(t.runs))
		cw.write(t.items)
		return
	}
	k := int((e.first() - t.base) / lenChunk)
	base := t.base + uint64(k)*lenChunk
	cw.uvarint(uint64(len(t.chunks) - k))
	cw.uvarint(base)
	cw.uvarint(t.end - base)
	for i := k; i < len(t.chunks); i++ {
		cw.uvarint(uint64(t.chunkEnd(i) - t.chunks[i]))
	}
	cw.write(t.items[t.chunks[k]:])
}

// checkpointHeader returns the fixed header of a checkpoint.
func checkpointHeader(gen uint64, p pos) []byte {
	h := make([]byte, 0, ckptHeaderSize)
	h = append(h, ckptMagic...)
	h = binary.LittleEndian.AppendUint32(h, ckptVersion)
	h = binary.LittleEndian.AppendUint32(h, 0)
	h = binary.LittleEndian.AppendUint64(h, gen)
	h = binary.LittleEndian.AppendUint32(h, p.seg)
	h = binary.LittleEndian.AppendUint32(h, 0)
	return binary.LittleEndian.AppendUint64(h, uint64(p.off))
}

// readCheckpointHeader returns the version, generation and position of a checkpoint
// header.
func readCheckpointHeader(h []byte) (uint32, uint64, pos, error) {
	if len(h) < ckptHeaderSize || string(h[:8]) != ckptMagic {
		return 0, 0, pos{}, fmt.Errorf("%w: not a checkpoint", ErrCorrupt)
	}
	v := binary.LittleEndian.Uint32(h[8:])
	if v != ckptVersion && v != ckptVersionV2 && v != ckptVersionV1 {
		return 0, 0, pos{}, fmt.Errorf("%w: unsupported checkpoint version %d (this build reads %d to %d)",
			ErrCorrupt, v, ckptVersionV1, ckptVersion)
	}
	return v, binary.LittleEndian.Uint64(h[16:]), pos{binary.LittleEndian.Uint32(h[24:]), int64(binary.LittleEndian.Uint64(h[32:]))}, nil
}

// writeCheckpoint writes snap as checkpoint gen in dir.
func writeCheckpoint(fsys vfs.FS, dir string, gen uint64, snap *snapshot) (checkpointF, error) {
	final := filepath.Join(dir, checkpointName(gen))
	var size int64
	err := vfs.WriteFileAtomicFunc(fsys, final, func(w io.Writer) error {
		var err error
		size, err = writeCheckpointBody(w, gen, snap)
		return err
	})
	if err != nil {
		return checkpointF{}, fmt.Errorf("journal: checkpoint %s: %w", final, err)
	}
	runs := map[string]bool{}
	for i := range snap.dests {
		for _, r := range snap.dests[i].runs {
			runs[r.path] = true
		}
	}
	return checkpointF{version: ckptVersion, gen: gen, pos: snap.pos, path: final, size: size, runs: runs}, nil
}

// writeCheckpointBody writes checkpoint gen of snap to w and returns its size.
func writeCheckpointBody(w io.Writer, gen uint64, snap *snapshot) (size int64, err error) {
	cw := &ckptWriter{w: bufio.NewWriterSize(w, 1<<20), crc: crc32.New(castagnoli)}
	cw.write(checkpointHeader(gen, snap.pos))
	cw.uvarint(uint64(len(snap.dests)))
	for i := range snap.dests {
		ds := &snap.dests[i]
		cw.str(ds.name)
		var flags uint64
		if ds.added {
			flags |= 1
		}
		cw.uvarint(flags)
		cw.uvarint(ds.lastSeq)
		cw.uvarint(uint64(ds.curSeg))
		cw.uvarint(ds.curMax)
		cw.uvarint(ds.addMin)
		cw.uvarint(ds.movMax)
		cw.uvarint(uint64(len(ds.ext)))
		for _, e := range ds.ext {
			cw.writeExtent(e)
		}
		cw.uvarint(uint64(len(ds.moved)))
		for _, e := range ds.moved {
			cw.writeExtent(e)
		}
		cw.uvarint(uint64(len(ds.keys)))
		prev := uint64(0)
		for j, seq := range ds.keys {
			cw.logEntry(seq-prev, ds.locs[j])
			prev = seq
		}
		cw.uvarint(uint64(len(ds.runs)))
		for _, r := range ds.runs {
			cw.uvarint(r.id)
			cw.uvarint(uint64(r.seg))
			cw.uvarint(uint64(r.count))
			cw.uvarint(uint64(r.crc))
			cw.uvarint(uint64(len(r.live)))
			for _, w := range r.live {
				cw.tmp = binary.LittleEndian.AppendUint64(cw.tmp[:0], w)
				cw.write(cw.tmp)
			}
		}
		cw.uvarint(uint64(len(ds.subs)))
		for _, ss := range ds.subs {
			cw.str(ss.info.Key.ClientID)
			cw.str(ss.info.Key.Name)
			cw.str(ss.info.Selector)
			cw.varint(ss.info.Created)
			cw.writeSeqSet(&ss.pending)
		}
	}
	var trailer [ckptTrailer]byte
	binary.LittleEndian.PutUint64(trailer[:], uint64(cw.n))
	binary.LittleEndian.PutUint32(trailer[8:], cw.crc.Sum32())
	cw.w.Write(trailer[:])
	return cw.n + ckptTrailer, cw.w.Flush()
}

// readFile reads a whole file.
func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		err = nil
	}
	return buf[:n], err
}

// runEnv is where a checkpoint's runs are: the directory of their files and the
// segments that exist.
type runEnv struct {
	fs   vfs.FS
	dir  string
	segs map[uint32]bool
}

// loadCheckpoint reads checkpoint path into a new index, opening and checking the run
// files it refers to (in env).
func loadCheckpoint(fsys vfs.FS, path string, env *runEnv) (*index, checkpointF, error) {
	data, err := readFile(fsys, path)
	if err != nil {
		return nil, checkpointF{}, err
	}
	if len(data) < ckptHeaderSize+ckptTrailer {
		return nil, checkpointF{}, fmt.Errorf("%w: checkpoint is %d bytes", ErrCorrupt, len(data))
	}
	body := data[:len(data)-ckptTrailer]
	tr := data[len(data)-ckptTrailer:]
	if binary.LittleEndian.Uint64(tr) != uint64(len(body)) || binary.LittleEndian.Uint32(tr[8:]) != crc(body) {
		return nil, checkpointF{}, fmt.Errorf("%w: checkpoint checksum mismatch", ErrCorrupt)
	}
	v, gen, p, err := readCheckpointHeader(body)
	if err != nil {
		return nil, checkpointF{}, err
	}
	x, err := decodeCheckpoint(body[ckptHeaderSize:], v, p, env)
	if err != nil {
		return nil, checkpointF{}, err
	}
	x.applied = p
	runs := x.ckptRuns
	if runs == nil {
		runs = map[string]bool{}
	}
	x.ckptRuns = nil
	return x, checkpointF{version: v, gen: gen, pos: p, path: path, size: int64(len(data)), runs: runs}, nil
}

// decodeCheckpoint builds an index from a checkpoint body of version v whose position
// is p. A version 1 checkpoint lists every message with its place: they all go to
// their destinations' logs, and since it does not say which seqs have records in p's
// segment, every seq up to a destination's last is taken to have one there. The run
// files a version 3 checkpoint refers to are opened from env and checked whole; one
// that is missing or damaged makes the checkpoint unusable, unless its segment is
// gone too (then what it held is gone with it and is not counted).
func decodeCheckpoint(b []byte, v uint32, p pos, env *runEnv) (x *index, err error) {
	built := newIndex()
	x = built
	defer func() {
		if err != nil {
			built.closeRuns()
			x = nil
		}
	}()
	var runErr error
	d := decoder{b: b}
	nd := d.uvarint()
	if nd > uint64(len(b)) {
		d.fail()
	}
	for i := uint64(0); i < nd && !d.bad; i++ {
		dest := x.destination(string(d.bytes()))
		flags := d.uvarint()
		dest.added = flags&1 != 0
		dest.lastSeq = d.uvarint()
		if v == ckptVersionV1 {
			dest.curSeg, dest.curMax = p.seg, dest.lastSeq
		} else {
			seg, hi := d.uvarint(), d.uvarint()
			dest.curAddMin, dest.curMovMax = d.uvarint(), d.uvarint()
			if seg > math.MaxUint32 {
				d.fail()
			}
			dest.curSeg, dest.curMax = uint32(seg), hi
			ne := d.uvarint()
			if ne > uint64(len(b)) {
				d.fail()
			}
			for j := uint64(0); j < ne && !d.bad; j++ {
				e := d.extent(v)
				if d.bad || (len(dest.ext) > 0 && e.lo <= dest.ext[len(dest.ext)-1].hi) {
					d.fail()
					break
				}
				dest.ext = append(dest.ext, e)
				x.countExtent(dest, e)
			}
			nm := d.uvarint()
			if nm > uint64(len(b)) {
				d.fail()
			}
			for j := uint64(0); j < nm && !d.bad; j++ {
				e := d.extent(v)
				if d.bad || e.n == 0 || (len(dest.moved) > 0 && e.lo < dest.moved[len(dest.moved)-1].lo) {
					d.fail()
					break
				}
				e.after(0, func(seq uint64) bool { // a seq is stored in one place
					if dest.extentOf(seq) != nil {
						d.fail()
					}
					return !d.bad
				})
				dest.moved = append(dest.moved, e)
				x.countExtent(dest, e)
			}
		}
		n := d.uvarint()
		if n > uint64(len(b)) {
			d.fail()
			break
		}
		keys, locs := make([]uint64, 0, n), make([]loc, 0, n)
		seq := uint64(0)
		var st *segStats
		lastSeg := uint32(0)
		for j := uint64(0); j < n && !d.bad; j++ {
			seq += d.uvarint()
			l := loc{seg: uint32(d.uvarint()), off: uint32(d.uvarint()), n: uint32(d.uvarint()), body: uint32(d.uvarint())}
			if seq == 0 || seq > maxSeq || (j > 0 && seq <= keys[len(keys)-1]) {
				d.fail()
				break
			}
			if dest.extentOf(seq) != nil {
				d.fail()
				break
			}
			keys = append(keys, seq)
			locs = append(locs, l)
			dest.msgs++
			dest.bytes += int64(l.body)
			if st == nil || lastSeg != l.seg {
				st, lastSeg = x.segStats(l.seg), l.seg
			}
			st.msgs++
			st.bytes += int64(l.n)
		}
		dest.log.load(keys, locs)
		if v >= ckptVersion && !d.bad {
			if err := x.decodeRuns(&d, dest, env); err != nil {
				runErr = err
				break
			}
		}
		ns := d.uvarint()
		for j := uint64(0); j < ns && !d.bad; j++ {
			var info persistence.SubInfo
			info.Key.ClientID = string(d.bytes())
			info.Key.Name = string(d.bytes())
			info.Dest = dest.name
			info.Selector = string(d.bytes())
			info.Created = d.varint()
			if !dest.topic {
				d.fail()
				break
			}
			sub := &subscription{info: info, dest: dest}
			if v == ckptVersionV1 {
				d.seqList(func(seq uint64) { sub.pending.Put(seq) })
			} else {
				d.seqSet(&sub.pending)
			}
			dest.subs = append(dest.subs, sub)
			x.subs[info.Key] = sub
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	if d.bad || d.off != len(b) {
		return nil, fmt.Errorf("%w: malformed checkpoint", ErrCorrupt)
	}
	return x, nil
}

// decodeRuns reads the runs of dest in a version 3 checkpoint and opens their files.
func (x *index) decodeRuns(d *decoder, dest *destination, env *runEnv) error {
	nr := d.uvarint()
	if nr > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	for j := uint64(0); j < nr && !d.bad; j++ {
		id, seg, count, crc, nw := d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
		if id == 0 || seg == 0 || seg > math.MaxUint32 || count == 0 || count > math.MaxInt32 || crc > math.MaxUint32 ||
			nw != (count+63)/64 || nw > uint64(len(d.b)-d.off)/8 {
			d.fail()
			return nil
		}
		live := make([]uint64, nw)
		for i := range live {
			live[i] = binary.LittleEndian.Uint64(d.take(8))
		}
		if env == nil {
			return fmt.Errorf("%w: checkpoint refers to run files", ErrCorrupt)
		}
		if x.ckptRuns == nil {
			x.ckptRuns = map[string]bool{}
		}
		x.ckptRuns[filepath.Join(env.dir, runName(uint32(seg), id))] = true
		r, err := openRun(env.fs, env.dir, id, uint32(seg), dest.name, int(count), uint32(crc), live)
		if err != nil {
			if !env.segs[uint32(seg)] {
				continue
			}
			return fmt.Errorf("journal: checkpoint's run file unusable: %w", err)
		}
		if r.n == 0 {
			if err := r.f.Close(); err != nil {
				return fmt.Errorf("journal: close run %s: %w", r.path, err)
			}
			continue
		}
		dest.runs = append(dest.runs, r)
		dest.msgs += r.n
		dest.bytes += r.body
		st := x.segStats(r.seg)
		st.msgs += r.n
		st.bytes += r.bytes
	}
	return nil
}

// closeRuns closes the files of the index's runs (a checkpoint found unusable).
func (x *index) closeRuns() {
	for _, d := range x.dests {
		for _, r := range d.runs {
			if r.f != nil {
				r.f.Close() // read-only: nothing to lose
				r.f = nil
			}
		}
	}
}

// extent reads an extent of a version 2 or 3 checkpoint, checking what its use relies
// on: the bitmap within [base, hi], strides sorted and starting at or before the first
// stored seq, a length for every stored seq (version 3: a well-formed length table
// ending at or before hi+1; version 2: runs sorted and starting at or before the first
// stored seq, converted into a length table), and live counts that match the lengths.
func (d *decoder) extent(v uint32) *extent {
	e := &extent{}
	seg := d.uvarint()
	e.lo = d.uvarint()
	span := d.uvarint()
	end, fill := d.uvarint(), d.uvarint()
	e.base = d.uvarint()
	nw := d.uvarint()
	if seg > math.MaxUint32 || end > math.MaxUint32 || fill > math.MaxUint32 || span > math.MaxUint32 ||
		e.lo == 0 || e.lo+span > maxSeq || e.base%64 != 0 || nw > uint64(len(d.b)-d.off)/8 {
		d.fail()
		return e
	}
	e.seg, e.end, e.fill, e.hi = uint32(seg), uint32(end), uint32(fill), e.lo+span
	stored := false
	if nw > 0 {
		e.live = make([]uint64, nw)
		for i := range e.live {
			e.live[i] = binary.LittleEndian.Uint64(d.take(8))
			stored = stored || e.live[i] != 0
		}
	}
	var runs []lenRunV2
	if v == ckptVersionV2 {
		runs = d.lenRunsV2(span)
	} else {
		d.lenTable(&e.lens, stored)
	}
	ns := d.uvarint()
	if ns > uint64(len(d.b)) {
		d.fail()
		return e
	}
	var prev stride
	for i := uint64(0); i < ns && !d.bad; i++ {
		ds, do := d.uvarint(), d.uvarint()
		if ds > span || do > math.MaxUint32 || uint64(prev.seq)+ds > span || uint64(prev.off)+do > math.MaxUint32 {
			d.fail()
			return e
		}
		prev = stride{seq: prev.seq + uint32(ds), off: prev.off + uint32(do)}
		e.strides = append(e.strides, prev)
	}
	if d.bad {
		return e
	}
	// Every stored seq must lie in [lo, hi] and have lengths and a stride.
	var first, last uint64
	var n int64
	for w, word := range e.live {
		for ; word != 0; word &= word - 1 {
			seq := e.base + uint64(w)<<6 + uint64(bits.TrailingZeros64(word))
			if n == 0 {
				first = seq
			}
			last = seq
			n++
		}
	}
	if n == 0 {
		e.live, e.lens, e.strides = nil, lenTable{}, nil
		return e
	}
	if first < e.lo || last > e.hi || len(e.strides) == 0 || e.lo+uint64(e.strides[0].seq) > first {
		d.fail()
		return e
	}
	e.n = n
	if v == ckptVersionV2 {
		if len(runs) == 0 || e.lo+uint64(runs[0].from) > first {
			d.fail()
			return e
		}
		i := 0
		e.after(0, func(seq uint64) bool {
			for i+1 < len(runs) && e.lo+uint64(runs[i+1].from) <= seq {
				i++
			}
			e.lens.set(seq, runs[i].n, runs[i].body, e.stored)
			e.bytes += int64(runs[i].n)
			e.body += int64(runs[i].body)
			return true
		})
		return e
	}
	if len(e.lens.chunks) == 0 && e.lens.runs > 0 {
		// Runs: the first starting at or before the first stored seq, the last at or
		// before hi, so a seq appended later is after it.
		var runs []lenRunV2
		ok := true
		e.lens.eachRun(func(from uint64, n, body uint32) bool {
			ok = from >= e.lo && from <= e.hi
			runs = append(runs, lenRunV2{from: uint32(from - e.lo), n: n, body: body})
			return ok
		})
		if !ok || e.lo+uint64(runs[0].from) > first {
			d.fail()
			return e
		}
		for i, r := range runs {
			to := e.hi + 1
			if i+1 < len(runs) {
				to = e.lo + uint64(runs[i+1].from)
			}
			c := e.countLive(e.lo+uint64(r.from), to)
			e.bytes += c * int64(r.n)
			e.body += c * int64(r.body)
		}
		return e
	}
	covered := int64(0)
	if len(e.lens.chunks) == 0 || e.lens.end > e.hi+1 || !e.lens.walk(func(from, to uint64, n, body uint32) {
		c := e.countLive(from, to)
		covered += c
		e.bytes += c * int64(n)
		e.body += c * int64(body)
	}) || covered != n {
		d.fail()
	}
	return e
}

// lenRunV2 is a length run of a version 2 checkpoint: the seqs from lo+from up to the
// next run's start have these lengths.
type lenRunV2 struct {
	from, n, body uint32
}

// lenRunsV2 reads the length runs of an extent of a version 2 checkpoint whose seqs span
// span: sorted, within it, body lengths at most the encoded ones.
func (d *decoder) lenRunsV2(span uint64) []lenRunV2 {
	nr := d.uvarint()
	if nr > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	var runs []lenRunV2
	for i := uint64(0); i < nr && !d.bad; i++ {
		from, n, body := d.uvarint(), d.uvarint(), d.uvarint()
		if from > span || n > math.MaxUint32 || body > n || (i > 0 && uint32(from) <= runs[i-1].from) {
			d.fail()
			return nil
		}
		runs = append(runs, lenRunV2{from: uint32(from), n: uint32(n), body: uint32(body)})
	}
	return runs
}

// lenTable reads the length table of an extent of a version 3 checkpoint into t, the
// extent storing something or not: its chunk count, then if it is 0 (and the extent
// stores something) its runs (count, then start delta, length and body length each),
// else its first seq (a multiple
// of lenChunk), end minus first seq (in the last chunk), each chunk's item bytes, then
// the items. The items are checked by the caller (lenTable.walk), with the bitmap.
func (d *decoder) lenTable(t *lenTable, stored bool) {
	nc := d.uvarint()
	if d.bad {
		return
	}
	if nc == 0 {
		if !stored {
			return
		}
		nr := d.uvarint()
		if nr == 0 || nr > maxLenRuns {
			d.fail()
			return
		}
		from := uint64(0)
		for i := uint64(0); i < nr && !d.bad; i++ {
			delta, n, body := d.uvarint(), d.uvarint(), d.uvarint()
			if (i > 0 && delta == 0) || delta > maxSeq || n > math.MaxUint32 || body > n {
				d.fail()
				return
			}
			from += delta
			if from > maxSeq {
				d.fail()
				return
			}
			t.items = appendRun(t.items, delta, uint32(n), uint32(body))
			t.runs, t.end, t.n0, t.body0 = t.runs+1, from, uint32(n), uint32(body)
		}
		return
	}
	base, span := d.uvarint(), d.uvarint()
	if nc > uint64(len(d.b)-d.off) || base%lenChunk != 0 || base > maxSeq ||
		span == 0 || span > nc*lenChunk || span <= (nc-1)*lenChunk {
		d.fail()
		return
	}
	t.base, t.end = base, base+span
	t.chunks = make([]uint32, nc)
	total := uint64(0)
	for i := range t.chunks {
		t.chunks[i] = uint32(total)
		if total += d.uvarint(); total > uint64(len(d.b)) {
			d.fail()
			return
		}
	}
	t.items = slices.Clone(d.take(int(total)))
}

// seqList reads a uvarint count and that many seq deltas (sorted, distinct, non-zero
// seqs) and calls fn for each seq.
func (d *decoder) seqList(fn func(seq uint64)) {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return
	}
	seq, prev := uint64(0), uint64(0)
	for k := uint64(0); k < n && !d.bad; k++ {
		seq += d.uvarint()
		if seq == 0 || seq > maxSeq || (k > 0 && seq <= prev) {
			d.fail()
			return
		}
		fn(seq)
		prev = seq
	}
}

// seqSet reads a pending set of a version 2 or 3 checkpoint into s: its bitmap (base a
// multiple of 64, members at most maxSeq), then its log, whose members must not be
// in the bitmap.
func (d *decoder) seqSet(s *seqSet) {
	base, nw := d.uvarint(), d.uvarint()
	if base%64 != 0 || base > maxSeq || nw > uint64(len(d.b)-d.off)/8 || base+nw*64 > maxSeq+64 {
		d.fail()
		return
	}
	s.base = base
	if nw > 0 {
		s.bits = make([]uint64, nw)
		for i := range s.bits {
			s.bits[i] = binary.LittleEndian.Uint64(d.take(8))
			s.n += bits.OnesCount64(s.bits[i])
		}
	}
	if s.n == 0 {
		s.bits = nil
	} else if base == 0 && s.bits[0]&1 != 0 {
		d.fail() // seq 0 (the range check above keeps every bit at most maxSeq)
		return
	}
	d.seqList(func(seq uint64) {
		if w, b, ok := s.inBits(seq); ok && s.bits[w]&b != 0 {
			d.fail()
			return
		}
		s.far.Put(seq, struct{}{})
	})
}

// countExtent adds what e stores to d's and its segment's counts.
func (x *index) countExtent(d *destination, e *extent) {
	d.msgs += e.n
	d.bytes += e.body
	st := x.segStats(e.seg)
	st.msgs += e.n
	st.bytes += e.bytes
}
