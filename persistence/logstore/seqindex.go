package logstore

import "slices"

// deleted marks a tombstone in a seqIndex slot: sequence numbers stop at maxSeq
// (math.MaxInt64), so the top bit is free.
const deleted = 1 << 63

// compactSlack is how many tombstones a seqIndex tolerates beyond its live entries
// before it compacts, so small indexes do not compact on every deletion.
const compactSlack = 32

// seqIndex is an ordered map from sequence number to V, shaped for how a destination's
// messages and a subscription's pending set are used: sequence numbers mostly arrive in
// increasing order at the tail, deletions happen anywhere but mostly at the head, and
// reads page forward from a sequence number (Scan(afterSeq, max)).
//
// It is one slice of slots sorted by seq. A deletion leaves a tombstone (the seq with
// its top bit set), which keeps the slice sorted without moving anything, and head moves
// past a dead prefix so reads from the start do not wade through it; once the
// tombstones outnumber the live entries (plus compactSlack) the slice is compacted, so
// memory stays within about twice the live entries and compaction costs O(1) amortised
// per deletion. Costs, n live entries: append at the tail O(1) amortised; insert before
// the tail O(log n) plus a shift, unless a neighbouring tombstone is reused (out-of-order
// adds are rare); lookup and delete O(log n); visiting k entries from a seq O(log n + k).
//
// Not safe for concurrent use: the Store's lock guards it.
type seqIndex[V any] struct {
	slots []slot[V]
	head  int // slots[:head] are all tombstones: a queue acked in order is skipped at once
	live  int
}

type slot[V any] struct {
	seq uint64 // | deleted for a tombstone
	v   V
}

func (s *slot[V]) key() uint64 { return s.seq &^ deleted }
func (s *slot[V]) dead() bool  { return s.seq&deleted != 0 }

// Len is the number of live entries.
func (x *seqIndex[V]) Len() int { return x.live }

// search returns the index of the first slot whose seq is >= seq.
func (x *seqIndex[V]) search(seq uint64) int {
	n := len(x.slots)
	if n == 0 || x.slots[n-1].key() < seq {
		return n // the common case of an append
	}
	i, _ := slices.BinarySearchFunc(x.slots, seq, func(s slot[V], seq uint64) int {
		switch k := s.key(); {
		case k < seq:
			return -1
		case k > seq:
			return 1
		}
		return 0
	})
	return i
}

// Get returns the entry of seq, or nil. The pointer is valid until the next change.
func (x *seqIndex[V]) Get(seq uint64) *V {
	i := x.search(seq)
	if i < len(x.slots) && x.slots[i].seq == seq {
		return &x.slots[i].v
	}
	return nil
}

// Put sets the entry of seq to v, adding it if missing.
func (x *seqIndex[V]) Put(seq uint64, v V) {
	i := x.search(seq)
	switch {
	case i == len(x.slots):
		x.slots = append(x.slots, slot[V]{seq, v})
	case x.slots[i].key() == seq:
		if !x.slots[i].dead() {
			x.slots[i].v = v
			return
		}
		x.slots[i] = slot[V]{seq, v}
	case i > 0 && x.slots[i-1].dead():
		// The tombstone just before lies strictly between the neighbours of seq: reuse it.
		i--
		x.slots[i] = slot[V]{seq, v}
	default:
		x.slots = slices.Insert(x.slots, i, slot[V]{seq, v})
	}
	x.live++
	x.head = min(x.head, i)
}

// Delete removes the entry of seq and reports whether there was one.
func (x *seqIndex[V]) Delete(seq uint64) bool {
	i := x.search(seq)
	if i == len(x.slots) || x.slots[i].seq != seq {
		return false
	}
	var zero V
	x.slots[i] = slot[V]{seq | deleted, zero}
	x.live--
	for x.head < len(x.slots) && x.slots[x.head].dead() {
		x.head++
	}
	if dead := len(x.slots) - x.live; dead > x.live+compactSlack {
		x.compact()
	}
	return true
}

// compact drops every tombstone.
func (x *seqIndex[V]) compact() {
	keep := x.slots[:0]
	for _, s := range x.slots {
		if !s.dead() {
			keep = append(keep, s)
		}
	}
	clear(x.slots[len(keep):]) // drop what the unused tail refers to
	if cap(keep) > 4*len(keep)+compactSlack {
		keep = slices.Clip(slices.Clone(keep)) // give back most of a drained slice
	}
	x.slots, x.head = keep, 0
}

// Reset removes every entry.
func (x *seqIndex[V]) Reset() { *x = seqIndex[V]{} }

// After calls fn, in seq order, for the live entries whose seq is greater than afterSeq,
// until fn returns false. The index must not change during the iteration.
func (x *seqIndex[V]) After(afterSeq uint64, fn func(seq uint64, v *V) bool) {
	if afterSeq >= maxSeq {
		return
	}
	for i := max(x.search(afterSeq+1), x.head); i < len(x.slots); i++ {
		if s := &x.slots[i]; !s.dead() && !fn(s.seq, &s.v) {
			return
		}
	}
}
