package journal

import (
	"math/bits"
	"slices"
)

// seqSetGap is the largest jump past either end of a seqSet's bitmap that the bitmap
// is extended over (seqSetGap/8 bytes of clear bits); a seq further away is kept in the
// set's log.
const seqSetGap = 4096

// seqSet is a set of seqs shaped for a durable subscription's pending set: the seqs of
// its topic from the oldest it has not acknowledged to the newest, mostly all of them.
// It is a bitmap over that range (a bit a seq, the words below the lowest member
// dropped as it moves up) plus a sorted log of the members too far from the bitmap to
// extend it cheaply when they were put (a subscription whose selector rarely matches).
// A member is in one of the two. Not safe for concurrent use; the Store's mutex guards it.
type seqSet struct {
	base uint64   // seq of bit 0 of words, a multiple of 64
	bits []uint64 // words
	n    int      // members in bits
	far  seqLog[struct{}]
}

// Len returns the number of members.
func (s *seqSet) Len() int { return s.n + s.far.Len() }

// inBits reports whether seq is in the bitmap's range, and its word and bit.
func (s *seqSet) inBits(seq uint64) (int, uint64, bool) {
	if seq < s.base || seq-s.base >= uint64(len(s.bits))<<6 {
		return 0, 0, false
	}
	return int((seq - s.base) >> 6), 1 << (seq & 63), true
}

// Contains reports whether seq is a member.
func (s *seqSet) Contains(seq uint64) bool {
	if w, b, ok := s.inBits(seq); ok && s.bits[w]&b != 0 {
		return true
	}
	return s.far.Contains(seq)
}

// Put adds seq, which must not be a member. (The log may hold members inside the
// bitmap's range, which grew over them after they were put: every lookup checks both.)
func (s *seqSet) Put(seq uint64) {
	switch {
	case s.n == 0:
		s.base, s.bits = seq&^63, append(s.bits[:0], 0)
	case seq < s.base:
		if s.base-seq > seqSetGap {
			s.far.Put(seq, struct{}{})
			return
		}
		k := int((s.base - (seq &^ 63)) >> 6)
		s.bits = slices.Insert(s.bits, 0, make([]uint64, k)...)
		s.base -= uint64(k) << 6
	default:
		if end := s.base + uint64(len(s.bits))<<6; seq >= end {
			if seq-end >= seqSetGap {
				s.far.Put(seq, struct{}{})
				return
			}
			for seq >= s.base+uint64(len(s.bits))<<6 {
				s.bits = append(s.bits, 0)
			}
		}
	}
	w, b, _ := s.inBits(seq)
	s.bits[w] |= b
	s.n++
}

// Remove deletes seq and reports whether it was a member.
func (s *seqSet) Remove(seq uint64) bool {
	w, b, ok := s.inBits(seq)
	if !ok || s.bits[w]&b == 0 {
		_, ok := s.far.Remove(seq)
		return ok
	}
	s.bits[w] &^= b
	s.n--
	if s.n == 0 {
		if cap(s.bits) > 64 {
			s.bits = nil
		} else {
			s.bits = s.bits[:0]
		}
		return true
	}
	if w == 0 && s.bits[0] == 0 {
		k := 0
		for s.bits[k] == 0 {
			k++
		}
		s.base += uint64(k) << 6
		s.bits = s.bits[k:]
		if cap(s.bits) > 64 && len(s.bits) < cap(s.bits)/4 {
			s.bits = slices.Clone(s.bits)
		}
	}
	return true
}

// Reset deletes every member and releases the memory.
func (s *seqSet) Reset() { *s = seqSet{} }

// After calls fn, in order, for the members greater than afterSeq, until fn returns
// false. The set must not change during the iteration.
func (s *seqSet) After(afterSeq uint64, fn func(seq uint64) bool) {
	it := s.far.iter(afterSeq)
	farBelow := func(limit uint64) bool {
		for ; it.ok(); it.next() {
			k := it.seq()
			if k >= limit {
				return true
			}
			if !fn(k) {
				return false
			}
		}
		return true
	}
	if s.n > 0 {
		w := 0
		if afterSeq >= s.base {
			w = int(min((afterSeq-s.base)>>6, uint64(len(s.bits))))
		}
		for ; w < len(s.bits); w++ {
			word := s.bits[w]
			if first := s.base + uint64(w)<<6; afterSeq >= first {
				if afterSeq-first >= 63 {
					continue
				}
				word &^= 1<<(afterSeq-first+1) - 1
			}
			for ; word != 0; word &= word - 1 {
				seq := s.base + uint64(w)<<6 + uint64(bits.TrailingZeros64(word))
				if !farBelow(seq) || !fn(seq) {
					return
				}
			}
		}
	}
	farBelow(maxSeq + 1)
}

// clone returns a copy of s (for a checkpoint snapshot).
func (s *seqSet) clone() seqSet {
	c := seqSet{base: s.base, bits: slices.Clone(s.bits), n: s.n}
	keys, vals := s.far.appendLive(nil, nil)
	c.far.load(keys, vals)
	return c
}
