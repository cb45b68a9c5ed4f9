package journal

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// readChunk is how much a recordReader reads from a segment at a time.
const readChunk = 256 << 10

// recordReader finds where the messages of an extent are, by reading the records of its
// segment forward from a stride entry. It keeps a window of the segment; reuse one for
// the lookups of a scan round.
type recordReader struct {
	buf  []byte
	win  []byte // the segment's bytes from winOff
	wOff int64
	wSeg *segment
	in   interner
	ops  []op
}

// at returns the bytes of seg from p on, at least n of them (more when the window has
// them), reading from the file when the window does not hold them.
func (r *recordReader) at(seg *segment, p int64, n int) ([]byte, error) {
	if r.wSeg == seg && p >= r.wOff && p+int64(n) <= r.wOff+int64(len(r.win)) {
		return r.win[p-r.wOff:], nil
	}
	size := seg.size.Load()
	if p+int64(n) > size {
		return nil, errShort
	}
	m := int(min(max(int64(n), readChunk), size-p))
	if cap(r.buf) < m {
		r.buf = make([]byte, m)
	}
	r.win, r.wSeg = nil, nil
	got, err := seg.f.ReadAt(r.buf[:m], p)
	if got < m {
		if err == nil {
			err = errShort
		}
		return nil, fmt.Errorf("read %s at %d: %w", seg.path, p, err)
	}
	r.win, r.wOff, r.wSeg = r.buf[:m], p, seg
	return r.win, nil
}

// locate sets out[i] to the place of the message of dest with seq want[i] (sorted,
// distinct) in seg, reading the records that start in [from, limit). A message not
// found keeps out[i].off == 0 (no message is at offset 0). It returns how many were
// found; a read error ends the search early and is returned.
func (r *recordReader) locate(seg *segment, dest string, from, limit uint32, want []uint64, out []loc) (int, error) {
	if r.in == nil {
		r.in = interner{}
	}
	found := 0
	p := int64(from)
	for p < int64(limit) && found < len(want) {
		b, err := r.at(seg, p, frameHeaderSize)
		if err != nil {
			return found, err
		}
		if !plausibleFrame(b) {
			p += recordAlign // a damaged range: recovery skipped it too
			continue
		}
		if total := frameHeaderSize + int64(binary.LittleEndian.Uint32(b[4:])); total > int64(len(b)) {
			if b, err = r.at(seg, p, int(min(total, seg.size.Load()-p))); err != nil {
				return found, err
			}
		}
		payload, rn, err := decodeFrame(b)
		if err != nil {
			p += recordAlign
			continue
		}
		if r.ops, err = decodeBatch(payload, r.in, r.ops); err == nil {
			for i := range r.ops {
				o := &r.ops[i]
				if (o.kind != opAdd && o.kind != opMove) || o.dest != dest {
					continue
				}
				k, ok := slices.BinarySearch(want, o.seq)
				if !ok || out[k].off != 0 {
					continue
				}
				out[k] = loc{seg: seg.id, off: uint32(p) + o.msgOff, n: o.loc.n, body: o.loc.body}
				found++
			}
		}
		p += int64(rn)
	}
	return found, nil
}
