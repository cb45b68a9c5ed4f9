package broker

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// schedHost is the broker as its scheduler's host (package broker/scheduler): a due
// job is routed as a send from no connection is, and its batch committed as every
// other.
type schedHost struct{ b *Broker }

func (h schedHost) NewMessageID() string { return h.b.newMessageID() }

func (h schedHost) Route(dests []destinations.Name, m *persistence.Message) (persistence.Batch, []destinations.Accepted, error) {
	return h.b.route(dests, m, nil)
}

func (h schedHost) Commit(batch persistence.Batch, d persistence.Durability, done func(error)) {
	h.b.commit(batch, d, done)
}
