package broker

import (
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// dropExpired removes from ds, in place, the plain topic messages that expired before
// they could be written to their subscriber (they wait in its overflow while it has no
// credit), as ActiveMQ does not deliver an expired message; the credit each took goes
// back to its subscription. Queue messages are checked when they are dispatched, and
// stream messages do not expire.
func dropExpired(ds []*Delivery) []*Delivery {
	var now int64
	kept := ds[:0]
	var credited []*Subscription
	for _, d := range ds {
		if d.Msg.Expires != 0 && d.Queue == nil && !d.Stream {
			if now == 0 {
				now = time.Now().UnixMilli()
			}
			if d.Msg.Expires <= now {
				s := subOf(d)
				s.conn.b.adviseExpired(d.Msg)
				s.Credit.Add(1)
				if len(credited) == 0 || credited[len(credited)-1] != s {
					credited = append(credited, s)
				}
				continue
			}
		}
		kept = append(kept, d)
	}
	clear(ds[len(kept):])
	for _, s := range credited {
		s.kick()
	}
	return kept
}

// sweepExpired removes expired messages from the waiting lists of the queues (and the
// durable subscriptions' views) whose policy's expireMessagesPeriod has passed since
// their last sweep (destinations.QueueDest.SweepExpired).
func (b *Broker) sweepExpired() {
	qs := b.dests.Queues()
	for _, d := range b.durables.All() {
		qs = append(qs, d.View())
	}
	now := time.Now()
	for _, q := range qs {
		q.SweepExpired(now)
	}
	b.expirySweeps.Add(1)
}

// sendToDeadLetter puts dead-letter copies on dlq, stored by batch, and returns the
// entries to settle once batch commits (destinations.Env.DeadLetter). A dead-letter
// topic hands them to its subscribers as a SEND to it does: its durable subscriptions
// keep them (stored by batch), the others get them at once.
func (b *Broker) sendToDeadLetter(batch persistence.Batch, dlq destinations.Name, copies []*persistence.Message) []destinations.Accepted {
	var entries []destinations.Accepted
	if dlq.Kind.IsTopic() {
		t := b.dests.Topic(dlq.Name)
		for _, c := range copies {
			acc, store := t.Accept(c)
			if store {
				batch.Add(c)
			}
			entries = append(entries, acc...)
			t.Publish(c, nil)
		}
		return entries
	}
	for _, c := range copies {
		dq, e, _ := b.acceptQueue(dlq.Name, c, false)
		dq.MarkDLQ()
		entries = append(entries, destinations.Accepted{Q: dq, E: e, Seq: c.Seq})
		batch.Add(c)
	}
	return entries
}

// acceptQueue queues m on the queue called name (see destinations.QueueDest.Accept),
// looking the name up again if the collector removed the queue meanwhile.
func (b *Broker) acceptQueue(name string, m *persistence.Message, ready bool) (*destinations.QueueDest, *destinations.Entry, error) {
	for {
		q := b.dests.Queue(name)
		e, err := q.Accept(m, ready)
		if err != destinations.ErrRemoved {
			return q, e, err
		}
	}
}
