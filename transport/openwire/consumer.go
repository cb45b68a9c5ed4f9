package openwire

import (
	"context"
	"strconv"
	"time"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// Consumers: registration, dispatch, acknowledgement and pulls.

// onConsumer registers a consumer: a subscription of its session for each destination
// it names (a queue browser is answered at once instead).
func (c *conn) onConsumer(ctx context.Context, info *ow.ConsumerInfo) error {
	if info.ConsumerID == nil {
		return errNoID("ConsumerInfo", "consumer")
	}
	dests, err := toDestinations(info.Destination)
	if err != nil {
		return &broker.Error{Message: err.Error(), Err: broker.ErrInvalidDestination}
	}
	id := info.ConsumerID.String()
	if c.consumers[*info.ConsumerID] != nil {
		return &broker.Error{Message: "consumer " + id + " already exists", Err: broker.ErrDuplicateSubscription}
	}
	sid := ow.SessionID{ConnectionID: info.ConsumerID.ConnectionID, Value: info.ConsumerID.SessionID}.String()
	cons := &consumer{id: info.ConsumerID, session: sid, pull: info.PrefetchSize == 0, browser: info.Browser}
	if info.Browser {
		// A browse the broker refuses (authorization, a temporary destination's name)
		// is the consumer's error, before anything is dispatched.
		msgs := make([][]*broker.Message, len(dests))
		for i, d := range dests {
			var err error
			if msgs[i], err = c.bc.Browse(ctx, d, info.Selector, 0); err != nil {
				return err
			}
		}
		c.respond(info, nil)
		c.browse(cons, dests, msgs)
		return errAnswered
	}
	sess := c.session(sid)
	for i, d := range dests {
		req := broker.SubscribeRequest{
			ID: id, Dest: d, Mode: broker.AckClientIndividual, Prefetch: int(info.PrefetchSize), Pull: cons.pull,
			Selector: info.Selector, NoLocal: info.NoLocal, Exclusive: info.Exclusive, Priority: int(info.Priority),
		}
		if i > 0 {
			req.ID = id + "#" + strconv.Itoa(i)
		}
		if info.SubscriptionName != "" {
			req.DurableName, req.DurableStyle = info.SubscriptionName, broker.DurableActiveMQ
		}
		sub, err := sess.Subscribe(ctx, req)
		if err != nil {
			for _, s := range cons.subs {
				delete(c.bySub, s.ID)
				_ = c.bc.Unsubscribe(ctx, broker.UnsubscribeRequest{ID: s.ID})
			}
			return err
		}
		cons.subs = append(cons.subs, sub)
		c.bySub[req.ID] = cons
	}
	c.consumers[*info.ConsumerID] = cons
	return nil
}

// browse dispatches msgs, what the queues dests wait with, then the empty dispatch
// that ends a browse; nothing is consumed.
func (c *conn) browse(cons *consumer, dests []broker.Destination, msgs [][]*broker.Message) {
	for i, d := range dests {
		for _, m := range msgs[i] {
			wm, err := c.fromMessage(m, d.String())
			if err != nil {
				continue
			}
			wm.RedeliveryCounter = int32(m.RedeliveryCount)
			_ = c.write(&ow.MessageDispatch{ConsumerID: cons.id, Destination: wm.Destination, Message: wm, RedeliveryCounter: wm.RedeliveryCounter})
		}
	}
	_ = c.write(&ow.MessageDispatch{ConsumerID: cons.id, Destination: fromDestination(dests[0])})
}

// dispatch writes one delivery to its consumer.
func (c *conn) dispatch(d *broker.Delivery) error {
	cons := c.bySub[d.Sub.ID]
	if cons == nil {
		return nil // its consumer was removed meanwhile: the broker took the message back
	}
	m, err := c.fromMessage(d.Msg, d.Destination)
	if err != nil {
		c.log.Warn("openwire: a message could not be encoded for the client", "id", d.Msg.ID, "err", err)
		m = &ow.Message{Type: ow.TypeMessage, MessageID: wireMessageID(d.Msg.ID), Destination: fromClientName(d.Destination)}
	}
	redeliveries := int32(d.DeliveryCount) - 1
	if d.Redelivered && redeliveries < 1 {
		redeliveries = 1
	}
	m.RedeliveryCounter = redeliveries
	// The delivery's tag, which the client reports back as the last message it gave its
	// application when it removes the consumer (removeConsumer).
	m.MessageID.BrokerSequenceID = int64(d.Tag)
	m.JMSXGroupFirstForConsumer = d.GroupFirst
	cons.sent++
	c.md = ow.MessageDispatch{ConsumerID: cons.id, Destination: m.Destination, Message: m, RedeliveryCounter: redeliveries}
	err = c.write(&c.md)
	c.md = ow.MessageDispatch{}
	return err
}

// onAck settles what a MessageAck names, in its form; one the client waits for is
// answered once the broker has it.
func (c *conn) onAck(ctx context.Context, a *ow.MessageAck) {
	done := c.completion(a)
	cons := c.consumerOf(a.ConsumerID)
	if cons == nil || cons.browser {
		done(nil) // a browser's, or a consumer's already removed: nothing is held for it
		return
	}
	tx := txKey(a.TransactionID)
	switch a.AckType {
	case ow.AckDelivered:
		// Delivered to the application, not yet acknowledged (a transacted session's
		// messages before COMMIT): the window opens by as many, as ActiveMQ extends
		// the prefetch, and closes again as they are settled.
		if !cons.pull && a.MessageCount > 0 {
			cons.delivered += a.MessageCount
			cons.subs[0].Grant(a.MessageCount)
		}
		done(nil)
		return
	case ow.AckRedelivered:
		done(nil) // the client redelivers on its own; the count travels with the message
		return
	}
	kind := broker.SettleIndividual
	switch a.AckType {
	case ow.AckStandard:
		kind = broker.SettleCumulative
	case ow.AckPoison:
		kind = broker.SettlePoison
	case ow.AckExpired:
		kind = broker.SettleExpired
	}
	// An ack the client does not wait for (the JMS client's are asynchronous) rides
	// the store's next sync.
	req := broker.SettleRequest{Kind: kind, Tx: tx, Unanswered: !a.ResponseRequired}
	if a.AckType == ow.AckPoison && a.PoisonCause != nil {
		req.Cause = a.PoisonCause.Error()
	}
	last := messageID(a.LastMessageID)
	// A range other than a standard ack's names its first message too.
	var refs []string
	if kind != broker.SettleCumulative && a.FirstMessageID != nil && messageID(a.FirstMessageID) != last {
		refs = append(refs, messageID(a.FirstMessageID))
	}
	refs = append(refs, last)
	var err error
	for i, ref := range refs {
		cb := func(error) {}
		if i == len(refs)-1 {
			cb = done
		}
		if err = c.settle(ctx, cons, ref, req, cb); err != nil {
			break
		}
	}
	if err != nil {
		done(err)
		return
	}
	if take := min(cons.delivered, max(a.MessageCount, 1)); take > 0 && kind == broker.SettleCumulative {
		cons.delivered -= take
		cons.subs[0].Grant(-take)
	}
}

// consumerOf is the client's consumer id, nil if it has none of that id.
func (c *conn) consumerOf(id *ow.ConsumerID) *consumer {
	if id == nil {
		return nil
	}
	return c.consumers[*id]
}

// settle settles message id of one of cons's subscriptions.
func (c *conn) settle(ctx context.Context, cons *consumer, id string, req broker.SettleRequest, done func(error)) error {
	var err error
	for _, sub := range cons.subs {
		req.Ref = broker.AckRef{MessageID: id, SubID: sub.ID}
		if err = c.bc.Settle(ctx, req, done); err == nil {
			return nil
		}
	}
	return err
}

// onConsumerControl restores the prefetch of a consumer a failover: client
// resubscribed with prefetch 0 (in pull mode, until then) after a reconnect: the client
// sends its real prefetch once it has dealt with what it held. Its MessagePulls still
// waiting are done: their credit is part of the window.
func (c *conn) onConsumerControl(cc *ow.ConsumerControl) {
	cons := c.consumerOf(cc.ConsumerID)
	if cons == nil || !cons.pull || cc.Prefetch <= 0 {
		return
	}
	for _, sub := range cons.subs {
		sub.SetPrefetch(cc.Prefetch)
	}
	cons.pull = false
	c.dropPulls(cons)
}

// onPull gives a pull consumer (prefetch 0) credit for one message. With a timeout
// (ms; -1: none at all, receiveNoWait) a pull that finds nothing gets the empty
// dispatch that ends the client's wait; 0 waits as long as it takes.
func (c *conn) onPull(p *ow.MessagePull) error {
	cons := c.consumerOf(p.ConsumerID)
	if cons == nil || !cons.pull {
		return nil
	}
	cons.subs[0].Grant(1)
	if p.Timeout == 0 {
		return nil
	}
	wait := time.Duration(max(p.Timeout, 0)) * time.Millisecond
	c.pulls = append(c.pulls, &pull{c: cons, deadline: time.Now().Add(wait), sent: cons.sent})
	return nil
}

// expirePulls ends the pulls whose deadline passed with nothing sent: their credit is
// taken back and the client is sent the empty dispatch. A pull whose credit was taken
// by a message on its way is left to that message.
func (c *conn) expirePulls(now time.Time) {
	kept := c.pulls[:0]
	for _, p := range c.pulls {
		switch {
		case p.c.sent > p.sent:
		case now.Before(p.deadline):
			kept = append(kept, p)
		case p.c.subs[0].Revoke(1):
			_ = c.write(&ow.MessageDispatch{ConsumerID: p.c.id, Destination: fromDestination(p.c.subs[0].Dest)})
		default:
			kept = append(kept, p) // a message took the credit: it is being written
		}
	}
	clear(c.pulls[len(kept):])
	c.pulls = kept
}
