package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// deadLetterEntries takes entries that left q (already out of its pending list) to the
// dead-letter queue its policy names, or drops them (the discarding strategy, and
// non-persistent messages unless processNonPersistent), in one store batch with the
// deletion of the originals. The caller holds q.mu; the store work runs outside it.
func (b *Broker) deadLetterEntries(q *queue, es []*destinations.Entry, reason string) {
	b.retire(q, es, reason, true)
}

// expire retires expired entries: dead-lettered if the policy's processExpired says so,
// dropped otherwise. The caller holds q.mu.
func (b *Broker) expire(q *queue, es []*destinations.Entry) {
	b.log.Debug("messages expired", slog.String("dest", q.stomp), slog.Int("count", len(es)))
	b.retire(q, es, "expired", q.policy.DeadLetter.ProcessExpired)
}

func (b *Broker) retire(q *queue, es []*destinations.Entry, reason string, toDLQ bool) {
	var bytes int64
	for _, e := range es {
		bytes += e.Size
	}
	q.release(bytes)
	q.dequeued += int64(len(es))
	strategy := q.policy.DeadLetter
	dlq := q.deadLetterDest()
	msgs := make([]*persistence.Message, len(es))
	for i, e := range es {
		msgs[i] = e.Msg
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		batch := b.store.Begin()
		var copies []*persistence.Message
		for _, m := range msgs {
			if m.Persistent {
				q.storeAck(batch, m)
			}
			if !toDLQ || strategy.Discard || (!m.Persistent && !strategy.ProcessNonPersistent) {
				continue
			}
			copies = append(copies, b.deadLetter(m, q.stomp, reason))
		}
		if dlq == q.origin {
			copies = nil // a dead message of a dead-letter queue is dropped, never looped
		}
		entries := b.sendToDeadLetter(batch, dlq, copies)
		if batch.Len() == 0 {
			batch.Rollback()
			return
		}
		b.commit(batch, persistence.Sync, func(err error) {
			settleEntries(entries, err)
			if err != nil {
				b.log.Error("dead-lettering failed", slog.String("dest", q.stomp), slog.Any("err", err))
			}
		})
	}()
}

// deadLetter makes the dead-letter copy of m: same id and body, the original destination
// and the reason as headers, no expiry, persistent (a dead-letter copy is kept, also of
// a non-persistent message).
func (b *Broker) deadLetter(m *persistence.Message, from, reason string) *persistence.Message {
	c := m.Clone()
	c.Headers = append(c.Headers, "original-destination", from, "dlqDeliveryFailureCause", reason)
	c.Subs = nil
	c.Expires = 0
	c.RedeliveryCount = 0
	c.Persistent = true
	return c
}

// deadLetterDest is where q's dead messages go, by its dead-letter strategy: a queue's
// are the queue's, a durable subscription's view's are its topic's and the
// subscription's.
func (q *queue) deadLetterDest() destinations.Name {
	return deadLetterDest(q.policy.DeadLetter, q.origin, q.sub)
}

// deadLetterDest is where strategy s sends a dead message from dest; sub is the durable
// subscription that gave it up (nil for a queue's message). It follows ActiveMQ's
// IndividualDeadLetterStrategy.createDestination.
func deadLetterDest(s policy.DeadLetter, dest destinations.Name, sub *persistence.SubKey) destinations.Name {
	topic := dest.Kind.IsTopic()
	key := ""
	if sub != nil {
		key = sub.ClientID + ":" + sub.Name // ActiveMQ's SubscriptionKey.toString()
	}
	name := s.DurableDLQName(dest.Name, topic, key)
	if s.ToTopic(topic) {
		return destinations.Name{Kind: destinations.Topic, Name: name}
	}
	return destinations.Name{Kind: destinations.Queue, Name: name}
}

// sendToDeadLetter puts dead-letter copies on dlq, stored by batch, and returns the
// entries to settle once batch commits. A dead-letter topic hands them to its
// subscribers as a SEND to it does: its durable subscriptions keep them (stored by
// batch), the others get them at once.
func (b *Broker) sendToDeadLetter(batch persistence.Batch, dlq destinations.Name, copies []*persistence.Message) []queuedEntry {
	if len(copies) == 0 {
		return nil
	}
	var entries []queuedEntry
	if dlq.Kind.IsTopic() {
		t := b.topic(dlq.Name)
		for _, c := range copies {
			entries = append(entries, t.accept(c, func() persistence.Batch { return batch })...)
			t.publish(c, nil)
		}
		return entries
	}
	for _, c := range copies {
		dq, e, _ := b.acceptQueue(dlq.Name, c, false)
		entries = append(entries, queuedEntry{dq, e, c.Seq})
		batch.Add(c)
	}
	return entries
}

// sweepExpired removes expired messages from the waiting lists of the queues (and the
// durable subscriptions' views) whose policy's expireMessagesPeriod has passed since
// their last sweep, so they are not kept (in memory or in the store) until a consumer
// comes. A period of 0 means the destination is never swept: its expired messages are
// dropped only when they would be dispatched.
func (b *Broker) sweepExpired() {
	b.mu.RLock()
	qs := make([]*queue, 0, len(b.queues)+len(b.durables))
	for _, q := range b.queues {
		qs = append(qs, q)
	}
	for _, d := range b.durables {
		qs = append(qs, d.view)
	}
	b.mu.RUnlock()
	now := time.Now()
	nowMs := now.UnixMilli()
	for _, q := range qs {
		// lastSwept is the sweeper's own: no other goroutine touches it.
		if q.policy.ExpirePeriod <= 0 || now.Sub(q.lastSwept) < q.policy.ExpirePeriod {
			continue
		}
		q.lastSwept = now
		q.mu.Lock()
		var dead []*destinations.Entry
		q.pending.Each(func(e *destinations.Entry) bool {
			if e.Ready && e.Msg.Expires != 0 && e.Msg.Expires <= nowMs {
				dead = append(dead, e)
			}
			return true
		})
		for _, e := range dead {
			q.pending.Remove(e)
		}
		if len(dead) > 0 {
			b.expire(q, dead)
		}
		q.mu.Unlock()
	}
	b.expirySweeps.Add(1)
}

func (b *Broker) runExpirySweeper(ctx context.Context, every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.sweepExpired()
		}
	}
}
