package journal

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Extent limits.
const (
	// strideBytes is how many bytes of an extent's messages lie between two entries of
	// its sparse table: a read seeks to the entry before the seq it wants and reads
	// forward from there.
	strideBytes = 4 << 10
	// extentGap is the largest gap of seqs an extent bridges with clear bits (gapBits/8
	// bytes) rather than starting a new extent.
	extentGap = 1024
)

// extent holds the messages of one destination that were appended to one segment in
// increasing seq order, without a per-message record of where each is:
//
//   - live is a bitmap over [base, hi]: bit seq-base is set while seq is stored here.
//     Words below the first live seq are dropped as the head is acknowledged.
//   - lens gives each seq's encoded and body length (lentable.go: a few runs while
//     they rarely change, then about two bytes per message of varied sizes), so acks
//     keep Stats exact.
//   - strides is the sparse table: every strideBytes of the extent's messages, the seq
//     of the first message of the stride and the offset of the record holding it.
//
// The messages of an extent are in its segment in seq order, and for a seq whose bit is
// set there is exactly one record of the destination with that seq in the segment
// before end (index.place only appends a seq to an extent when no record of that seq
// was written to the segment before, and once its bit is cleared it is never set
// again). Reading seq is then: seek to the stride entry before it, read records forward
// until one of the destination carries seq.
type extent struct {
	seg     uint32
	end     uint32 // end offset of the last message appended
	fill    uint32 // bytes appended since the last stride entry
	lo, hi  uint64 // first and last seq appended
	base    uint64 // seq of bit 0 of live, a multiple of 64
	live    []uint64
	n       int64 // stored messages
	bytes   int64 // their encoded bytes
	body    int64 // their body bytes
	lens    lenTable
	strides []stride
}

// stride is an entry of an extent's sparse table: the message lo+seq and those after it
// are in records that start at or after off.
type stride struct {
	seq uint32
	off uint32
}

// newExtent starts an extent in seg with the message seq at l (its record at rec).
func newExtent(seq uint64, l loc, rec uint32) *extent {
	e := &extent{seg: l.seg, lo: seq, hi: seq, base: seq &^ 63}
	e.append(seq, l, rec)
	return e
}

// canAppend reports whether seq (> e.hi) can join e: same segment, a small gap, and
// deltas that fit the tables.
func (e *extent) canAppend(seq uint64, seg uint32) bool {
	return e.seg == seg && seq > e.hi && seq-e.hi <= extentGap && seq-e.lo <= math.MaxUint32
}

// append stores seq (>= e.hi, not yet live) at l, whose record starts at rec.
func (e *extent) append(seq uint64, l loc, rec uint32) {
	e.lens.set(seq, l.n, l.body, e.stored)
	e.hi = seq
	if e.n == 0 && len(e.live) == 0 {
		e.base = seq &^ 63
	}
	w := int((seq - e.base) >> 6)
	for len(e.live) <= w {
		e.live = append(e.live, 0)
	}
	e.live[w] |= 1 << (seq & 63)
	e.n++
	e.bytes += int64(l.n)
	e.body += int64(l.body)
	e.end = l.off + l.n
	d := uint32(seq - e.lo)
	if k := len(e.strides); k == 0 || (e.fill >= strideBytes && e.strides[k-1].off != rec) {
		e.strides = append(e.strides, stride{seq: d, off: rec})
		e.fill = 0
	}
	e.fill += l.n
}

// stored calls fn for the stored seqs of e, in order, until it returns false.
func (e *extent) stored(fn func(seq uint64) bool) {
	e.after(0, fn)
}

// has reports whether seq is stored in e.
func (e *extent) has(seq uint64) bool {
	if seq < e.base || seq > e.hi {
		return false
	}
	w := int((seq - e.base) >> 6)
	return w < len(e.live) && e.live[w]&(1<<(seq&63)) != 0
}

// lengths returns the encoded and body length of seq (which was appended to e).
func (e *extent) lengths(seq uint64) (n, body uint32) {
	return e.lens.get(seq)
}

// strideOff returns the offset of the record to start reading at for seq.
func (e *extent) strideOff(seq uint64) uint32 {
	d := uint32(seq - e.lo)
	i, _ := slices.BinarySearchFunc(e.strides, d, func(s stride, d uint32) int {
		if s.seq <= d {
			return -1
		}
		return 1
	})
	return e.strides[max(i-1, 0)].off
}

// remove clears seq (which must be stored in e) and returns its lengths.
func (e *extent) remove(seq uint64) (n, body uint32) {
	n, body = e.lengths(seq)
	w := int((seq - e.base) >> 6)
	e.live[w] &^= 1 << (seq & 63)
	e.n--
	e.bytes -= int64(n)
	e.body -= int64(body)
	if e.n == 0 {
		e.release()
	} else if w == 0 && e.live[0] == 0 {
		e.trimHead()
	}
	return n, body
}

// release drops the tables of an extent that holds nothing (it keeps its range, so a
// later append to it still knows which seqs its segment has records of).
func (e *extent) release() {
	e.live, e.lens, e.strides, e.fill = nil, lenTable{}, nil, 0
	e.bytes, e.body = 0, 0
}

// trimHead drops the leading empty words of live, and the lengths and strides that
// only cover seqs below what is left.
func (e *extent) trimHead() {
	k := 0
	for k < len(e.live) && e.live[k] == 0 {
		k++
	}
	e.base += uint64(k) << 6
	e.live = e.live[k:]
	if cap(e.live) > 64 && len(e.live) < cap(e.live)/4 {
		e.live = slices.Clone(e.live)
	}
	e.lens.trim(e.base)
	if e.base <= e.lo {
		return
	}
	// Copy the table once more than half of it is below the head, so a drain copies
	// each entry O(1) times.
	first := uint32(e.base - e.lo)
	if j := lastAtOrBelow(len(e.strides), func(j int) uint32 { return e.strides[j].seq }, first); j > len(e.strides)/2 {
		e.strides = slices.Clone(e.strides[j:])
	}
}

// lastAtOrBelow returns the last index i < n with key(i) <= v (keys sorted), or 0.
func lastAtOrBelow(n int, key func(int) uint32, v uint32) int {
	i := sort.Search(n, func(i int) bool { return key(i) > v })
	return max(i-1, 0)
}

// after calls fn for the stored seqs of e greater than afterSeq, in order, until fn
// returns false; it returns false if fn did.
func (e *extent) after(afterSeq uint64, fn func(seq uint64) bool) bool {
	if e.n == 0 || afterSeq >= e.hi {
		return true
	}
	from := e.base
	if afterSeq >= e.base {
		from = afterSeq + 1
	}
	w := int((from - e.base) >> 6)
	if w >= len(e.live) {
		return true
	}
	word := e.live[w] &^ (1<<(from&63) - 1)
	for {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			if !fn(e.base + uint64(w)<<6 + uint64(b)) {
				return false
			}
			word &= word - 1
		}
		w++
		if w >= len(e.live) {
			return true
		}
		word = e.live[w]
	}
}

// next returns the first stored seq of e greater than after.
func (e *extent) next(after uint64) (uint64, bool) {
	if e.n == 0 || after >= e.hi {
		return 0, false
	}
	from := e.base
	if after >= e.base {
		from = after + 1
	}
	w := int((from - e.base) >> 6)
	if w >= len(e.live) {
		return 0, false
	}
	word := e.live[w] &^ (1<<(from&63) - 1)
	for word == 0 {
		if w++; w >= len(e.live) {
			return 0, false
		}
		word = e.live[w]
	}
	return e.base + uint64(w)<<6 + uint64(bits.TrailingZeros64(word)), true
}

// first returns the first stored seq of e (which stores one).
func (e *extent) first() uint64 {
	w := 0
	for e.live[w] == 0 {
		w++
	}
	return e.base + uint64(w)<<6 + uint64(bits.TrailingZeros64(e.live[w]))
}

// countLive returns how many seqs of [from, to) are stored in e.
func (e *extent) countLive(from, to uint64) int64 {
	from, to = max(from, e.base), min(to, e.base+uint64(len(e.live))<<6)
	c := 0
	for from < to {
		w := int((from - e.base) >> 6)
		word := e.live[w] &^ (1<<(from&63) - 1)
		next := e.base + uint64(w+1)<<6
		if to < next {
			word &= 1<<(to&63) - 1
		}
		c += bits.OnesCount64(word)
		from = next
	}
	return int64(c)
}

// clone returns a deep copy of e (for a checkpoint snapshot).
func (e *extent) clone() *extent {
	c := *e
	c.live = slices.Clone(e.live)
	c.lens = e.lens.clone()
	c.strides = slices.Clone(e.strides)
	return &c
}
