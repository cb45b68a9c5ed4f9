package journal

import (
	"math"
	"slices"
)

// maxSeq is the largest sequence number the store accepts.
const maxSeq = math.MaxInt64

// seqLog is an ordered map from sequence number to V, shaped for how a destination's
// messages outside its extents and the far members of a pending set (seqSet) are
// used: sequence numbers arrive in increasing order at the tail (queues) or in any
// order (scheduled jobs, whose seqs are due times), deletions happen anywhere, and
// scans start from a sequence number.
//
// It is a sorted list of blocks, each two parallel slices sorted by seq (keys and
// values; with V = struct{} the values take no memory) of at most seqBlockMax entries,
// the blocks' ranges disjoint and increasing. An insertion shifts within one block and
// splits it in two when full, so inserting anywhere costs O(log n + seqBlockMax), never
// O(n) (a million random inserts take a fraction of a second instead of minutes);
// deleting a block's first entry (acknowledgements in order) only reslices it. A
// block's slices grow by an eighth at a time and shrink when a quarter full, and
// nearly empty neighbours merge, so an entry costs about 8 + sizeof(V) bytes plus a
// sixteenth of that in slack: 25-26 bytes with V = loc.
//
// Costs, n = live entries: append at the tail O(1) amortised; insert before the tail
// O(log n + seqBlockMax); lookup O(log n); delete O(log n + seqBlockMax); iterating k
// entries from a seq O(log n + k).
//
// Not safe for concurrent use; the Store's mutex guards it.
type seqLog[V any] struct {
	blocks []seqBlock[V] // non-empty, sorted by their first keys, ranges disjoint
	live   int
}

// seqBlock is a run of a seqLog's entries.
type seqBlock[V any] struct {
	keys []uint64
	vals []V
}

// seqBlockMax is the most entries a block holds; a full block splits in two halves.
const seqBlockMax = 512

// Len returns the number of live entries.
func (l *seqLog[V]) Len() int { return l.live }

// block returns the index of the block whose range may hold seq: the last block whose
// first key is <= seq, or 0.
func (l *seqLog[V]) block(seq uint64) int {
	lo, hi := 0, len(l.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.blocks[m].keys[0] <= seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
}

// locate returns the block and slot of seq, and whether it is there.
func (l *seqLog[V]) locate(seq uint64) (int, int, bool) {
	if len(l.blocks) == 0 {
		return 0, 0, false
	}
	b := l.block(seq)
	keys := l.blocks[b].keys
	i, found := slices.BinarySearch(keys, seq)
	return b, i, found
}

// Get returns the value of seq.
func (l *seqLog[V]) Get(seq uint64) (V, bool) {
	if b, i, ok := l.locate(seq); ok {
		return l.blocks[b].vals[i], true
	}
	var zero V
	return zero, false
}

// Ptr returns a pointer to the value of seq, valid until the next change, or nil.
func (l *seqLog[V]) Ptr(seq uint64) *V {
	if b, i, ok := l.locate(seq); ok {
		return &l.blocks[b].vals[i]
	}
	return nil
}

// Contains reports whether seq is live.
func (l *seqLog[V]) Contains(seq uint64) bool {
	_, _, ok := l.locate(seq)
	return ok
}

// grown returns s with room for one more element: a small slice doubles, a larger
// one grows by an eighth (at most to seqBlockMax), so a block wastes little.
func grown[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	n := cap(s) * 2
	if cap(s) >= 64 {
		n = cap(s) + cap(s)/8
	}
	n = min(max(n, 4), seqBlockMax)
	out := make([]T, len(s), n)
	copy(out, s)
	return out
}

// Put stores v under seq, which must not be live.
func (l *seqLog[V]) Put(seq uint64, v V) {
	l.live++
	if len(l.blocks) == 0 {
		l.blocks = []seqBlock[V]{{keys: append(grown[uint64](nil), seq), vals: append(grown[V](nil), v)}}
		return
	}
	b, i, _ := l.locate(seq)
	blk := &l.blocks[b]
	if len(blk.keys) == seqBlockMax {
		if b == len(l.blocks)-1 && i == len(blk.keys) { // appending: start a new block
			l.blocks = append(l.blocks, seqBlock[V]{keys: grown[uint64](nil), vals: grown[V](nil)})
			b, i = b+1, 0
		} else {
			l.split(b)
			if i > len(l.blocks[b].keys) {
				i -= len(l.blocks[b].keys)
				b++
			}
		}
		blk = &l.blocks[b]
	}
	blk.keys = slices.Insert(grown(blk.keys), i, seq)
	blk.vals = slices.Insert(grown(blk.vals), i, v)
}

// split divides the full block b into two halves, each with an eighth of room.
func (l *seqLog[V]) split(b int) {
	blk := l.blocks[b]
	h := len(blk.keys) / 2
	room := h + h/8
	lo := seqBlock[V]{keys: append(make([]uint64, 0, room), blk.keys[:h]...), vals: append(make([]V, 0, room), blk.vals[:h]...)}
	hi := seqBlock[V]{keys: append(make([]uint64, 0, room), blk.keys[h:]...), vals: append(make([]V, 0, room), blk.vals[h:]...)}
	l.blocks[b] = lo
	l.blocks = slices.Insert(l.blocks, b+1, hi)
}

// Remove deletes seq and returns its value.
func (l *seqLog[V]) Remove(seq uint64) (V, bool) {
	var zero V
	b, i, ok := l.locate(seq)
	if !ok {
		return zero, false
	}
	blk := &l.blocks[b]
	v := blk.vals[i]
	if i == 0 { // the head (acknowledged in order): no shift
		var zero V
		blk.vals[0] = zero
		blk.keys, blk.vals = blk.keys[1:], blk.vals[1:]
	} else {
		blk.keys = slices.Delete(blk.keys, i, i+1)
		blk.vals = slices.Delete(blk.vals, i, i+1) // zeroes the freed slot
	}
	l.live--
	n := len(blk.keys)
	switch {
	case n == 0:
		l.blocks = slices.Delete(l.blocks, b, b+1)
		if len(l.blocks) == 0 {
			l.blocks = nil
		}
	case b+1 < len(l.blocks) && n+len(l.blocks[b+1].keys) <= seqBlockMax/4:
		l.merge(b)
	case b > 0 && n+len(l.blocks[b-1].keys) <= seqBlockMax/4:
		l.merge(b - 1)
	case cap(blk.keys) > 16 && n < cap(blk.keys)/4:
		blk.keys = slices.Clip(slices.Clone(blk.keys))
		blk.vals = slices.Clip(slices.Clone(blk.vals))
	}
	return v, true
}

// merge joins blocks b and b+1 into one.
func (l *seqLog[V]) merge(b int) {
	a, c := l.blocks[b], l.blocks[b+1]
	n := len(a.keys) + len(c.keys)
	room := n + n/8
	l.blocks[b] = seqBlock[V]{
		keys: append(append(make([]uint64, 0, room), a.keys...), c.keys...),
		vals: append(append(make([]V, 0, room), a.vals...), c.vals...),
	}
	l.blocks = slices.Delete(l.blocks, b+1, b+2)
}

// Reset deletes everything and releases the memory.
func (l *seqLog[V]) Reset() { *l = seqLog[V]{} }

// After calls fn, in seq order, for the live entries whose seq is greater than afterSeq,
// until fn returns false. The log must not change during the iteration.
func (l *seqLog[V]) After(afterSeq uint64, fn func(seq uint64, v *V) bool) {
	for it := l.iter(afterSeq); it.ok(); it.next() {
		if !fn(it.seq(), it.val()) {
			return
		}
	}
}

// seqLogIter walks a seqLog in seq order; the log must not change meanwhile.
type seqLogIter[V any] struct {
	l    *seqLog[V]
	b, i int
}

// iter returns an iterator at the first entry after afterSeq.
func (l *seqLog[V]) iter(afterSeq uint64) seqLogIter[V] {
	if afterSeq >= maxSeq || len(l.blocks) == 0 {
		return seqLogIter[V]{l: l, b: len(l.blocks)}
	}
	b := l.block(afterSeq + 1)
	i, _ := slices.BinarySearch(l.blocks[b].keys, afterSeq+1)
	it := seqLogIter[V]{l: l, b: b, i: i}
	it.settle()
	return it
}

// settle moves past the end of a block to the next one.
func (it *seqLogIter[V]) settle() {
	if it.b < len(it.l.blocks) && it.i == len(it.l.blocks[it.b].keys) {
		it.b, it.i = it.b+1, 0
	}
}

func (it *seqLogIter[V]) ok() bool    { return it.b < len(it.l.blocks) }
func (it *seqLogIter[V]) seq() uint64 { return it.l.blocks[it.b].keys[it.i] }
func (it *seqLogIter[V]) val() *V     { return &it.l.blocks[it.b].vals[it.i] }

func (it *seqLogIter[V]) next() {
	it.i++
	it.settle()
}

// appendLive appends the live keys and values to keys and vals (a snapshot).
func (l *seqLog[V]) appendLive(keys []uint64, vals []V) ([]uint64, []V) {
	for _, blk := range l.blocks {
		keys = append(keys, blk.keys...)
		vals = append(vals, blk.vals...)
	}
	return keys, vals
}

// load replaces the content with keys and vals, which must be sorted, distinct and live;
// the log takes ownership of both slices (its blocks are pieces of them until they grow).
func (l *seqLog[V]) load(keys []uint64, vals []V) {
	*l = seqLog[V]{live: len(keys)}
	for len(keys) > 0 {
		n := min(len(keys), seqBlockMax)
		l.blocks = append(l.blocks, seqBlock[V]{keys: keys[:n:n], vals: vals[:n:n]})
		keys, vals = keys[n:], vals[n:]
	}
}
