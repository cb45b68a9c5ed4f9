package broker

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// AckRef names the message an ACK or NACK is about, in whichever way the client's
// protocol version does: a delivery tag (STOMP 1.2 ack id), or a message id with an
// optional subscription id (1.1, 1.0).
type AckRef struct {
	Tag       uint64
	HasTag    bool
	MessageID string
	SubID     string
}

func (r AckRef) String() string {
	if r.HasTag {
		return strconv.FormatUint(r.Tag, 10)
	}
	return r.MessageID
}

// SettleKind is a form in which a client settles a delivery: the forms JMS
// acknowledges in. A session's recover is Session.Recover, a transaction's rollback
// Conn.Abort.
type SettleKind uint8

const (
	// SettleStandard acknowledges as the subscription's mode says: in client mode the
	// delivery and every earlier one of its subscription (STOMP's ACK), else the one.
	SettleStandard SettleKind = iota
	// SettleIndividual acknowledges the delivery only, whatever the mode (OpenWire's
	// individual ack).
	SettleIndividual
	// SettleCumulative acknowledges the delivery and every earlier unsettled one of its
	// subscription, whatever the mode (OpenWire's standard ack of a range).
	SettleCumulative
	// SettlePoison rejects the delivery: the destination's NACK policy (the dead-letter
	// queue by default, with Cause as its dlqDeliveryFailureCause). STOMP's NACK,
	// OpenWire's poison ack.
	SettlePoison
	// SettleExpired: the client found the message expired and did not consume it; it
	// is dead-lettered if the dead-letter strategy's processExpired says so (the
	// default for persistent messages), else dropped. OpenWire's expired ack.
	SettleExpired
)

// SettleRequest settles what Ref names, in the form Kind, inside transaction Tx if it
// is not empty.
type SettleRequest struct {
	Ref   AckRef
	Kind  SettleKind
	Tx    string
	Cause string // SettlePoison: why the client rejected it ("" for ActiveMQ's default)
	// Unanswered says that nobody waits for the outcome (a STOMP ACK or NACK without a
	// receipt, an OpenWire MessageAck without ResponseRequired): the store write rides
	// the store's next sync instead of forcing one of its own, as ActiveMQ's
	// acknowledgements do, so a crash may undo it and redeliver the message (flagged
	// redelivered). The zero value, an answered settle, is durable before done.
	Unanswered bool
}

// durability is how far the store write of r must go before done.
func (r SettleRequest) durability() persistence.Durability {
	if r.Unanswered {
		return persistence.Async
	}
	return persistence.Sync
}

// outcome is what the request does to the messages it settles.
func (r SettleRequest) outcome() destinations.Outcome {
	switch r.Kind {
	case SettlePoison:
		return destinations.Outcome{Rejected: true, Cause: r.Cause}
	case SettleExpired:
		return destinations.Outcome{Rejected: true, Expired: true}
	}
	return destinations.Outcome{}
}

// find returns the deliveries a settle request covers.
func (c *Conn) find(r SettleRequest) (*Subscription, []*Delivery, error) {
	var d *Delivery
	ref := r.Ref
	switch {
	case ref.HasTag:
		d = c.byTag[ref.Tag]
	case ref.SubID != "":
		s := c.subs[ref.SubID]
		if s == nil {
			return nil, nil, errorf(ErrUnknownSubscription, "No subscription matched: %s", ref.SubID)
		}
		d = c.byMessageID(ref.MessageID, s)
	default:
		// STOMP 1.0 names no subscription: any of the connection's will do, as in
		// ActiveMQ; the delivery written first is taken.
		d = c.byMessageID(ref.MessageID, nil)
	}
	if d == nil || d.Settled {
		return nil, nil, errorf(ErrUnknownAck, "Unexpected ACK received for message-id [%s]", ref)
	}
	s := subOf(d)
	cumulative := r.Kind == SettleCumulative || r.Kind == SettleStandard && s.Mode == AckClient
	if !cumulative {
		return s, []*Delivery{d}, nil
	}
	var ds []*Delivery
	for _, x := range s.dispatched {
		c.ackLooked++
		if x.Tag > d.Tag {
			break
		}
		if !x.Settled {
			ds = append(ds, x)
		}
	}
	return s, ds, nil
}

// Ack acknowledges a message (and, for a client-mode subscription, every earlier one it
// was sent): Settle with SettleStandard.
func (c *Conn) Ack(ctx context.Context, r AckRef, tx string, done func(error)) error {
	return c.Settle(ctx, SettleRequest{Ref: r, Kind: SettleStandard, Tx: tx}, done)
}

// Nack rejects one message; what follows is the destination's NACK policy. The default
// is ActiveMQ's poison acknowledgement: a persistent message moves to the dead-letter
// queue (ActiveMQ.DLQ), a non-persistent one is dropped (processNonPersistent=false).
func (c *Conn) Nack(ctx context.Context, r AckRef, tx string, done func(error)) error {
	return c.Settle(ctx, SettleRequest{Ref: r, Kind: SettlePoison, Tx: tx}, done)
}

// Settle settles the deliveries r names in the form r.Kind. Outside a transaction done
// is called once that is durable (r.Unanswered: once it is committed, to be synced with
// the store's next sync): a client that waited for it never sees an acknowledged
// message again.
func (c *Conn) Settle(ctx context.Context, r SettleRequest, done func(error)) error {
	var t *txState
	if r.Tx != "" {
		if t = c.txs[r.Tx]; t == nil {
			return errorf(ErrUnknownTransaction, "Invalid transaction id: %s", r.Tx)
		}
	}
	s, ds, err := c.find(r)
	if err != nil {
		return err
	}
	shared := destinations.Claimed(ds)
	if shared && t != nil {
		return errorf(ErrInvalidDestination, "shared queues do not take part in transactions yet: acknowledge %s outside transaction %s", ds[0].Queue.ClientName(), r.Tx)
	}
	o := r.outcome()
	s.settle(ds)
	// The window opens at once, also inside a transaction (ActiveMQ's delivered ack), so a
	// transacted consumer with a small prefetch keeps receiving.
	s.reopen(len(ds))
	if t != nil {
		t.settles = append(t.settles, txSettle{sub: s, ds: ds, outcome: o})
		s.kick()
		done(nil)
		return nil
	}
	if !o.Rejected {
		c.meter.Acked[c.proto].Add(int64(len(ds)))
	}
	if s.stream != nil {
		s.kick()
		s.stream.Ack(ds, done)
		return nil
	}
	if shared {
		s.kick()
		c.b.settleShared(ds, !o.Rejected, done)
		return nil
	}
	c.b.settle(s, ds, o, r.durability(), done)
	return nil
}

// settle acknowledges (or rejects) ds, deliveries of s, in one store batch (see
// applySettle) committed with d, resumes dispatch to s, and calls done once the batch
// is committed and the dispatch marks cover what s was given (afterMarked).
func (b *Broker) settle(s *Subscription, ds []*Delivery, o destinations.Outcome, d persistence.Durability, done func(error)) {
	batch := b.store.Begin()
	onDone := b.applySettle(batch, s, ds, o)
	s.kick()
	b.finish(batch, d, onDone, afterMarked(ds, done))
}

// afterMarked returns done delayed, once called, until the dispatch marks of the queues
// ds came from cover every message dispatched from them up to now (see
// destinations.QueueDest.WhenMarked): a client that got the answer to an acknowledgement
// gets the messages it was given before it flagged redelivered should the broker crash.
func afterMarked(ds []*Delivery, done func(error)) func(error) {
	var qs []*destinations.QueueDest
	for _, d := range ds {
		if d.Queue != nil && !slices.Contains(qs, d.Queue) {
			qs = append(qs, d.Queue)
		}
	}
	if len(qs) == 0 {
		return done
	}
	var (
		pending atomic.Int32
		result  error
	)
	pending.Store(int32(len(qs) + 1))
	release := func() {
		if pending.Add(-1) == 0 {
			done(result)
		}
	}
	for _, q := range qs {
		q.WhenMarked(release)
	}
	return func(err error) {
		result = err
		release()
	}
}

// applySettle adds the store writes that acknowledge (or reject) ds to batch and returns
// what to do in memory once the batch is durable. A rejected (NACKed) message follows the
// destination's NACK policy: dead-letter queue (ActiveMQ), redelivery, or discard.
func (b *Broker) applySettle(batch persistence.Batch, s *Subscription, ds []*Delivery, o destinations.Outcome) func(error) {
	switch {
	case s.q != nil:
		return s.q.Settle(batch, ds, o)
	case s.isWildcardQueue():
		// Deliveries from several queues: each queue settles its own.
		var dones []func(error)
		for q, qds := range byQueue(ds) {
			if done := q.Settle(batch, qds, o); done != nil {
				dones = append(dones, done)
			}
		}
		return func(err error) {
			for _, done := range dones {
				done(err)
			}
		}
	case s.t != nil:
		s.t.Dequeued(int64(len(ds)))
	}
	return nil
}

// finish commits batch (if it has anything), then runs apply and done with the result.
func (b *Broker) finish(batch persistence.Batch, d persistence.Durability, apply func(error), done func(error)) {
	if batch.Len() == 0 {
		batch.Rollback()
		if apply != nil {
			apply(nil)
		}
		done(nil)
		return
	}
	b.commit(batch, d, func(err error) {
		if apply != nil {
			apply(err)
		}
		if err != nil {
			err = storeError(err)
		}
		done(err)
	})
}

// writeAutoAcks writes the store acknowledgements of auto-acknowledged messages, which
// were consumed when they were written to their client; a write that fails is tried
// again (package broker/ackretry).
func (b *Broker) writeAutoAcks(acks []destinations.StoreAck) {
	batch := b.store.Begin()
	for _, a := range acks {
		a.AddTo(batch)
	}
	b.commit(batch, persistence.Async, func(err error) {
		if err != nil {
			b.acks.Add(acks, err)
		}
	})
}
