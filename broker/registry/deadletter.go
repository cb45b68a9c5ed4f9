package registry

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// DeadLetter puts dead-letter copies on dlq, stored by batch, and returns the
// entries to settle once batch commits (destinations.Env.DeadLetter). A dead-letter
// topic hands them to its subscribers as a SEND to it does: its durable subscriptions
// keep them (stored by batch), the others get them at once.
func (r *Destinations) DeadLetter(batch persistence.Batch, dlq destinations.Name, copies []*persistence.Message) []destinations.Accepted {
	var entries []destinations.Accepted
	if dlq.Kind.IsTopic() {
		t := r.Topic(dlq.Name)
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
		dq, e, _ := r.AcceptQueue(dlq, c, false)
		dq.MarkDLQ()
		entries = append(entries, destinations.Accepted{Q: dq, E: e, Seq: c.Seq})
		batch.Add(c)
	}
	return entries
}

// AcceptQueue queues m on the queue d (resolved: Kind Queue or TempQueue) names (see
// destinations.QueueDest.Accept), looking the name up again if the collector removed
// the queue meanwhile; a temporary queue that is gone refuses it (nil queue).
func (r *Destinations) AcceptQueue(d destinations.Name, m *persistence.Message, ready bool) (*destinations.QueueDest, *destinations.Entry, error) {
	if d.Kind == destinations.TempQueue {
		q := r.TempQueue(d)
		if q == nil {
			return nil, nil, tempGone(d)
		}
		e, err := q.Accept(m, ready)
		return q, e, err
	}
	for {
		q := r.Queue(d.Name)
		e, err := q.Accept(m, ready)
		if err != destinations.ErrRemoved {
			return q, e, err
		}
	}
}
