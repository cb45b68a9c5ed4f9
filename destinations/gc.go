package destinations

import (
	"sync/atomic"
	"time"
)

// The state of a destination for the broker's collector of inactive destinations
// (gcInactiveDestinations). A destination is inactive while it holds no message (in
// memory, in the store or being stored) and has no subscriber, durable subscription or
// stream, and nothing is sent to it. Collectable marks one removed once it has been
// inactive long enough; a SEND or SUBSCRIBE that finds the mark looks the name up again.

// gcState is a destination's state for the collector.
type gcState struct {
	removed atomic.Bool
	used    atomic.Bool // looked up or sent to since the collector last looked
	// idleSince is when the collector first found the destination inactive (zero: it
	// was active); only the collector uses it.
	idleSince time.Time
}

// touch records that the destination is in use now.
func (g *gcState) touch() {
	if !g.used.Load() {
		g.used.Store(true)
	}
}

// Touch records that the queue is in use now.
func (q *QueueDest) Touch() { q.gc.touch() }

// Removed reports whether the collector removed the queue.
func (q *QueueDest) Removed() bool { return q.gc.removed.Load() }

// Touch records that the topic is in use now.
func (t *TopicDest) Touch() { t.gc.touch() }

// Removed reports whether the collector removed the topic.
func (t *TopicDest) Removed() bool { return t.gc.removed.Load() }

// Collectable reports whether the queue has been inactive for its policy's timeout, and
// if so marks it removed. The caller holds the broker's registry lock.
func (q *QueueDest) Collectable(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	used := q.gc.used.Swap(false)
	if used || len(q.consumers) > 0 || q.pending.Len() > 0 || q.pagedOut > 0 || len(q.inflight) > 0 || q.memBytes > 0 {
		q.gc.idleSince = time.Time{}
		return false
	}
	if q.gc.idleSince.IsZero() {
		q.gc.idleSince = now
	}
	if now.Sub(q.gc.idleSince) < q.policy.InactiveTimeoutBeforeGC {
		return false
	}
	q.gc.removed.Store(true)
	if q.timer != nil {
		q.timer.Stop()
	}
	return true
}

// Collectable reports whether the topic has been inactive for its policy's timeout, and
// if so marks it removed. The caller holds the broker's registry lock.
func (t *TopicDest) Collectable(now time.Time) bool {
	if t.isStream || t.st.Load() != nil {
		return false
	}
	// The subscribers are checked and the mark set under mu (t.add takes it), then the
	// durable subscriptions under pubMu, without holding both: should one have come,
	// the mark is taken back. A subscriber that saw the mark meanwhile looks the topic
	// up again, which waits for the broker's registry lock and finds this one.
	t.mu.Lock()
	used := t.gc.used.Swap(false)
	if used || len(t.subs) > 0 {
		t.gc.idleSince = time.Time{}
		t.mu.Unlock()
		return false
	}
	if t.gc.idleSince.IsZero() {
		t.gc.idleSince = now
	}
	if now.Sub(t.gc.idleSince) < t.gcTimeout {
		t.mu.Unlock()
		return false
	}
	t.gc.removed.Store(true)
	t.mu.Unlock()
	t.pubMu.Lock()
	durable := t.durables != nil && t.durables.Len() > 0
	t.pubMu.Unlock()
	if durable {
		t.gc.removed.Store(false)
		t.gc.idleSince = time.Time{}
		return false
	}
	return true
}

// Collects reports whether the topic's policy has the collector remove it once
// inactive.
func (t *TopicDest) Collects() bool { return t.gcTimeout > 0 }
