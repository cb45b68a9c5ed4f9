package journal

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

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
