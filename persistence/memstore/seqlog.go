package memstore

import (
	"cmp"
	"iter"
	"math"
	"slices"
)

// seqLog is an ordered map from sequence number to *entry, shaped for how a destination
// (and a durable subscription's pending set) is used: sequence numbers arrive mostly in
// increasing order at the tail, deletions happen anywhere but mostly near the head, and
// scans start from a sequence number.
//
// It is a slice sorted by seq. A deletion only clears the slot (a tombstone) and moves
// the head past a dead prefix; once dead slots outnumber live ones (plus a small slack)
// the slice is compacted, so tombstones never exceed live entries + compactSlack and
// the cost of compaction is amortised O(1) per deletion.
//
// Costs, n = live entries: append at the tail O(1) amortised; insert in the middle
// O(log n) to find + O(n) to shift (rare: only concurrent committers to one
// destination produce it, and a neighbouring tombstone is reused when there is one);
// lookup, delete O(log n); iterating k entries from a seq O(log n + k) amortised.
//
// A seqLog is not safe for concurrent use; the Store's mutex guards it.
type seqLog struct {
	slots []slot // sorted by seq; every slot before head is dead
	head  int
	live  int
}

// slot is one position of a seqLog. e is nil once the entry was deleted.
type slot struct {
	seq uint64
	e   *entry
}

// compactSlack is how many dead slots a seqLog tolerates beyond its live count.
const compactSlack = 32

// Len is the number of live entries.
func (l *seqLog) Len() int { return l.live }

// find returns the index of the first slot at or after head whose seq is >= seq, or
// len(slots) if there is none.
func (l *seqLog) find(seq uint64) int {
	n := len(l.slots)
	if n == l.head || l.slots[n-1].seq < seq {
		return n // the common case: appending past the tail
	}
	i, _ := slices.BinarySearchFunc(l.slots[l.head:], seq, func(s slot, t uint64) int {
		return cmp.Compare(s.seq, t)
	})
	return l.head + i
}

// Get returns the live entry stored under seq, or nil.
func (l *seqLog) Get(seq uint64) *entry {
	if i := l.find(seq); i < len(l.slots) && l.slots[i].seq == seq {
		return l.slots[i].e
	}
	return nil
}

// Put stores e under seq. The caller must have removed any live entry under seq first.
func (l *seqLog) Put(seq uint64, e *entry) {
	l.live++
	i := l.find(seq)
	switch {
	case i < len(l.slots) && l.slots[i].seq == seq: // a tombstone of the same seq
		l.slots[i].e = e
	case i > l.head && l.slots[i-1].e == nil: // reuse the dead slot just before
		l.slots[i-1] = slot{seq, e}
	case i == l.head && l.head > 0: // reuse the last slot of the dead prefix
		l.head--
		l.slots[l.head] = slot{seq, e}
	default:
		l.slots = slices.Insert(l.slots, i, slot{seq, e})
	}
}

// Remove deletes the entry stored under seq and returns it, or nil if there is none.
func (l *seqLog) Remove(seq uint64) *entry {
	i := l.find(seq)
	if i == len(l.slots) || l.slots[i].seq != seq || l.slots[i].e == nil {
		return nil
	}
	e := l.slots[i].e
	l.slots[i].e = nil
	l.live--
	l.trim()
	return e
}

// Reset deletes every entry and releases the memory.
func (l *seqLog) Reset() { *l = seqLog{} }

// trim drops dead slots at both ends and compacts when tombstones outnumber entries.
func (l *seqLog) trim() {
	if l.live == 0 {
		if cap(l.slots) > 4*compactSlack {
			l.slots = nil
		}
		l.slots, l.head = l.slots[:0], 0
		return
	}
	for l.slots[l.head].e == nil {
		l.head++
	}
	n := len(l.slots)
	for l.slots[n-1].e == nil {
		n--
	}
	clear(l.slots[n:]) // let the collector have the entries of trimmed tail slots
	l.slots = l.slots[:n]
	if n-l.live <= l.live+compactSlack {
		return
	}
	// Compact: move the live slots to the front, in order.
	inPlace := cap(l.slots) <= 4*l.live+compactSlack
	dst := l.slots[:0]
	if !inPlace {
		dst = make([]slot, 0, 2*l.live)
	}
	for _, s := range l.slots[l.head:] { // dst never overtakes the read position
		if s.e != nil {
			dst = append(dst, s)
		}
	}
	if inPlace {
		clear(l.slots[len(dst):]) // drop stale pointers past the new end
	}
	l.slots, l.head = dst, 0
}

// After iterates, in seq order, over the live entries whose seq is greater than
// afterSeq. The log must not be modified during the iteration.
func (l *seqLog) After(afterSeq uint64) iter.Seq2[uint64, *entry] {
	return func(yield func(uint64, *entry) bool) {
		if afterSeq == math.MaxUint64 {
			return
		}
		start := l.head
		if afterSeq > 0 {
			start = l.find(afterSeq + 1)
		}
		for _, s := range l.slots[start:] {
			if s.e != nil && !yield(s.seq, s.e) {
				return
			}
		}
	}
}
