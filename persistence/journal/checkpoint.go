package journal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// Checkpoint file constants (part of the on-disk format, see the package comment).
const (
	ckptMagic      = "AMQGOIDX"
	ckptHeaderSize = 40
	ckptTrailer    = 12
	// retainedCheckpoints is how many checkpoint files are kept: if the newest is
	// damaged, the one before it still works, because segments are only deleted below
	// the oldest retained checkpoint's position.
	retainedCheckpoints = 2
)

// checkpointF is a checkpoint file on disk.
type checkpointF struct {
	gen  uint64
	pos  pos // the journal position it covers: replay starts here
	path string
	size int64
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
	keys    []uint64
	locs    []loc
	subs    []subSnap
}

type subSnap struct {
	info    persistence.SubInfo
	pending []uint64
}

// snapshot copies the index (live entries only: about 24 bytes a message).
func (s *Store) snapshot() *snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := &snapshot{pos: s.idx.applied, dests: make([]destSnap, 0, len(s.idx.dests))}
	for _, d := range s.idx.dests {
		ds := destSnap{name: d.name, added: d.added, lastSeq: d.lastSeq}
		ds.keys, ds.locs = d.log.appendLive(make([]uint64, 0, d.log.Len()), make([]loc, 0, d.log.Len()))
		for _, sub := range d.subs {
			ss := subSnap{info: sub.info}
			ss.pending, _ = sub.pending.appendLive(make([]uint64, 0, sub.pending.Len()), nil)
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
	snap := s.snapshot()
	if n := len(s.ckpts); n > 0 && s.ckpts[n-1].pos == snap.pos {
		return nil
	}
	if barrier {
		if err := s.w.barrier(); err != nil {
			return err
		}
	}
	s.nextGen++
	c, err := writeCheckpoint(s.fs, s.opts.Dir, s.nextGen, snap)
	if err != nil {
		return err
	}
	s.ckpts = append(s.ckpts, c)
	for len(s.ckpts) > retainedCheckpoints {
		if err := s.fs.Remove(s.ckpts[0].path); err != nil && !isNotExist(err) {
			s.log.Warn("journal: cannot remove an old checkpoint", slog.String("file", s.ckpts[0].path), slog.Any("err", err))
		}
		s.ckpts = s.ckpts[1:]
	}
	return s.deleteDead(snap)
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
	s.mu.Lock()
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
	s.mu.Unlock()
	if len(dead) == 0 {
		return nil
	}
	err := s.segs.remove(dead)
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

// checkpointHeader returns the fixed header of a checkpoint.
func checkpointHeader(gen uint64, p pos) []byte {
	h := make([]byte, 0, ckptHeaderSize)
	h = append(h, ckptMagic...)
	h = binary.LittleEndian.AppendUint32(h, formatVersion)
	h = binary.LittleEndian.AppendUint32(h, 0)
	h = binary.LittleEndian.AppendUint64(h, gen)
	h = binary.LittleEndian.AppendUint32(h, p.seg)
	h = binary.LittleEndian.AppendUint32(h, 0)
	return binary.LittleEndian.AppendUint64(h, uint64(p.off))
}

// readCheckpointHeader returns the generation and position of a checkpoint header.
func readCheckpointHeader(h []byte) (uint64, pos, error) {
	if len(h) < ckptHeaderSize || string(h[:8]) != ckptMagic {
		return 0, pos{}, fmt.Errorf("%w: not a checkpoint", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != formatVersion {
		return 0, pos{}, fmt.Errorf("%w: unsupported checkpoint version %d (this build reads %d)", ErrCorrupt, v, formatVersion)
	}
	return binary.LittleEndian.Uint64(h[16:]), pos{binary.LittleEndian.Uint32(h[24:]), int64(binary.LittleEndian.Uint64(h[32:]))}, nil
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
	return checkpointF{gen: gen, pos: snap.pos, path: final, size: size}, nil
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
		cw.uvarint(uint64(len(ds.keys)))
		prev := uint64(0)
		for j, seq := range ds.keys {
			l := ds.locs[j]
			cw.uvarint(seq - prev)
			cw.uvarint(uint64(l.seg))
			cw.uvarint(uint64(l.off))
			cw.uvarint(uint64(l.n))
			cw.uvarint(uint64(l.body))
			prev = seq
		}
		cw.uvarint(uint64(len(ds.subs)))
		for _, ss := range ds.subs {
			cw.str(ss.info.Key.ClientID)
			cw.str(ss.info.Key.Name)
			cw.str(ss.info.Selector)
			cw.varint(ss.info.Created)
			cw.uvarint(uint64(len(ss.pending)))
			prev := uint64(0)
			for _, seq := range ss.pending {
				cw.uvarint(seq - prev)
				prev = seq
			}
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

// loadCheckpoint reads checkpoint path into a new index.
func loadCheckpoint(fsys vfs.FS, path string) (*index, checkpointF, error) {
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
	gen, p, err := readCheckpointHeader(body)
	if err != nil {
		return nil, checkpointF{}, err
	}
	x, err := decodeCheckpoint(body[ckptHeaderSize:])
	if err != nil {
		return nil, checkpointF{}, err
	}
	x.applied = p
	return x, checkpointF{gen: gen, pos: p, path: path, size: int64(len(data))}, nil
}

// decodeCheckpoint builds an index from a checkpoint body.
func decodeCheckpoint(b []byte) (*index, error) {
	x := newIndex()
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
		ns := d.uvarint()
		for j := uint64(0); j < ns && !d.bad; j++ {
			var info persistence.SubInfo
			info.Key.ClientID = string(d.bytes())
			info.Key.Name = string(d.bytes())
			info.Dest = dest.name
			info.Selector = string(d.bytes())
			info.Created = d.varint()
			np := d.uvarint()
			if np > uint64(len(b)) || !dest.topic {
				d.fail()
				break
			}
			pend := make([]uint64, 0, np)
			seq := uint64(0)
			for k := uint64(0); k < np && !d.bad; k++ {
				seq += d.uvarint()
				if seq == 0 || seq > maxSeq || (k > 0 && seq <= pend[len(pend)-1]) {
					d.fail()
					break
				}
				pend = append(pend, seq)
			}
			sub := &subscription{info: info, dest: dest}
			sub.pending.load(pend, make([]struct{}, len(pend)))
			dest.subs = append(dest.subs, sub)
			x.subs[info.Key] = sub
		}
	}
	if d.bad || d.off != len(b) {
		return nil, fmt.Errorf("%w: malformed checkpoint", ErrCorrupt)
	}
	return x, nil
}
