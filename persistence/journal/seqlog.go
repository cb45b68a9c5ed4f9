package journal

import (
	"math"
	"slices"
)

// maxSeq is the largest sequence number the store accepts: the top bit of a seqLog key
// marks a deleted slot.
const maxSeq = math.MaxInt64

// deadBit marks a deleted slot of a seqLog.
const deadBit = 1 << 63

// seqLog is an ordered map from sequence number to V, shaped for how a destination's
// messages outside its extents and the far members of a pending set (seqSet) are
// used: sequence numbers arrive mostly in increasing order at the tail, deletions
// happen anywhere but mostly near the head, and scans start from a sequence number.
//
// It is two parallel slices sorted by seq: the keys and the values (with V = struct{}
// the values take no memory, so an entry costs 8 bytes). A deletion sets the key's
// top bit (a tombstone) and moves head past a dead prefix; once the dead slots
// outnumber the live ones (plus a slack) the slices are compacted, so tombstones never
// exceed live entries + seqLogSlack and compaction costs O(1) amortised per deletion.
//
// Costs, n = live entries: append at the tail O(1) amortised; insert before the tail
// O(log n) + O(n) shift (rare: out-of-order adds; a neighbouring tombstone is reused
// when there is one); lookup and delete O(log n); iterating k entries from a seq
// O(log n + k).
//
// Not safe for concurrent use; the Store's mutex guards it.
type seqLog[V any] struct {
	keys []uint64 // seq, | deadBit when deleted; sorted by seq; keys[:head] are all dead
	vals []V
	head int
	live int
}

const seqLogSlack = 32

// Len returns the number of live entries.
func (l *seqLog[V]) Len() int { return l.live }

// find returns the index of the first slot at or after head whose seq is >= seq.
func (l *seqLog[V]) find(seq uint64) int {
	n := len(l.keys)
	if n == l.head || l.keys[n-1]&^deadBit < seq {
		return n
	}
	lo, hi := l.head, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.keys[m]&^deadBit < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// index returns the slot of the live entry seq, or -1.
func (l *seqLog[V]) index(seq uint64) int {
	if i := l.find(seq); i < len(l.keys) && l.keys[i] == seq {
		return i
	}
	return -1
}

// Get returns the value of seq.
func (l *seqLog[V]) Get(seq uint64) (V, bool) {
	if i := l.index(seq); i >= 0 {
		return l.vals[i], true
	}
	var zero V
	return zero, false
}

// Ptr returns a pointer to the value of seq, valid until the next change, or nil.
func (l *seqLog[V]) Ptr(seq uint64) *V {
	if i := l.index(seq); i >= 0 {
		return &l.vals[i]
	}
	return nil
}

// Contains reports whether seq is live.
func (l *seqLog[V]) Contains(seq uint64) bool { return l.index(seq) >= 0 }

// Put stores v under seq, which must not be live.
func (l *seqLog[V]) Put(seq uint64, v V) {
	l.live++
	i := l.find(seq)
	switch {
	case i < len(l.keys) && l.keys[i]&^deadBit == seq: // a tombstone of seq
		l.keys[i], l.vals[i] = seq, v
	case i > l.head && l.keys[i-1]&deadBit != 0: // reuse the dead slot just before
		l.keys[i-1], l.vals[i-1] = seq, v
	case i == l.head && l.head > 0: // reuse the last slot of the dead prefix
		l.head--
		l.keys[l.head], l.vals[l.head] = seq, v
	case i == len(l.keys):
		l.keys = append(l.keys, seq)
		l.vals = append(l.vals, v)
	default:
		l.keys = slices.Insert(l.keys, i, seq)
		l.vals = slices.Insert(l.vals, i, v)
	}
}

// Remove deletes seq and returns its value.
func (l *seqLog[V]) Remove(seq uint64) (V, bool) {
	var zero V
	i := l.index(seq)
	if i < 0 {
		return zero, false
	}
	v := l.vals[i]
	l.keys[i] |= deadBit
	l.vals[i] = zero
	l.live--
	l.trim()
	return v, true
}

// Reset deletes everything and releases the memory.
func (l *seqLog[V]) Reset() { *l = seqLog[V]{} }

// trim drops dead slots at both ends and compacts when tombstones outnumber entries.
func (l *seqLog[V]) trim() {
	if l.live == 0 {
		if cap(l.keys) > 4*seqLogSlack {
			l.Reset()
			return
		}
		l.keys, l.vals, l.head = l.keys[:0], l.vals[:0], 0
		return
	}
	for l.keys[l.head]&deadBit != 0 {
		l.head++
	}
	n := len(l.keys)
	for l.keys[n-1]&deadBit != 0 {
		n--
	}
	l.keys, l.vals = l.keys[:n], l.vals[:n]
	if n-l.live <= l.live+seqLogSlack {
		return
	}
	// Compact: move the live slots to the front, in order; shrink if mostly empty.
	inPlace := cap(l.keys) <= 4*l.live+seqLogSlack
	keys, vals := l.keys[:0], l.vals[:0] // in place, writes never overtake reads
	if !inPlace {
		keys, vals = make([]uint64, 0, 2*l.live), make([]V, 0, 2*l.live)
	}
	for i := l.head; i < n; i++ {
		if l.keys[i]&deadBit == 0 {
			keys = append(keys, l.keys[i])
			vals = append(vals, l.vals[i])
		}
	}
	if inPlace {
		clear(l.vals[len(vals):n]) // drop what the unused tail refers to
	}
	l.keys, l.vals, l.head = keys, vals, 0
}

// After calls fn, in seq order, for the live entries whose seq is greater than afterSeq,
// until fn returns false. The log must not change during the iteration.
func (l *seqLog[V]) After(afterSeq uint64, fn func(seq uint64, v *V) bool) {
	if afterSeq >= maxSeq {
		return
	}
	start := l.head
	if afterSeq > 0 {
		start = l.find(afterSeq + 1)
	}
	for i := start; i < len(l.keys); i++ {
		if l.keys[i]&deadBit == 0 && !fn(l.keys[i], &l.vals[i]) {
			return
		}
	}
}

// appendLive appends the live keys and values to keys and vals (a snapshot).
func (l *seqLog[V]) appendLive(keys []uint64, vals []V) ([]uint64, []V) {
	for i := l.head; i < len(l.keys); i++ {
		if l.keys[i]&deadBit == 0 {
			keys = append(keys, l.keys[i])
			vals = append(vals, l.vals[i])
		}
	}
	return keys, vals
}

// load replaces the content with keys and vals, which must be sorted, distinct and live;
// the log takes ownership of both slices.
func (l *seqLog[V]) load(keys []uint64, vals []V) {
	*l = seqLog[V]{keys: keys, vals: vals, live: len(keys)}
}

// cursor returns the slot to iterate keys from for the entries after afterSeq (dead
// slots included: the caller skips them).
func (l *seqLog[V]) cursor(afterSeq uint64) int {
	if afterSeq >= maxSeq {
		return len(l.keys)
	}
	return l.find(afterSeq + 1)
}
