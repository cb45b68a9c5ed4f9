package broker

import "github.com/activemq-go/broker/destinations"

// regHost is the broker as its destination registry's host (package broker/registry):
// a wildcard subscription receives from what its subject may read, and advisories
// announce the destinations made and removed.
type regHost struct{ b *Broker }

func (h regHost) MayRead(c *destinations.Consumer, topic bool, name string) bool {
	return h.b.access.MayRead(c.Owner.(*Subscription).conn.subject, topic, name)
}

func (h regHost) Added(d destinations.Name, temp bool, by string, q *destinations.QueueDest, t *destinations.TopicDest) {
	if h.b.adv != nil {
		h.b.adv.DestinationAdded(d, temp, by, q, t)
	}
}

func (h regHost) Removed(d destinations.Name) {
	if h.b.adv != nil {
		h.b.adv.DestinationRemoved(d)
	}
}
