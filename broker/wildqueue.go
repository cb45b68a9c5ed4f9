package broker

import "github.com/activemq-go/broker/destinations"

// Wildcard queue subscriptions, as ActiveMQ has them: a consumer of /queue/orders.> is a
// consumer of every queue whose name matches (see package broker/registry), and each
// acknowledgement goes to the queue its message came from.

// isWildcardQueue reports whether s is a wildcard queue subscription.
func (s *Subscription) isWildcardQueue() bool {
	return s.q == nil && s.durable == nil && s.stream == nil &&
		s.Dest.Kind == destinations.Queue && s.Dest.IsWildcard()
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
