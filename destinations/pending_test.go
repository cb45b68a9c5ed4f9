package destinations

import (
	"testing"

	"github.com/activemq-go/broker/persistence"
)

func entry(seq uint64, prio uint8) *Entry {
	return &Entry{Msg: &persistence.Message{Seq: seq, Priority: prio}, Ready: true}
}

func drainPending(p *Pending) []uint64 {
	var out []uint64
	for e := p.Pop(); e != nil; e = p.Pop() {
		out = append(out, e.Msg.Seq)
	}
	return out
}

func TestPendingFIFOAndRequeue(t *testing.T) {
	p := NewPending(false)
	for s := uint64(1); s <= 5; s++ {
		p.Push(entry(s, uint8(s)))
	}
	a, b := p.Pop(), p.Pop()
	p.Requeue(b)
	p.Requeue(a)
	got := drainPending(p)
	want := []uint64{1, 2, 3, 4, 5}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	if p.Len() != 0 {
		t.Fatalf("len %d", p.Len())
	}
}

func TestPendingPriority(t *testing.T) {
	p := NewPending(true)
	p.Push(entry(1, 4))
	p.Push(entry(2, 9))
	p.Push(entry(3, 0))
	p.Push(entry(4, 9))
	p.Push(entry(5, 4))
	got := drainPending(p)
	want := []uint64{2, 4, 1, 5, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
}

func TestPendingRemoveIf(t *testing.T) {
	p := NewPending(false)
	for s := uint64(1); s <= 6; s++ {
		p.Push(entry(s, 4))
	}
	p.Pop()
	if n := p.RemoveIf(func(e *Entry) bool { return e.Msg.Seq%2 == 0 }); n != 3 {
		t.Fatalf("removed %d", n)
	}
	got := drainPending(p)
	if len(got) != 2 || got[0] != 3 || got[1] != 5 {
		t.Fatalf("got %v", got)
	}
}

func TestPendingRemoveMiddleAndEach(t *testing.T) {
	p := NewPending(false)
	var es []*Entry
	for s := uint64(1); s <= 200; s++ {
		e := entry(s, 4)
		es = append(es, e)
		p.Push(e)
	}
	for _, e := range es {
		if e.Msg.Seq%3 == 0 {
			p.Remove(e)
		}
	}
	p.Remove(es[0])
	var seen []uint64
	p.Each(func(e *Entry) bool { seen = append(seen, e.Msg.Seq); return true })
	if len(seen) != p.Len() {
		t.Fatalf("Each saw %d, Len %d", len(seen), p.Len())
	}
	got := drainPending(p)
	if len(got) != len(seen) {
		t.Fatalf("drained %d, want %d", len(got), len(seen))
	}
	for i, s := range got {
		if s%3 == 0 || s == 1 || s != seen[i] {
			t.Fatalf("drained %v", got)
		}
	}
	// A removed entry can be pushed again (requeue) and is seen once.
	p.Push(es[2])
	p.Push(es[5])
	if e := p.Pop(); e != es[2] {
		t.Fatalf("requeued entry not returned")
	}
	if e := p.Pop(); e != es[5] {
		t.Fatalf("requeued entry not returned")
	}
	if p.Len() != 0 || p.Pop() != nil {
		t.Fatalf("left over: %d", p.Len())
	}

	// Remove in the middle, requeue it while its tombstone is still there, remove again.
	q := NewPending(false)
	for s := uint64(1); s <= 5; s++ {
		q.Push(es[s-1])
	}
	q.Remove(es[2])
	q.Push(es[2])
	q.Remove(es[2])
	q.Push(es[2])
	got = drainPending(q)
	if len(got) != 5 {
		t.Fatalf("got %v", got)
	}
}

// OldestTimestamp is the earliest timestamp among the heads of the priority levels.
func TestPendingOldestTimestamp(t *testing.T) {
	p := NewPending(true)
	if ts := p.OldestTimestamp(); ts != 0 {
		t.Fatalf("empty: %d", ts)
	}
	at := func(seq uint64, prio uint8, ts int64) *Entry {
		e := entry(seq, prio)
		e.Msg.Timestamp = ts
		return e
	}
	p.Push(at(1, 4, 300))
	p.Push(at(2, 9, 500)) // dispatched first, but not the oldest
	p.Push(at(3, 4, 400))
	if ts := p.OldestTimestamp(); ts != 300 {
		t.Fatalf("got %d, want 300", ts)
	}
	p.Pop() // seq 2
	p.Pop() // seq 1
	if ts := p.OldestTimestamp(); ts != 400 {
		t.Fatalf("got %d, want 400", ts)
	}
}
