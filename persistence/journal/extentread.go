package journal

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// readChunk is how much a recordReader reads from a segment at a time.
const readChunk = 256 << 10

// recordReader finds where the messages of an extent are, by reading the records of its
// segment forward from a stride entry. It keeps a window of the segment; reuse one for
// the lookups of a scan round.
type recordReader struct {
	buf  []byte
	win  []byte // the segment's bytes from wOff
	wOff int64
	wSeg *segment
	wGen int // counts the reads into win
	// The last record whose checksum was verified, in window generation vGen: a scan's
	// rounds often start at the same record.
	vOff int64
	vGen int
	// Where the last lookup that found everything stopped: the next round of a scan
	// resumes there instead of walking the record again from its start.
	res resumePoint
}

// resumePoint is a position inside a record of seg, just after the message of ext with
// seq lastSeq. The messages of an extent are in seq order, so those with greater seqs
// are all after it.
type resumePoint struct {
	ext     *extent
	seg     *segment
	dest    string
	rec     int64  // the record
	off     int    // offset in its payload of the next operation
	idx     uint32 // and its index
	lastSeq uint64
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
	r.wGen++
	return r.win, nil
}

// locate sets the offset and length of out[i] to the place of the message of dest with
// seq want[i] (sorted, distinct, stored in extent e of seg), reading the records that
// start in [from, limit); with dst (nil or one slice per want) it also copies the
// message's bytes into dst[i], whose length must be the message's. A message not found
// keeps out[i].off == 0 (no message is at offset 0). It returns how many were found; a
// read error ends the search early and is returned.
func (r *recordReader) locate(e *extent, seg *segment, dest string, from, limit uint32, want []uint64, out []loc, dst [][]byte) (int, error) {
	found := 0
	p := int64(from)
	opOff, opIdx := 0, uint32(0)
	if c := &r.res; c.ext == e && c.seg == seg && c.dest == dest && int64(from) <= c.rec && c.rec < int64(limit) && want[0] > c.lastSeq {
		p, opOff, opIdx = c.rec, c.off, c.idx
	}
	for p < int64(limit) && found < len(want) {
		b, err := r.at(seg, p, frameHeaderSize)
		if err != nil {
			return found, err
		}
		if !plausibleFrame(b) {
			p += recordAlign // a damaged range: recovery skipped it too
			continue
		}
		// The whole record with its padding, so the next one is found where it starts.
		if total := int64(alignUp(frameHeaderSize + int(binary.LittleEndian.Uint32(b[4:])))); total > int64(len(b)) {
			if b, err = r.at(seg, p, int(min(total, seg.size.Load()-p))); err != nil {
				return found, err
			}
		}
		var payload []byte
		var rn int
		if r.vGen == r.wGen && r.vOff == p {
			end := frameHeaderSize + int(binary.LittleEndian.Uint32(b[4:]))
			payload, rn = b[frameHeaderSize:end], min(alignUp(end), len(b))
		} else if payload, rn, err = decodeFrame(b); err != nil {
			p += recordAlign
			continue
		}
		r.vOff, r.vGen = p, r.wGen
		off, idx := eachMessage(payload, opOff, opIdx, func(d []byte, seq uint64, msgOff, n uint32) bool {
			if string(d) != dest {
				return true
			}
			k, ok := slices.BinarySearch(want, seq)
			if !ok || out[k].off != 0 {
				return true
			}
			if dst != nil {
				if len(dst[k]) != int(n) {
					return true // not the length the index has: damaged, reported as not found
				}
				at := msgOff - frameHeaderSize
				copy(dst[k], payload[at:at+n])
			}
			out[k].seg, out[k].off, out[k].n = seg.id, uint32(p)+msgOff, n
			found++
			return found < len(want)
		})
		if found == len(want) {
			r.res = resumePoint{ext: e, seg: seg, dest: dest, rec: p, off: off, idx: idx, lastSeq: want[len(want)-1]}
			break
		}
		p += int64(rn)
		opOff, opIdx = 0, 0
	}
	return found, nil
}

// record returns the payload and size on disk of the record of seg at p, if one that
// is intact starts there.
func (r *recordReader) record(seg *segment, p int64) ([]byte, int, bool) {
	b, err := r.at(seg, p, frameHeaderSize)
	if err != nil || !plausibleFrame(b) {
		return nil, 0, false
	}
	if total := int64(alignUp(frameHeaderSize + int(binary.LittleEndian.Uint32(b[4:])))); total > int64(len(b)) {
		if b, err = r.at(seg, p, int(min(total, seg.size.Load()-p))); err != nil {
			return nil, 0, false
		}
	}
	payload, rn, err := decodeFrame(b)
	return payload, rn, err == nil
}

// eachMessage calls fn for the Add and Move operations of a batch payload, from the
// operation at offset from (index idx; 0, 0: the first) on, until fn returns false:
// the message's destination and seq, its offset from the start of the record and its
// length. It reads no more of a message than those two fields and does not check it
// (Scan checks a message's checksum when it decodes it); it stops at the first
// malformed operation. It returns the offset and index of the operation after the last
// one it read.
func eachMessage(payload []byte, from int, idx uint32, fn func(dest []byte, seq uint64, msgOff, n uint32) bool) (int, uint32) {
	d := decoder{b: payload}
	n := d.u32()
	if from > 0 {
		d.off = min(from, len(payload))
	}
	i := idx
	for ; i < n && !d.bad; i++ {
		switch kind := opKind(d.byte()); kind {
		case batchrec.OpAdd, opMove:
			if kind == opMove {
				d.take(8) // old segment and offset
			}
			size := d.u32()
			off := d.off
			raw := d.take(int(size))
			if d.bad || len(raw) < 4 {
				return d.off, i
			}
			md := decoder{b: raw, off: 4} // after the message's checksum
			seq := md.uvarint()
			dest := md.bytes()
			if !md.bad && !fn(dest, seq, uint32(frameHeaderSize+off), size) {
				return d.off, i + 1
			}
		case batchrec.OpAck:
			d.bytes()
			d.uvarint()
		case batchrec.OpAckSub:
			d.bytes()
			d.bytes()
			d.uvarint()
		case batchrec.OpAddSub:
			d.bytes()
			d.bytes()
			d.bytes()
			d.bytes()
			d.varint()
		case batchrec.OpRemoveSub:
			d.bytes()
			d.bytes()
		case batchrec.OpPurge:
			d.bytes()
		default:
			return d.off, i
		}
	}
	return d.off, i
}
