package broker

import (
	"context"

	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// txState is an open transaction: its sends and acknowledgements take effect at COMMIT.
type txState struct {
	bytes   int64
	sends   []txSend
	settles []txSettle
}

type txSend struct {
	dests []destinations.Name // never a stream: Send refuses those in a transaction
	msg   *persistence.Message
}

type txSettle struct {
	sub     *Subscription
	ds      []*Delivery
	outcome destinations.Outcome
}

// Begin opens a transaction.
func (c *Conn) Begin(tx string) error {
	if tx == "" {
		return errorf(ErrUnknownTransaction, "BEGIN without a transaction id")
	}
	if c.txs[tx] != nil {
		return errorf(ErrDuplicateTransaction, "Transaction %s is already started", tx)
	}
	if err := c.quotas.begin(tx, len(c.txs)); err != nil {
		return err
	}
	c.txs[tx] = &txState{}
	return nil
}

// Commit applies a transaction's sends and acknowledgements as one store batch; done is
// called when that batch is durable. Its acknowledgements of stream messages follow
// once the batch is durable (a stream's group offsets are not in the store, so the two
// parts are not atomic together: a crash between them keeps the store part only, and
// those stream messages come again). SENDs to streams are refused in a transaction.
func (c *Conn) Commit(ctx context.Context, tx string, done func(error)) error {
	t := c.txs[tx]
	if t == nil {
		return errorf(ErrUnknownTransaction, "Invalid transaction id: %s", tx)
	}
	delete(c.txs, tx)
	return c.b.commitTx(ctx, c, t, done)
}

// commitTx applies t, a transaction of c (see Conn.Commit).
func (b *Broker) commitTx(ctx context.Context, c *Conn, t *txState, done func(error)) error {
	done = b.streamsAfterCommit(t, done)
	batch := b.store.Begin()
	var applies []func(error)
	var acked int64
	var settled []*Delivery
	for _, st := range t.settles {
		settled = append(settled, st.ds...)
		if !st.outcome.Rejected {
			acked += int64(len(st.ds))
		}
		if st.sub.stream != nil {
			continue // in streamsAfterCommit
		}
		if f := b.applySettle(batch, st.sub, st.ds, st.outcome); f != nil {
			applies = append(applies, f)
		}
	}
	var entries []destinations.Accepted
	var topicSends []topicSend
	var jobs []*scheduler.Job
	marks := &dedup.Marks{} // duplicate detection: the ids recorded, kept if the batch is written
	// fail undoes what the transaction did so far: what it queued is dropped, what it
	// acknowledged is given back, the keys of its scheduled messages are released.
	fail := func(err error) {
		batch.Rollback()
		marks.Settle(err)
		destinations.SettleAll(entries, err)
		for _, f := range applies {
			f(err)
		}
		for _, j := range jobs {
			b.sched.Written(j, err)
		}
	}
	for _, s := range t.sends {
		if b.scheduled(s.msg) {
			// Stored in this batch: once COMMIT is answered the job survives a crash.
			j, err := b.sched.Prepare(ctx, s.dests, s.msg, batch)
			if err != nil {
				fail(err)
				return err
			}
			jobs = append(jobs, j)
			continue
		}
		expires := s.msg.Expires
		for i, d := range s.dests {
			msg := s.msg
			if i > 0 {
				msg = msg.Clone()
				msg.Expires = expires
			}
			// Checked at COMMIT: a duplicate in a committed transaction is dropped.
			if dup, _ := b.dedup.Check(d, msg, &batch, c.ID, marks); dup {
				continue
			}
			if d.Kind.IsTopic() {
				t := b.dests.TopicFor(d)
				if t == nil {
					continue // a temporary topic deleted meanwhile: nobody hears it
				}
				destinations.ExpireAfter(msg, t.TTL())
				acc, store := t.Accept(msg)
				if store {
					batch.Add(msg)
				}
				entries = append(entries, acc...)
				topicSends = append(topicSends, topicSend{t, msg})
				continue
			}
			q, e, err := b.dests.AcceptQueue(d, msg, false)
			if err != nil {
				fail(err) // the whole transaction fails
				return b.refusedBy(c, q, err)
			}
			entries = append(entries, destinations.Accepted{Q: q, E: e, Seq: msg.Seq})
			if msg.Persistent {
				batch.Add(msg)
			}
		}
	}
	b.counters.Acked[c.proto].Add(acked)
	done = afterMarked(settled, marks.Answer(done))
	b.finish(batch, persistence.Sync, func(err error) {
		destinations.SettleAll(entries, err)
		marks.Settle(err)
		for _, f := range applies {
			f(err)
		}
		for _, j := range jobs {
			b.sched.Written(j, err)
		}
		if err == nil {
			for _, ts := range topicSends {
				ts.t.Publish(ts.msg, c)
			}
		}
	}, done)
	return nil
}

type topicSend struct {
	t   *destinations.TopicDest
	msg *persistence.Message
}

// Abort discards a transaction's sends. Its acknowledged messages become unacknowledged
// again and stay with this client (ActiveMQ's behaviour: the client may ACK them again);
// those whose subscription has gone in the meantime go back to their queue.
func (c *Conn) Abort(tx string) error {
	t := c.txs[tx]
	if t == nil {
		return errorf(ErrUnknownTransaction, "Invalid transaction id: %s", tx)
	}
	delete(c.txs, tx)
	for _, st := range t.settles {
		s := st.sub
		if c.subs[s.ID] == s {
			s.unsettle(st.ds)
			s.reopen(-len(st.ds))
			continue
		}
		requeueEach(st.ds)
	}
	return nil
}
