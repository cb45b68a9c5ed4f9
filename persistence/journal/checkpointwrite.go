package journal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path/filepath"

	"github.com/activemq-go/broker/internal/vfs"
)

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
