package registry

import "github.com/activemq-go/broker/destinations"

// Subscriptions on wildcard names. A wildcard topic subscription is a subscriber of
// every topic whose name matches, those that exist when it subscribes and those made
// later. A wildcard queue subscription, as ActiveMQ has them, is a consumer of every
// matching queue likewise: each queue dispatches to it as to its other consumers (one
// consumer per message, the subscription's prefetch shared across the queues), and each
// acknowledgement goes to the queue its message came from. Either receives only from
// the destinations its subject may read (mayReadLocked).

// AddWildcard makes c a subscriber of every topic matching its name, now and later.
func (r *Destinations) AddWildcard(c *destinations.Consumer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wildSubs = append(r.wildSubs, c)
	for name, t := range r.topics {
		if destinations.Match(c.Dest.Name, name) && r.mayReadLocked(c, true, name) {
			t.Add(c)
		}
	}
}

// RemoveWildcard detaches c, added with AddWildcard, from its topics.
func (r *Destinations) RemoveWildcard(c *destinations.Consumer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wildSubs = without(r.wildSubs, c)
	for name, t := range r.topics {
		if destinations.Match(c.Dest.Name, name) {
			t.Remove(c)
		}
	}
}

// HasWildcards reports whether any subscription is on a wildcard topic name.
func (r *Destinations) HasWildcards() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.wildSubs) > 0
}

// without returns s without x, in a new array when x was in it (readers may hold the
// old one).
func without[T comparable](s []T, x T) []T {
	for i, w := range s {
		if w == x {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}

// WildQueue is a wildcard queue subscription: its consumer and the queues it consumes
// from, guarded by the registry's lock.
type WildQueue struct {
	c  *destinations.Consumer
	qs []*destinations.QueueDest
}

// AddWildcardQueue makes c a consumer of every queue matching its name, now and later.
func (r *Destinations) AddWildcardQueue(c *destinations.Consumer) *WildQueue {
	w := &WildQueue{c: c}
	r.mu.Lock()
	r.wildQueues = append(r.wildQueues, w)
	for name, q := range r.queues {
		if destinations.Match(c.Dest.Name, name) && r.mayReadLocked(c, false, name) {
			w.qs = append(w.qs, q)
		}
	}
	qs := append([]*destinations.QueueDest(nil), w.qs...)
	r.mu.Unlock()
	// Dispatch outside r.mu. A queue created meanwhile got c from attachWildcardQueues.
	for _, q := range qs {
		q.AddConsumer(c)
	}
	return w
}

// RemoveWildcardQueue detaches w from its queues.
func (r *Destinations) RemoveWildcardQueue(w *WildQueue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wildQueues = without(r.wildQueues, w)
	for _, q := range w.qs {
		q.RemoveConsumer(w.c)
	}
	w.qs = nil
}

// attachWildcardQueues adds the wildcard queue subscriptions matching a new queue, still
// empty, to its consumers. The caller holds r.mu.
func (r *Destinations) attachWildcardQueues(q *destinations.QueueDest, name string) {
	for _, w := range r.wildQueues {
		if destinations.Match(w.c.Dest.Name, name) && r.mayReadLocked(w.c, false, name) {
			w.qs = append(w.qs, q)
			q.AddConsumer(w.c)
		}
	}
}

// WildcardQueues returns the queues w consumes from now (none for nil).
func (r *Destinations) WildcardQueues(w *WildQueue) []*destinations.QueueDest {
	if w == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*destinations.QueueDest(nil), w.qs...)
}
