package broker

import (
	"context"
	"errors"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

// DefaultBrowsePageSize is how many messages a queue browser sees at most (ActiveMQ's
// maxBrowsePageSize is 400).
const DefaultBrowsePageSize = 400

// Browse returns up to max messages waiting on a queue, in dispatch order, without
// consuming them: those held in memory first, then those paged out to the store.
// Messages dispatched to a consumer and not yet acknowledged are not included.
func (c *Conn) Browse(ctx context.Context, d destinations.Name, sel *selector.Selector, max int) ([]*persistence.Message, error) {
	if max <= 0 {
		max = DefaultBrowsePageSize
	}
	d, err := c.resolve(d, true)
	if err != nil {
		return nil, err
	}
	if d.Kind != destinations.Queue || d.IsWildcard() {
		return nil, errorf(ErrInvalidDestination, "only a queue can be browsed: %s", d)
	}
	c.b.mu.RLock()
	q := c.b.queues[d.Name]
	c.b.mu.RUnlock()
	if q == nil {
		return nil, nil
	}
	var out []*persistence.Message
	now := time.Now().UnixMilli()
	live := func(m *persistence.Message) bool { return m.Expires == 0 || m.Expires > now }
	q.mu.Lock()
	q.pending.Each(func(e *destinations.Entry) bool {
		if e.Ready && !e.Failed && live(e.Msg) && sel.MatchesMessage(e.Msg, e.Deliveries+1) {
			out = append(out, e.Msg)
		}
		return len(out) < max
	})
	paged, after := q.paged, q.pageAfter
	q.mu.Unlock()
	if !paged || len(out) >= max {
		return out, nil
	}
	stop := errors.New("enough")
	err = c.b.store.Scan(ctx, q.dest, after, max, func(m *persistence.Message) error {
		if live(m) && sel.MatchesMessage(m, m.RedeliveryCount+1) {
			out = append(out, m.Clone())
		}
		if len(out) >= max {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return out, err
	}
	return out, nil
}
