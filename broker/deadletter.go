package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/destinations"
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
	from := destinations.Name{Kind: destinations.Queue, Name: q.name}
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
		dlqName := strategy.DLQName(from.Kind.IsTopic(), from.Name)
		if dlqName == q.name {
			copies = nil // a dead message of a dead-letter queue is dropped, never looped
		}
		var entries []queuedEntry
		if len(copies) > 0 {
			for _, c := range copies {
				c.Persistent = true // a dead-letter copy is kept, also of a non-persistent message
				dq, e, _ := b.acceptQueue(dlqName, c, false)
				entries = append(entries, queuedEntry{dq, e, c.Seq})
				batch.Add(c)
			}
		}
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
// and the reason as headers, no expiry.
func (b *Broker) deadLetter(m *persistence.Message, from, reason string) *persistence.Message {
	c := m.Clone()
	c.Headers = append(c.Headers, "original-destination", from, "dlqDeliveryFailureCause", reason)
	c.Subs = nil
	c.Expires = 0
	c.RedeliveryCount = 0
	return c
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
