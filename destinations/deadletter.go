package destinations

import (
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// expire retires expired entries: dead-lettered if the policy's processExpired says so,
// dropped otherwise. The caller holds q.mu.
func (q *QueueDest) expire(es []*Entry) {
	if q.shared != nil {
		if es = q.expireClaimedLocked(es); len(es) == 0 {
			return
		}
	}
	q.env.Log.Debug("messages expired", slog.String("dest", q.client), slog.Int("count", len(es)))
	q.expired += int64(len(es))
	q.env.Counters.expired(len(es))
	q.retire(es, expiredCause, q.policy.DeadLetter.ProcessExpired, DeadLetterExpired)
}

// expiredCause stands for the dlqDeliveryFailureCause of a message that expired
// (deadLetter writes it as ActiveMQ does, with the expiry time).
const expiredCause = "expired"

// retire takes entries that left q (already out of its pending list) to the
// dead-letter queue its policy names (toDLQ), or drops them (the discarding strategy,
// and non-persistent messages unless processNonPersistent), in one store batch with the
// deletion of the originals. why counts them (Env.Counters). The caller holds q.mu; the
// store work runs outside it.
func (q *QueueDest) retire(es []*Entry, reason string, toDLQ bool, why DeadLetterReason) {
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
	env := q.env
	env.Background.Add(1)
	go func() {
		defer env.Background.Done()
		batch := env.Store.Begin()
		var dead, copies []*persistence.Message
		dropped := 0
		for _, m := range msgs {
			if m.Persistent {
				q.StoreAck(batch, m)
			}
			if !toDLQ {
				continue
			}
			if strategy.Discard || (!m.Persistent && !strategy.ProcessNonPersistent) || dlq == q.origin {
				// A dead message of a dead-letter queue is dropped, never looped.
				dropped++
				continue
			}
			dead = append(dead, m)
			copies = append(copies, deadLetter(m, q.client, reason))
		}
		env.Counters.deadLettered(why, len(copies))
		env.Counters.discarded(DiscardDeadLetterStrategy, dropped)
		entries := q.sendToDeadLetter(batch, dlq, dead, copies)
		if reason == expiredCause && env.Advise != nil {
			// After the dead-letter copies were made, as ActiveMQ announces them.
			for _, m := range msgs {
				env.Advise.Expired(q.origin, m)
			}
		}
		if batch.Len() == 0 {
			batch.Rollback()
			return
		}
		// Nobody waits for it: should a crash undo it, the originals are still stored (and
		// retired again), so it rides the store's next sync rather than forcing one.
		env.Commit(batch, persistence.Async, func(err error) {
			SettleAll(entries, err)
			if err != nil {
				env.Log.Error("dead-lettering failed", slog.String("dest", q.client), slog.Any("err", err))
			}
		})
	}()
}

// sendToDeadLetter puts copies, the dead-letter copies of dead, on dlq (see
// Env.DeadLetter), and tells the advisor.
func (q *QueueDest) sendToDeadLetter(batch persistence.Batch, dlq Name, dead, copies []*persistence.Message) []Accepted {
	if len(copies) == 0 {
		return nil
	}
	entries := q.env.DeadLetter(batch, dlq, copies)
	if q.env.Advise != nil {
		for _, m := range dead {
			q.env.Advise.DeadLettered(q.origin, m)
		}
	}
	return entries
}

// The headers of a dead-letter copy: where the message was sent and why it died. They
// are the broker's own: a client's copies are taken off what it sends (broker's
// Conn.Send), and a dead-letter copy replaces any the message still carries, so that a
// retry (broker/management's move to the original destination) goes where the message
// really came from.
const (
	OriginalDestinationProperty = "original-destination"
	DeadLetterCauseProperty     = "dlqDeliveryFailureCause"
)

// DeadLetterProperties lists the headers only the broker sets.
var DeadLetterProperties = []string{OriginalDestinationProperty, DeadLetterCauseProperty}

// deadLetter makes the dead-letter copy of m: same id and body, the original destination
// and the reason as headers (replacing any m had), no expiry, persistent (a dead-letter
// copy is kept, also of a non-persistent message).
func deadLetter(m *persistence.Message, from, reason string) *persistence.Message {
	if reason == expiredCause {
		// ActiveMQ's words, which its clients show.
		reason = "java.lang.Throwable: Message Expired. Expiration:" + strconv.FormatInt(m.Expires, 10)
	}
	c := m.Clone()
	hs := c.Headers.Without(DeadLetterProperties...)
	c.Headers = append(hs[:len(hs):len(hs)], OriginalDestinationProperty, from, DeadLetterCauseProperty, reason)
	c.Subs = nil
	c.Expires = 0
	c.RedeliveryCount = 0
	c.Persistent = true
	return c
}

// deadLetterDest is where q's dead messages go, by its dead-letter strategy: a queue's
// are the queue's, a durable subscription's view's are its topic's and the
// subscription's.
func (q *QueueDest) deadLetterDest() Name {
	return DeadLetterDest(q.policy.DeadLetter, q.origin, q.sub)
}

// DeadLetterDest is where strategy s sends a dead message from dest; sub is the durable
// subscription that gave it up (nil for a queue's message). It follows ActiveMQ's
// IndividualDeadLetterStrategy.createDestination.
func DeadLetterDest(s policy.DeadLetter, dest Name, sub *persistence.SubKey) Name {
	topic := dest.Kind.IsTopic()
	key := ""
	if sub != nil {
		key = sub.ClientID + ":" + sub.Name // ActiveMQ's SubscriptionKey.toString()
	}
	name := s.DurableDLQName(dest.Name, topic, key)
	if s.ToTopic(topic) {
		return Name{Kind: Topic, Name: name}
	}
	return Name{Kind: Queue, Name: name}
}

// Outcome is how a consumer settled deliveries: consumed (the zero value), or rejected
// (see QueueDest.Settle).
type Outcome struct {
	// Rejected: not consumed. A poison acknowledgement (STOMP's NACK) follows the
	// queue's NACK policy.
	Rejected bool
	// Expired: rejected because the client found the messages expired; they are
	// dead-lettered if the strategy's processExpired says so, else dropped, whatever
	// the NACK policy.
	Expired bool
	// Cause is a rejected message's dlqDeliveryFailureCause ("" for a poison ack's).
	Cause string
}

// poisonCause is the dlqDeliveryFailureCause of a message a client rejected without
// saying why.
const poisonCause = "poison ack (NACK)"

// Settle adds the store writes that settle ds, deliveries of q, as o says to batch and
// returns what to do in memory once the batch is durable. A rejected (NACKed) message
// follows the queue's NACK policy: dead-letter queue (ActiveMQ), redelivery, or discard.
func (q *QueueDest) Settle(batch persistence.Batch, ds []*Delivery, o Outcome) func(error) {
	if o.Expired {
		q.mu.Lock()
		q.expired += int64(len(ds))
		q.mu.Unlock()
		q.env.Counters.expired(len(ds))
		return q.reject(batch, ds, expiredCause, q.policy.DeadLetter.ProcessExpired, DeadLetterExpired)
	}
	if o.Rejected {
		switch q.policy.NackPolicy {
		case policy.NackRedeliver:
			return func(error) { q.Requeue(slices.Clone(ds), true) }
		case policy.NackDiscard: // acknowledged like an ACK
			q.env.Counters.discarded(DiscardNack, len(ds))
		default: // policy.NackDLQ, or unset
			cause := o.Cause
			if cause == "" {
				cause = poisonCause
			}
			return q.reject(batch, ds, cause, true, DeadLetterNack)
		}
	}
	for _, d := range ds {
		if d.Msg.Persistent && !d.Withdrawn() {
			q.StoreAck(batch, d.Msg)
		}
	}
	return q.settled(ds, nil)
}

// settled is what Settle does once the batch is durable: the acknowledged messages
// leave memory; should the batch fail, the store still holds them, and they are given
// back rather than lost track of.
func (q *QueueDest) settled(ds []*Delivery, entries []Accepted) func(error) {
	return func(err error) {
		SettleAll(entries, err)
		if err != nil {
			q.Requeue(slices.Clone(ds), false)
			return
		}
		var bytes int64
		for _, d := range ds {
			bytes += d.entry.Size
		}
		q.Acked(len(ds), bytes)
	}
}

// reject moves rejected messages to the dead-letter queue (toDLQ) in the same store
// batch as their acknowledgement, so once the client's answer is out the move survives
// a crash; cause is the copies' dlqDeliveryFailureCause and why counts them. Messages
// the dead-letter strategy drops (non-persistent, discarding), and all of them when not
// toDLQ, are just acknowledged.
func (q *QueueDest) reject(batch persistence.Batch, ds []*Delivery, cause string, toDLQ bool, why DeadLetterReason) func(error) {
	strategy := q.policy.DeadLetter
	dlq := q.deadLetterDest()
	var dead, copies []*persistence.Message
	for _, d := range ds {
		if d.Msg.Persistent && !d.Withdrawn() {
			q.StoreAck(batch, d.Msg)
		}
		if !toDLQ || strategy.Discard || (!d.Msg.Persistent && !strategy.ProcessNonPersistent) || dlq == q.origin {
			continue
		}
		dead = append(dead, d.Msg)
		copies = append(copies, deadLetter(d.Msg, q.client, cause))
	}
	q.env.Counters.deadLettered(why, len(copies))
	q.env.Counters.discarded(DiscardDeadLetterStrategy, len(ds)-len(copies))
	entries := q.sendToDeadLetter(batch, dlq, dead, copies)
	if why == DeadLetterExpired && q.env.Advise != nil {
		for _, d := range ds {
			q.env.Advise.Expired(q.origin, d.Msg)
		}
	}
	return q.settled(ds, entries)
}

// SweepExpired removes expired messages from the queue's waiting list if its policy's
// expireMessagesPeriod has passed since its last sweep, so they are not kept (in memory
// or in the store) until a consumer comes. A period of 0 means the queue is never
// swept: its expired messages are dropped only when they would be dispatched. Only the
// broker's expiry sweeper calls it.
func (q *QueueDest) SweepExpired(now time.Time) {
	// lastSwept is the sweeper's own: no other goroutine touches it.
	if q.policy.ExpireMessagesPeriod <= 0 || now.Sub(q.lastSwept) < q.policy.ExpireMessagesPeriod {
		return
	}
	q.lastSwept = now
	nowMs := now.UnixMilli()
	q.mu.Lock()
	var dead []*Entry
	q.pending.Each(func(e *Entry) bool {
		if e.Ready && e.Msg.Expires != 0 && e.Msg.Expires <= nowMs {
			dead = append(dead, e)
		}
		return true
	})
	for _, e := range dead {
		q.pending.Remove(e)
	}
	if len(dead) > 0 {
		q.expire(dead)
	}
	q.mu.Unlock()
}

// ExpireAfter gives m, if it was sent without an expiry, one ttl from now: a policy's
// defaultTimeToLive (0: none).
func ExpireAfter(m *persistence.Message, ttl time.Duration) {
	if m.Expires == 0 && ttl > 0 {
		m.Expires = time.Now().Add(ttl).UnixMilli()
	}
}
