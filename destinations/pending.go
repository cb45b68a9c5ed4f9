package destinations

import (
	"sort"
	"sync/atomic"

	"github.com/activemq-go/broker/persistence"
)

// Entry is one message waiting in, or dispatched from, a destination.
type Entry struct {
	Msg *persistence.Message
	// Ready is false while the message may not be dispatched yet: its store write is
	// in flight (or, with concurrent store and dispatch, not yet queued). Dispatch
	// never passes an entry that is not ready, so consumers see messages in sequence
	// order.
	Ready bool
	// Failed marks an entry whose store write failed; it is dropped when reached.
	Failed bool
	// Redelivered is set once the message was dispatched and came back unacknowledged.
	Redelivered bool
	// Deliveries counts dispatches so far (the next delivery is Deliveries+1).
	Deliveries uint32
	// Size is what the message counts against memory limits (Message.Size at accept).
	Size int64
	// NotBefore delays the next dispatch (a redelivery delay); zero means now.
	NotBefore int64 // ns since the epoch
	// withdraw is set for a message dispatched while its store write is still queued
	// (concurrent store and dispatch): called when the message is acknowledged, it
	// reports whether it withdrew the write (and answered the producer), in which case
	// the acknowledgement needs no store write either. Set before Ready; dropped once
	// the write is done (it could withdraw nothing then, and it holds the batch and the
	// producer's completion, several hundred bytes a message).
	withdraw atomic.Pointer[func() bool]
	// lease is the message's lease when claimed is set: it was claimed from a shared
	// queue's database (shared.go) and is acknowledged there.
	lease   Lease
	claimed bool

	removed bool
}

// Levels is the number of JMS priority levels (0..9).
const Levels = 10

// Pending holds the entries of a destination that wait for a consumer: highest priority
// first, and within a priority in sequence order. With priorities off every entry goes to
// one FIFO. Not safe for concurrent use; the owning destination locks around it.
type Pending struct {
	levels      [Levels]fifo
	n           int
	prioritized bool
}

// NewPending returns an empty list; prioritized selects JMS priority ordering.
func NewPending(prioritized bool) *Pending { return &Pending{prioritized: prioritized} }

func (p *Pending) level(e *Entry) *fifo {
	if !p.prioritized {
		return &p.levels[4]
	}
	pr := int(e.Msg.Priority)
	if pr >= Levels {
		pr = Levels - 1
	}
	return &p.levels[pr]
}

// Len is the number of pending entries.
func (p *Pending) Len() int { return p.n }

// Push adds a new entry. Entries are pushed in increasing sequence order per level, except
// those given back by Requeue.
func (p *Pending) Push(e *Entry) {
	p.level(e).insert(e)
	p.n++
}

// Requeue gives back an entry that was dispatched: it goes before every later sequence
// of its level, so it is redelivered first.
func (p *Pending) Requeue(e *Entry) { p.Push(e) }

// Peek returns the entry to dispatch next, or nil.
func (p *Pending) Peek() *Entry {
	for i := Levels - 1; i >= 0; i-- {
		if f := &p.levels[i]; f.len() > 0 {
			return f.front()
		}
	}
	return nil
}

// Pop removes the entry Peek returns.
func (p *Pending) Pop() *Entry {
	for i := Levels - 1; i >= 0; i-- {
		if f := &p.levels[i]; f.len() > 0 {
			p.n--
			return f.popFront()
		}
	}
	return nil
}

// Remove takes e, which must be pending, out of the list.
func (p *Pending) Remove(e *Entry) {
	f := p.level(e)
	if f.len() > 0 && f.front() == e {
		f.popFront()
	} else {
		f.remove(e)
	}
	p.n--
}

// OldestTimestamp is the oldest Timestamp among the fronts of the priority levels (each
// level is in sequence order, so its front is its oldest message); 0 when empty.
func (p *Pending) OldestTimestamp() int64 {
	var ts int64
	for i := range p.levels {
		f := &p.levels[i]
		if f.len() == 0 {
			continue
		}
		if t := f.front().Msg.Timestamp; ts == 0 || t < ts {
			ts = t
		}
	}
	return ts
}

// Each calls fn for every pending entry in dispatch order until fn returns false. fn may
// Remove the entry it is given.
func (p *Pending) Each(fn func(*Entry) bool) {
	for i := Levels - 1; i >= 0; i-- {
		f := &p.levels[i]
		for j := f.head; j < len(f.items); j++ {
			e := f.items[j]
			if e == nil || e.removed {
				continue
			}
			if !fn(e) {
				return
			}
		}
	}
}

// RemoveIf removes every entry for which fn returns true and returns how many it removed.
func (p *Pending) RemoveIf(fn func(*Entry) bool) int {
	removed := 0
	for i := range p.levels {
		f := &p.levels[i]
		kept := f.items[:f.head]
		for _, e := range f.items[f.head:] {
			if e == nil || e.removed {
				continue
			}
			if fn(e) {
				removed++
				continue
			}
			kept = append(kept, e)
		}
		for j := len(kept); j < len(f.items); j++ {
			f.items[j] = nil
		}
		f.items, f.dead = kept, 0
	}
	p.n -= removed
	return removed
}

// fifo is a slice-backed deque of entries sorted by sequence. Entries removed from the
// middle stay as tombstones (removed) until they reach the front or a compaction.
type fifo struct {
	items []*Entry
	head  int
	dead  int // removed entries still in items[head:]
}

func (f *fifo) len() int { return len(f.items) - f.head - f.dead }

func (f *fifo) skipDead() {
	for f.head < len(f.items) && f.items[f.head].removed {
		f.items[f.head] = nil
		f.head++
		f.dead--
	}
}

func (f *fifo) front() *Entry {
	f.skipDead()
	return f.items[f.head]
}

func (f *fifo) popFront() *Entry {
	f.skipDead()
	e := f.items[f.head]
	f.items[f.head] = nil
	f.head++
	f.skipDead()
	if f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	} else if f.head > 1024 && f.head*2 > len(f.items) {
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return e
}

// compactIfSparse drops tombstones once they outnumber live entries.
func (f *fifo) compactIfSparse() {
	if f.dead < 64 || f.dead*2 < len(f.items)-f.head {
		return
	}
	kept := f.items[:0]
	for _, e := range f.items[f.head:] {
		if !e.removed {
			kept = append(kept, e)
		}
	}
	clear(f.items[len(kept):])
	f.items, f.head, f.dead = kept, 0, 0
}

// remove replaces e's slot with a tombstone that keeps its sequence, so the slice stays
// sorted and e itself can be inserted again later (a requeue).
func (f *fifo) remove(e *Entry) {
	live := f.items[f.head:]
	seq := e.Msg.Seq
	i := sort.Search(len(live), func(i int) bool { return live[i].Msg.Seq >= seq })
	for ; i < len(live) && live[i].Msg.Seq == seq; i++ {
		if live[i] == e {
			live[i] = &Entry{Msg: e.Msg, removed: true}
			f.dead++
			f.compactIfSparse()
			return
		}
	}
	panic("destinations: Remove of an entry that is not pending")
}

func (f *fifo) insert(e *Entry) {
	seq := e.Msg.Seq
	n := len(f.items)
	if n == f.head || f.items[n-1].Msg.Seq < seq {
		f.items = append(f.items, e)
		return
	}
	live := f.items[f.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].Msg.Seq > seq })
	if i == 0 && f.head > 0 {
		f.head--
		f.items[f.head] = e
		return
	}
	pos := f.head + i
	f.items = append(f.items, nil)
	copy(f.items[pos+1:], f.items[pos:])
	f.items[pos] = e
}
