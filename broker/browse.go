package broker

import (
	"context"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// DefaultBrowsePageSize is how many messages a queue browser sees at most (ActiveMQ's
// maxBrowsePageSize is 400).
const DefaultBrowsePageSize = management.DefaultBrowsePageSize

// Browse returns up to max messages waiting on a queue, in dispatch order, without
// consuming them: those held in memory first, then those paged out to the store.
// Messages dispatched to a consumer and not yet acknowledged are not included.
// The selector is text, as in SubscribeRequest.
func (c *Conn) Browse(ctx context.Context, d destinations.Name, selectorText string, max int) ([]*persistence.Message, error) {
	sel, err := parseSelector(selectorText)
	if err != nil {
		return nil, err
	}
	if max <= 0 {
		max = DefaultBrowsePageSize
	}
	if err := c.authorizeUse([]destinations.Name{d}, security.Read, false); err != nil {
		return nil, err
	}
	d, err = c.resolve(d, true)
	if err != nil {
		return nil, err
	}
	if d.Kind != destinations.Queue && d.Kind != destinations.TempQueue || d.IsWildcard() {
		return nil, errorf(ErrInvalidDestination, "only a queue can be browsed: %s", d)
	}
	if err := c.dests.Reserved(d); err != nil {
		return nil, err
	}
	q := c.dests.QueueOf(d)
	if q == nil {
		return nil, nil
	}
	return q.Browse(ctx, sel, max)
}
