package logstore

import "sort"

// pins counts, per log offset, the stored messages whose Add lives in the record at that
// offset, so the lowest offset still needed (the low-water mark) is known at once.
//
// Records are applied in offset order, so pinned offsets arrive in increasing order and
// two parallel slices sorted by offset suffice: an Add pins the last offset or appends
// one, an unpin finds its offset by binary search. Offsets whose count dropped to zero
// stay as holes until they reach the front (a queue acked in order) or outnumber the
// pinned ones, when the slices are compacted; memory stays within about twice the number
// of records holding a stored message.
type pins struct {
	offs  []int64
	count []int32
	head  int // offs[:head] have a zero count
	holes int // zero counts at or after head
}

// pin records one more stored message in the record at off, which is at or after every
// offset pinned before.
func (p *pins) pin(off int64) {
	if n := len(p.offs); n > p.head && p.offs[n-1] == off {
		if p.count[n-1] == 0 {
			p.holes--
		}
		p.count[n-1]++
		return
	}
	p.offs = append(p.offs, off)
	p.count = append(p.count, 1)
}

// unpin records that a message of the record at off is no longer stored.
func (p *pins) unpin(off int64) {
	i := p.head + sort.Search(len(p.offs)-p.head, func(i int) bool { return p.offs[p.head+i] >= off })
	if i == len(p.offs) || p.offs[i] != off || p.count[i] == 0 {
		panic("logstore: unpin of an offset that holds no stored message") // an index bug
	}
	p.count[i]--
	if p.count[i] > 0 {
		return
	}
	p.holes++
	for p.head < len(p.offs) && p.count[p.head] == 0 {
		p.head++
		p.holes--
	}
	if p.head == len(p.offs) {
		p.offs, p.count, p.head, p.holes = p.offs[:0], p.count[:0], 0, 0
		return
	}
	if live := len(p.offs) - p.head - p.holes; p.head+p.holes > live+compactSlack {
		p.compact()
	}
}

// compact drops the offsets with a zero count.
func (p *pins) compact() {
	n := 0
	for i := p.head; i < len(p.offs); i++ {
		if p.count[i] > 0 {
			p.offs[n], p.count[n] = p.offs[i], p.count[i]
			n++
		}
	}
	p.offs, p.count, p.head, p.holes = p.offs[:n], p.count[:n], 0, 0
}

// low returns the lowest offset that holds a stored message, and false if none does.
func (p *pins) low() (int64, bool) {
	if p.head < len(p.offs) {
		return p.offs[p.head], true
	}
	return 0, false
}
