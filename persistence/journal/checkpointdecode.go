package journal

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

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
