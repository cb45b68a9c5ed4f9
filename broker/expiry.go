package broker

import (
	"time"
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
	qs := append(b.dests.Queues(), b.dests.TempQueues()...)
	for _, d := range b.durables.All() {
		qs = append(qs, d.View())
	}
	now := time.Now()
	for _, q := range qs {
		q.SweepExpired(now)
	}
	b.expirySweeps.Add(1)
}
