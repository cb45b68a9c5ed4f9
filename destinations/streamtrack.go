package destinations

import (
	"sort"
	"sync"
)

// partTracker follows which messages of one partition a subscription was handed and
// which are acknowledged, to know the commit point: the offset of the first message not
// acknowledged, or past everything handed out when all are.
type partTracker struct {
	mu      sync.Mutex
	entries []trackEntry // handed out, in offset order, from head on
	head    int
	next    int64 // after the last offset handed out or passed over
	pending int   // handed out and not acknowledged
	settled chan struct{}
	retired bool // the partition was handed over or the subscription closed
}

type trackEntry struct {
	off   int64
	acked bool
}

func newPartTracker(start int64) *partTracker { return &partTracker{next: start} }

// point is the commit point. The caller holds mu.
func (t *partTracker) point() int64 {
	if t.head < len(t.entries) {
		return t.entries[t.head].off
	}
	return t.next
}

// add records a message handed out.
func (t *partTracker) add(off int64) {
	t.mu.Lock()
	t.entries = append(t.entries, trackEntry{off: off})
	t.next = off + 1
	t.pending++
	t.mu.Unlock()
}

// skip records a message passed over (expired, or not selected).
func (t *partTracker) skip(off int64) {
	t.mu.Lock()
	if t.head < len(t.entries) {
		t.entries = append(t.entries, trackEntry{off: off, acked: true})
	}
	t.next = off + 1
	t.mu.Unlock()
}

// jump moves past messages retention deleted before they were read.
func (t *partTracker) jump(off int64) {
	t.mu.Lock()
	t.next = max(t.next, off)
	t.mu.Unlock()
}

// ack marks off acknowledged and returns the commit point, and whether it moved.
func (t *partTracker) ack(off int64) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.retired {
		return 0, false
	}
	live := t.entries[t.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].off >= off })
	if i == len(live) || live[i].off != off || live[i].acked {
		return 0, false
	}
	live[i].acked = true
	if t.pending--; t.pending == 0 && t.settled != nil {
		close(t.settled)
		t.settled = nil
	}
	if i != 0 {
		return 0, false
	}
	for t.head < len(t.entries) && t.entries[t.head].acked {
		t.head++
	}
	if t.head == len(t.entries) {
		clear(t.entries)
		t.entries, t.head = t.entries[:0], 0
	} else if t.head > 1024 && t.head*2 > len(t.entries) {
		n := copy(t.entries, t.entries[t.head:])
		clear(t.entries[n:])
		t.entries, t.head = t.entries[:n], 0
	}
	return t.point(), true
}

// whenSettled returns a channel closed once every message handed out is acknowledged
// (closed already if they are).
func (t *partTracker) whenSettled() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == 0 {
		return closedChan
	}
	if t.settled == nil {
		t.settled = make(chan struct{})
	}
	return t.settled
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// resumeAt is where reading continues with this tracker: after the last message handed
// out or passed over.
func (t *partTracker) resumeAt() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

// retire ends the tracker and returns its final commit point, and, if messages handed
// out were still unacknowledged, the offset after the last one handed out (0 if none
// was); later acks are ignored.
func (t *partTracker) retire() (point, unsettledBelow int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retired = true
	if t.pending > 0 {
		unsettledBelow = t.next
	}
	return t.point(), unsettledBelow
}
