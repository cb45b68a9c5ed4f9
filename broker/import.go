package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// ImportResult is what ImportDurable did.
type ImportResult struct {
	Imported, Duplicates int
}

// ImportDurable puts msgs in the backlog of one durable subscription, and of no other
// subscriber of its topic: what a migration moves out of another broker's durable
// subscription (broker migrate --durable, through the admin API). The messages are
// stored in one batch, as the topic's single stored copies with only this subscription
// owing an acknowledgement, and are delivered to it in order after what it already
// holds. Each gets a new message id; their timestamps, priorities, expiry and headers
// are kept. Duplicate detection applies per subscription: a message whose
// duplicate-detection id (the source's message-id, for migrate) the subscription
// already took is counted and dropped, so a migration run again after an interruption
// imports each message once. It returns once the batch is durable.
func (b *Broker) ImportDurable(ctx context.Context, who string, key persistence.SubKey, msgs []*persistence.Message) (ImportResult, error) {
	var res ImportResult
	if b.shared != nil {
		return res, errorf(ErrInvalidDestination, "importing into a durable subscription is not supported in shared mode (jdbc mode: shared) yet: %s of client %s", key.Name, key.ClientID)
	}
	d := b.durables.Get(key)
	if d == nil {
		return res, errorf(ErrNotFound, "no durable subscription %s of client %s", key.Name, key.ClientID)
	}
	t := b.dests.Topic(d.Topic())
	dc := b.dedup.ForSub(key, d.Topic())
	batch := b.store.Begin()
	marks := &dedup.Marks{}
	var entries []destinations.Accepted
	now := time.Now().UnixMilli()
	for _, m := range msgs {
		if dc != nil {
			if id := dedup.ID(m); id != "" {
				if dup, _ := b.dedup.CheckIn(dc, id, "durable "+key.String(), m, &batch, "", marks); dup {
					res.Duplicates++
					continue
				}
			}
		}
		m.ID = b.newMessageID()
		if m.Timestamp == 0 {
			m.Timestamp = now
		}
		acc, store, found := t.AcceptFor(m, key)
		if !found {
			// Deleted meanwhile: nothing of the batch is applied.
			batch.Rollback()
			marks.Settle(ErrNotFound)
			destinations.SettleAll(entries, ErrNotFound)
			return ImportResult{}, errorf(ErrNotFound, "durable subscription %s of client %s was removed", key.Name, key.ClientID)
		}
		if store {
			batch.Add(m)
		}
		entries = append(entries, acc...)
		res.Imported++
	}
	done := make(chan error, 1)
	b.finish(batch, persistence.Sync, func(err error) {
		destinations.SettleAll(entries, err)
		marks.Settle(err)
	}, marks.Answer(func(err error) { done <- err }))
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// The batch is committed or not whatever the caller does now; its duplicate
		// ids make a retry safe.
		return ImportResult{}, ctx.Err()
	}
	if err != nil {
		b.mgmt.Failed(who, "import-durable", key.String(), len(msgs), err)
		return ImportResult{}, err
	}
	b.mgmt.Done(who, "import-durable", key.String(), res.Imported, slog.Int("duplicates", res.Duplicates))
	return res, nil
}
