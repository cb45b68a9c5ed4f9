package destinations

import "sync/atomic"

// Quota bounds the bytes of queue messages dispatched to a set of consumers (a user's,
// on all its connections) and not yet acknowledged, whatever their prefetch: a queue
// counts each message (Entry.Size) as it picks a consumer for it, and a consumer whose
// Quota is full takes no more, as one without credit. Its owner gives the bytes back
// (Release) as deliveries are acknowledged or given back, and dispatches again when
// Release says the hold ended. A message larger than the quota is still dispatched
// when nothing else is held.
type Quota struct {
	Max int64
	// Full, if set, is called each time dispatch fills the quota, with the bytes held;
	// a queue's lock may be held.
	Full func(held int64)
	held atomic.Int64
	hold atomic.Bool // held >= Max
}

// Take counts n more bytes held (deliveries whose acknowledgement was undone).
func (q *Quota) Take(n int64) {
	if held := q.held.Add(n); held >= q.Max && !q.hold.Load() && q.hold.CompareAndSwap(false, true) && q.Full != nil {
		q.Full(held)
	}
}

// Release counts n bytes fewer held; it reports whether that ended the hold, when the
// consumers' queues should dispatch again.
func (q *Quota) Release(n int64) bool {
	return q.held.Add(-n) < q.Max && q.hold.Load() && q.hold.CompareAndSwap(true, false)
}

// Held is the bytes held now.
func (q *Quota) Held() int64 { return q.held.Load() }

// full reports whether consumers of q take no more.
func (q *Quota) full() bool { return q != nil && q.hold.Load() }
