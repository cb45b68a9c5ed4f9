package broker

import "github.com/activemq-go/broker/destinations"

// Wildcard queue subscriptions, as ActiveMQ has them: a consumer of /queue/orders.> is a
// consumer of every queue whose name matches, those that exist when it subscribes and
// those created later. Each queue dispatches to it as to its other consumers (one
// consumer per message, the subscription's prefetch shared across the queues), and each
// acknowledgement goes to the queue its message came from.

// isWildcardQueue reports whether s is a wildcard queue subscription.
func (s *Subscription) isWildcardQueue() bool {
	return s.q == nil && s.durable == nil && s.stream == nil &&
		s.Dest.Kind == destinations.Queue && s.Dest.IsWildcard()
}

// addWildcardQueue makes s a consumer of every queue matching its name, now and later.
func (b *Broker) addWildcardQueue(s *Subscription) {
	b.mu.Lock()
	b.wildQueueSubs = append(b.wildQueueSubs, s)
	for name, q := range b.queues {
		if destinations.Match(s.Dest.Name, name) && b.mayReadLocked(s, false, name) {
			s.qs = append(s.qs, q)
		}
	}
	qs := append([]*destinations.QueueDest(nil), s.qs...)
	b.mu.Unlock()
	// Dispatch outside b.mu. A queue created meanwhile got s from attachWildcardQueues.
	for _, q := range qs {
		q.AddConsumer(&s.Consumer)
	}
}

// removeWildcardQueue detaches s from its queues.
func (b *Broker) removeWildcardQueue(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wildQueueSubs = withoutSub(b.wildQueueSubs, s)
	for _, q := range s.qs {
		q.RemoveConsumer(&s.Consumer)
	}
	s.qs = nil
}

// attachWildcardQueues adds the wildcard queue subscriptions matching a new queue, still
// empty, to its consumers. The caller holds b.mu.
func (b *Broker) attachWildcardQueues(q *destinations.QueueDest, name string) {
	for _, s := range b.wildQueueSubs {
		if destinations.Match(s.Dest.Name, name) && b.mayReadLocked(s, false, name) {
			s.qs = append(s.qs, q)
			q.AddConsumer(&s.Consumer)
		}
	}
}

// wildcardQueues returns the queues s consumes from now.
func (b *Broker) wildcardQueues(s *Subscription) []*destinations.QueueDest {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return append([]*destinations.QueueDest(nil), s.qs...)
}

// byQueue groups queue deliveries by the queue they came from, keeping their order.
func byQueue(ds []*Delivery) map[*destinations.QueueDest][]*Delivery {
	out := make(map[*destinations.QueueDest][]*Delivery, 1)
	for _, d := range ds {
		if d.Queue != nil {
			out[d.Queue] = append(out[d.Queue], d)
		}
	}
	return out
}

// requeueEach gives unacknowledged queue deliveries back to the queues they came from.
func requeueEach(ds []*Delivery) {
	for q, qds := range byQueue(ds) {
		q.Requeue(qds, false)
	}
}
