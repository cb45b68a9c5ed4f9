package management

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// DefaultBrowsePageSize is how many messages a queue browser sees at most (ActiveMQ's
// maxBrowsePageSize is 400).
const DefaultBrowsePageSize = 400

// DestinationStats is a snapshot of one destination's counters.
type DestinationStats = destinations.Stats

// ManagedDestination is one queue, topic or stream with its counters.
type ManagedDestination struct {
	DestinationStats
	Kind   destinations.Kind // Queue or Topic
	Stream bool
	// DLQ marks a dead-letter queue: one dead-lettered messages were sent to since
	// start, or named as the dead-letter strategies name them (ActiveMQ.DLQ, or with
	// the default prefixes ActiveMQ.DLQ.Queue. and ActiveMQ.DLQ.Topic.).
	DLQ bool
}

// ManagedDestinations lists the queues and topics (streams among them), by name;
// temporary destinations are left out.
func (m *Manager) ManagedDestinations() []ManagedDestination {
	ds := m.c.Host.Destinations()
	out := make([]ManagedDestination, 0, len(ds))
	for _, d := range ds {
		switch {
		case d.Temp:
		case d.Q != nil:
			out = append(out, ManagedDestination{DestinationStats: d.Q.Stats(), Kind: destinations.Queue,
				DLQ: d.Q.IsDLQ() || isDLQName(d.Q.Name())})
		default:
			out = append(out, ManagedDestination{DestinationStats: d.T.Stats(), Kind: destinations.Topic, Stream: d.T.IsStream()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func isDLQName(name string) bool {
	return name == policy.SharedDLQ || strings.HasPrefix(name, policy.SharedDLQ+".")
}

// DestinationStats returns a snapshot of every destination, temporary ones included,
// in no particular order.
func (m *Manager) DestinationStats() []DestinationStats {
	ds := m.c.Host.Destinations()
	out := make([]DestinationStats, 0, len(ds))
	for _, d := range ds {
		var st DestinationStats
		n := destinations.Name{Kind: destinations.Queue, Name: d.Name}
		if d.Q != nil {
			st = d.Q.Stats()
		} else {
			st, n.Kind = d.T.Stats(), destinations.Topic
		}
		st.Duplicates = m.c.Host.Duplicates(n)
		out = append(out, st)
	}
	return out
}

// queue returns the queue called name, or ErrNotFound; it never creates one.
func (m *Manager) queue(name string) (*destinations.QueueDest, error) {
	q, _ := m.c.Host.Find(destinations.Name{Kind: destinations.Queue, Name: name})
	if q == nil {
		return nil, errorf(ErrNotFound, "no queue named %s", name)
	}
	return q, nil
}

// BrowseQueue returns up to limit messages waiting on a queue, in dispatch order,
// after the one with id after ("" from the head), and the id to pass for the next page
// ("" at the end).
func (m *Manager) BrowseQueue(ctx context.Context, name, after string, limit int) ([]*persistence.Message, string, error) {
	q, err := m.queue(name)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultBrowsePageSize
	}
	msgs, next, err := q.BrowsePage(ctx, after, limit)
	if errors.Is(err, destinations.ErrNoCursor) {
		return nil, "", errorf(destinations.ErrNoCursor, "message %s is no longer waiting on %s: browse again from the head", after, q.ClientName())
	}
	return msgs, next, err
}

// QueueMessage returns a waiting message of a queue by id.
func (m *Manager) QueueMessage(ctx context.Context, name, id string) (*persistence.Message, error) {
	q, err := m.queue(name)
	if err != nil {
		return nil, err
	}
	msg, err := q.Find(ctx, id)
	if err != nil {
		return nil, err
	}
	if msg == nil {
		return nil, errorf(ErrNotFound, "no message %s waiting on %s", id, q.ClientName())
	}
	return msg, nil
}

// DeleteMessage removes a waiting message of a queue by id.
func (m *Manager) DeleteMessage(ctx context.Context, who, name, id string) error {
	q, err := m.queue(name)
	if err != nil {
		return err
	}
	n, err := m.removeWaiting(ctx, q, destinations.ClaimOptions{Max: 1, Match: func(msg *persistence.Message) bool { return msg.ID == id }})
	if err != nil {
		return err
	}
	if n == 0 {
		return errorf(ErrNotFound, "no message %s waiting on %s", id, q.ClientName())
	}
	m.Done(who, "delete-message", q.ClientName(), 1, slog.String("id", id))
	return nil
}

// PurgeQueue removes every message waiting on a queue, in one store batch: after a
// crash the queue holds all of them or none. Messages dispatched and not yet
// acknowledged stay with their consumers, as in ActiveMQ.
func (m *Manager) PurgeQueue(ctx context.Context, who, name string) (int, error) {
	q, err := m.queue(name)
	if err != nil {
		return 0, err
	}
	m.c.Log.Info("purge started", slog.String("dest", q.ClientName()), slog.String("by", who))
	n, err := m.removeWaiting(ctx, q, destinations.ClaimOptions{Below: q.NextSeq()})
	if err != nil {
		return 0, err
	}
	m.Done(who, "purge", q.ClientName(), n)
	return n, nil
}

// removeWaiting claims the waiting messages of q that o selects and deletes them in
// one store batch; it returns how many.
func (m *Manager) removeWaiting(ctx context.Context, q *destinations.QueueDest, o destinations.ClaimOptions) (int, error) {
	c, err := q.Claim(ctx, o)
	if err != nil {
		return 0, storeOrCtx(err)
	}
	batch := m.c.Store.Begin()
	c.Ack(batch)
	if batch.Len() == 0 {
		batch.Rollback()
		c.Finish(nil)
		return c.Len(), nil
	}
	// Once started the commit goes through, whatever the caller's context.
	err = batch.Commit(context.WithoutCancel(ctx), persistence.Sync)
	c.Finish(err)
	if err != nil {
		return 0, destinations.StoreError(err)
	}
	return c.Len(), nil
}

func storeOrCtx(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, destinations.ErrRemoved) {
		return errorf(ErrNotFound, "the queue was removed")
	}
	var be *destinations.Error
	if errors.As(err, &be) {
		return err
	}
	return destinations.StoreError(err)
}

// errStopScan ends a store scan early.
var errStopScan = errors.New("stop scan")

// RemoveDestination deletes a queue or a topic. A queue's messages are deleted from the
// store in one batch; one with consumers, and a topic with subscribers or durable
// subscriptions, is refused (destinations.ErrInUse), as ActiveMQ refuses to remove a
// destination with an active subscription. A destination of the same name used again
// later is a new one.
func (m *Manager) RemoveDestination(ctx context.Context, who string, d destinations.Name) error {
	if d.Kind != destinations.Queue && d.Kind != destinations.Topic {
		return errorf(destinations.ErrInvalidDestination, "only a queue or a topic can be removed: %s", d)
	}
	q, t, err := m.c.Host.Detach(d)
	if err != nil {
		return err
	}
	if t != nil {
		m.Done(who, "remove-destination", t.ClientName(), 0)
		return nil
	}
	// A queue of the same name made from now on stores its messages under the same
	// name with sequences from floor up: the old messages are acknowledged one by one
	// below floor, in one batch, rather than purged by name.
	floor := q.NextSeq()
	if err := q.Drain(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	batch := m.c.Store.Begin()
	n := 0
	err = m.c.Store.Scan(ctx, q.Qualified(), 0, 0, func(msg *persistence.Message) error {
		if msg.Seq >= floor {
			return errStopScan
		}
		batch.Ack(msg.Dest, msg.Seq)
		n++
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		batch.Rollback()
		return destinations.StoreError(err)
	}
	if again, _ := m.c.Host.Find(d); again == nil && q.MarkerWritten() {
		batch.Purge(q.MarkerDest())
	}
	if batch.Len() > 0 {
		if err := batch.Commit(context.WithoutCancel(ctx), persistence.Sync); err != nil {
			return destinations.StoreError(err)
		}
	} else {
		batch.Rollback()
	}
	m.Done(who, "remove-destination", q.ClientName(), n)
	return nil
}
