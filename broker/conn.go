package broker

import (
	"context"
	"crypto/x509"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/broker/access"
	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/broker/flowcontrol"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/broker/registry"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// ConnectInfo is what a client says about itself when it connects.
type ConnectInfo struct {
	ClientID string
	// Login and Passcode are the CONNECT frame's credentials; HasLogin says the frame
	// had a login header at all.
	Login, Passcode string
	HasLogin        bool
	RemoteAddr      string
	// PeerCertificates is the client's verified TLS certificate chain, leaf first
	// (none on plain connections or when the client sent none).
	PeerCertificates []*x509.Certificate
	// Protocol is how the client speaks to the broker, for the metrics.
	Protocol Protocol
	// Connector names the transport connector the client came through, and Version
	// the protocol version agreed ("1.2"): both only shown to operators.
	Connector, Version string
	// MessageIDs: the client names the messages it sends (OpenWire's producers assign
	// JMSMessageID, which its applications correlate replies with), and Send keeps a
	// Message.ID it is given; otherwise the broker names every message.
	MessageIDs bool
	// Resumes names the client's own connection, which it opens again after a network
	// failure (OpenWire's failover transport reconnects with the same connection id):
	// a connection that resumes one still holding its client-id takes the client-id
	// over, as a stolen link does, rather than waiting for the old one's inactivity
	// timeout. Empty: none.
	Resumes string
}

// credentials are what the security service checks of info.
func (info ConnectInfo) credentials() security.Credentials {
	return security.Credentials{Login: info.Login, Passcode: info.Passcode, HasLogin: info.HasLogin,
		RemoteAddr: info.RemoteAddr, PeerCertificates: info.PeerCertificates}
}

// Conn is one client connection. See the package comment for which goroutine may call
// what.
type Conn struct {
	// b is the broker, reached only through its methods; the others are the parts of
	// it a connection uses itself.
	b          *Broker
	dests      *registry.Destinations
	quotas     *quotas
	meter      *management.Meter
	access     *access.Control
	flow       *flowcontrol.Control
	ID         string
	ClientID   string
	RemoteAddr string
	subject    *security.Subject // who the connection acts as; never nil
	lastAuth   access.Decision   // owned by the connection's goroutine
	proto      Protocol
	ownIDs     bool                // the client names its messages (ConnectInfo.MessageIDs)
	resume     string              // ConnectInfo.Resumes
	blocked    atomic.Bool         // a SEND is held by producer flow control (SetBlocked)
	producers  map[ProducerID]bool // an OpenWire client's producers of one destination (producers.go)

	mu      sync.Mutex // guards out, nextTag, notices and kickReason
	out     []*Delivery
	nextTag uint64
	wake    chan struct{}
	// notices are errors for the client that no request of its caused (a slow
	// subscription aborted), written as ERROR frames by the transport.
	notices    []*Error
	kickReason string

	// Owned by the connection's goroutine.
	subs     map[string]*Subscription
	sessions map[string]*Session
	byTag    map[uint64]*Delivery
	// byID finds the unacknowledged deliveries by message id, for the acks of STOMP 1.0
	// and 1.1 (see ackindex.go); nil until the connection's first such ack.
	byID map[string]*Delivery
	// ackLooked counts the deliveries looked at to find and settle what ACKs and NACKs
	// name: their cost, which TestAckByMessageIDCostDoesNotGrow counts.
	ackLooked int
	txs       map[string]*txState
	temps     []destinations.Name // its temporary destinations, by their broker-wide names
	closed    bool
	// consumers numbers the connection's subscriptions, for the consumer ids of
	// advisories.
	consumers uint64

	refusedLog loglimit.Limit // the log line of non-persistent messages refused for memory

	// share is its user's count of unacknowledged bytes (quota.go), nil without a
	// quota; unheld is set when the user's hold ended, for the connection to dispatch
	// again.
	share  *userShare
	unheld atomic.Bool

	kicked   chan struct{} // closed when the connection must go: see kick
	kickOnce sync.Once
	gone     chan struct{} // closed by Close

	// What operators see of the connection (management.go): where it came from, when, and
	// its counters, written by its own goroutine and read by anyone. internal marks
	// the broker's own connections (the admin listener's sends), never listed.
	connector   string
	version     string
	connectedAt time.Time
	internal    bool
	nsubs       atomic.Int32
	received    atomic.Int64 // messages sent by the client and accepted
	delivered   atomic.Int64 // messages written to the client
}

// Kicked is closed when the broker wants the connection gone: a newer connection with
// the same client-id took over (link stealing), or a slow consumer was aborted with its
// connection. The transport then closes it with a fatal ERROR saying KickReason.
func (c *Conn) Kicked() <-chan struct{} { return c.kicked }

// KickReason says why Kicked was closed.
func (c *Conn) KickReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kickReason
}

// kick asks the transport to close the connection; the first reason given stays.
func (c *Conn) kick(reason string) {
	c.kickOnce.Do(func() {
		c.mu.Lock()
		c.kickReason = reason
		c.mu.Unlock()
		close(c.kicked)
	})
}

// notify queues an ERROR for the client and wakes the connection's owner.
func (c *Conn) notify(e *Error) {
	c.mu.Lock()
	c.notices = append(c.notices, e)
	c.mu.Unlock()
	c.Poke()
}

// TakeNotices returns the errors queued for the client since the last call; the
// transport writes each as a (non-fatal unless marked) ERROR frame.
func (c *Conn) TakeNotices() []*Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.notices
	c.notices = nil
	return n
}

// Wake is signalled when deliveries are waiting or Poke was called.
func (c *Conn) Wake() <-chan struct{} { return c.wake }

// Poke signals Wake; any goroutine may call it.
func (c *Conn) Poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

var _ destinations.Sink = (*Conn)(nil)

// Push queues a delivery for the client (destinations.Sink); any goroutine may call it.
func (c *Conn) Push(d *Delivery) {
	c.mu.Lock()
	c.nextTag++
	d.Tag = c.nextTag
	c.out = append(c.out, d)
	first := len(c.out) == 1
	c.mu.Unlock()
	if first {
		c.Poke()
	}
}

// PushAll queues deliveries for the connection in one go (destinations.Sink).
func (c *Conn) PushAll(ds []*Delivery) {
	if len(ds) == 0 {
		return
	}
	c.mu.Lock()
	for _, d := range ds {
		c.nextTag++
		d.Tag = c.nextTag
	}
	first := len(c.out) == 0
	c.out = append(c.out, ds...)
	c.mu.Unlock()
	if first {
		c.Poke()
	}
}

// ConnectionID names the connection in log lines (destinations.Sink).
func (c *Conn) ConnectionID() string { return c.ID }

// AbortConsumer ends a slow subscriber (destinations.Sink): its subscription, which the client
// hears of in an ERROR, or its whole connection.
func (c *Conn) AbortConsumer(consumer *destinations.Consumer, reason string, withConnection bool) {
	if withConnection {
		c.kick(reason)
		return
	}
	s := consumer.Owner.(*Subscription)
	if s.t != nil {
		s.t.Remove(consumer)
	} else {
		c.dests.RemoveWildcard(consumer)
	}
	consumer.DropOverflow()
	c.b.adviseUnsubscribed(s) // it is gone, as far as consumers go
	c.notify(&Error{Message: reason})
}

// Take moves the waiting deliveries into buf (which it may reuse) and returns it. Topic
// messages that expired while they waited are left out (see dropExpired).
func (c *Conn) Take(buf []*Delivery) []*Delivery {
	c.redispatch()
	c.mu.Lock()
	buf = append(buf[:0], c.out...)
	clear(c.out)
	c.out = c.out[:0]
	c.mu.Unlock()
	n := len(buf)
	buf = dropExpired(buf)
	if expired := n - len(buf); expired > 0 {
		c.meter.TopicExpired.Add(int64(expired))
	}
	return buf
}

// Deliver writes what waits for the client: it takes the waiting deliveries (into buf,
// which it returns for reuse) and hands each to write, then reports them Delivered, for
// up to rounds batches. A write that fails gives the batch back (Unwritten: the
// connection is failing, none of it may have reached the client) and ends it with that
// error.
func (c *Conn) Deliver(buf []*Delivery, rounds int, write func(*Delivery) error) ([]*Delivery, error) {
	for range rounds {
		buf = c.Take(buf)
		if len(buf) == 0 {
			break
		}
		for _, d := range buf {
			if err := write(d); err != nil {
				c.Unwritten(buf)
				clear(buf)
				return buf[:0], err
			}
		}
		c.Delivered(buf)
		clear(buf)
	}
	return buf[:0], nil
}

// Unwritten gives back deliveries Take returned that the transport could not write (its
// connection is failing): they go back to their destinations, not redelivered, when the
// connection closes, as deliveries never taken do. Nothing of an auto-acknowledged one
// is lost: it was not consumed.
func (c *Conn) Unwritten(ds []*Delivery) { c.PushAll(ds) }

// Delivered tells the broker these deliveries are written to the client. Auto-ack
// subscriptions consider them consumed now (as ActiveMQ does at dispatch); the others
// keep them until ACK or NACK.
func (c *Conn) Delivered(ds []*Delivery) {
	var (
		acks    []destinations.StoreAck // the store writes of auto-acknowledged messages
		credits map[*Subscription]int32
		counts  map[*destinations.QueueDest]ackCount
	)
	var hwm map[*destinations.QueueDest]uint64
	var sharedAuto map[*destinations.QueueDest][]*Delivery
	var auto, redelivered, freed int64
	c.delivered.Store(c.delivered.Load() + int64(len(ds))) // only the owner writes: no locked add
	for _, d := range ds {
		d.Written = true
		if d.Redelivered {
			redelivered++
		}
		if d.Stream {
			d.StreamWritten(d.Sub.Mode == AckAuto)
		}
		s := subOf(d)
		q := d.Queue
		if q != nil && d.Claimed() {
			// A shared queue's message: acknowledged in its database (auto mode), no
			// dispatch marker (its redelivered flag comes from the database).
			if s.Mode != AckAuto {
				c.keepDispatched(s, d)
				continue
			}
			auto++
			freed += d.Size()
			credits = addCredit(credits, s)
			if sharedAuto == nil {
				sharedAuto = map[*destinations.QueueDest][]*Delivery{}
			}
			sharedAuto[q] = append(sharedAuto[q], d)
			continue
		}
		// An auto-acknowledged message whose store write was withdrawn never reached the
		// store: it needs neither an ack nor a dispatch marker.
		withdrawn := s.Mode == AckAuto && q != nil && d.Msg.Persistent && d.Withdrawn()
		if q != nil && d.Msg.Persistent && !withdrawn && d.Msg.Seq > q.DispatchHWMHint() {
			if hwm == nil {
				hwm = map[*destinations.QueueDest]uint64{}
			}
			hwm[q] = max(hwm[q], d.Msg.Seq)
		}
		if s.Mode != AckAuto {
			c.keepDispatched(s, d)
			continue
		}
		auto++
		freed += d.Size()
		credits = addCredit(credits, s)
		if q != nil {
			if counts == nil {
				counts = map[*destinations.QueueDest]ackCount{}
			}
			ac := counts[q]
			ac.n++
			ac.bytes += d.Size()
			counts[q] = ac
			if d.Msg.Persistent && !withdrawn {
				acks = append(acks, q.AckOf(d.Msg))
			}
		} else if s.t != nil {
			s.t.Dequeued(1)
		}
	}
	if acks != nil {
		c.b.writeAutoAcks(acks)
	}
	for q, seq := range hwm {
		q.MarkWritten(seq)
	}
	for q, qds := range sharedAuto {
		c.b.autoAckShared(q, qds)
	}
	for q, ac := range counts {
		q.Acked(ac.n, ac.bytes)
	}
	c.releaseBytes(freed)
	for s, n := range credits {
		s.Credit.Add(n)
		s.kick()
	}
	if auto > 0 {
		c.meter.Delivered[c.proto][management.DeliveredAuto].Add(auto)
	}
	if client := int64(len(ds)) - auto; client > 0 {
		c.meter.Delivered[c.proto][management.DeliveredClient].Add(client)
	}
	if redelivered > 0 {
		c.meter.Redelivered.Add(redelivered)
	}
}

// commit runs a batch without blocking when the store can, and calls done with the result.
func (b *Broker) commit(batch persistence.Batch, d persistence.Durability, done func(error)) {
	if ab, ok := batch.(persistence.AsyncBatch); ok {
		ab.CommitAsync(d, done)
		return
	}
	done(batch.Commit(context.Background(), d))
}

// messageFor is the message of the i-th of several destinations of m: m itself for the
// first, a copy with its Expires as sent (expires) for the others, so that each
// destination applies its own defaultTimeToLive.
func messageFor(m *persistence.Message, i int, expires int64) *persistence.Message {
	if i == 0 {
		return m
	}
	c := m.Clone()
	c.Expires = expires
	return c
}

// keepDispatched records d, written to s (a client-acknowledging subscription), as
// awaiting its ACK or NACK.
func (c *Conn) keepDispatched(s *Subscription, d *Delivery) {
	s.dispatched = append(s.dispatched, d)
	c.byTag[d.Tag] = d
	c.indexID(d)
}

// addCredit counts one more message of s consumed, in credits (made if nil).
func addCredit(credits map[*Subscription]int32, s *Subscription) map[*Subscription]int32 {
	if credits == nil {
		credits = map[*Subscription]int32{}
	}
	credits[s]++
	return credits
}

// Send accepts a message for dests (several for a composite destination). Outside a
// transaction done is called once the message is as durable as the store makes it (at
// once for non-persistent messages), possibly before Send returns; inside one, when it
// is recorded. The returned error is for a request that cannot be accepted at all.
func (c *Conn) Send(ctx context.Context, dests []destinations.Name, m *persistence.Message, tx string, done func(error)) error {
	start := time.Now()
	if c.closed {
		return &Error{Message: "connection closed", Fatal: true, Err: ErrClosed}
	}
	if c.b.schedulerManagementSend(dests) {
		return c.manageScheduler(ctx, dests, m, done)
	}
	if err := c.authorizeUse(dests, security.Write, true); err != nil {
		return err
	}
	c.access.StampUser(c.subject, m)
	c.access.TakeDeadLetterHeaders(c.subject, m)
	dests, err := c.resolveSend(dests, m)
	if err != nil {
		return err
	}
	if err := c.dests.Admit(c.creator(), dests); err != nil {
		return err
	}
	if err := c.rewriteReplyTo(m.Headers); err != nil {
		return err
	}
	if m.ID == "" || !c.ownIDs {
		m.ID = c.b.newMessageID()
	}
	if m.Timestamp == 0 {
		m.Timestamp = start.UnixMilli()
	}
	streams, dests, err := c.dests.SplitStreams(dests)
	if err != nil {
		return err
	}
	scheduled := c.b.scheduled(m)
	if len(streams) > 0 && scheduled {
		return errorf(ErrInvalidDestination, "scheduled delivery (AMQ_SCHEDULED_*) is not supported on streams: %s keeps messages in order of arrival", streams[0].Topic().ClientName())
	}
	if len(streams) > 0 && tx != "" {
		// The stream log is not the store: an append cannot be part of the COMMIT's
		// atomic batch, so it is refused rather than done half-way.
		return errorf(ErrInvalidDestination, "stream destinations do not take part in transactions: %s cannot be appended to atomically with COMMIT; send to it outside transaction %s",
			streams[0].Topic().ClientName(), tx)
	}
	if err := c.flow.Check(dests, m, tx != ""); err != nil {
		return err
	}
	// Counted once accepted: a SEND held by flow control is sent again.
	c.meter.Received[c.proto].Add(1)
	c.received.Store(c.received.Load() + 1) // only the owner writes: no locked add
	if tx != "" {
		t := c.txs[tx]
		if t == nil {
			return errorf(ErrUnknownTransaction, "Invalid transaction id: %s", tx)
		}
		if err := c.b.transactable(tx, dests, m); err != nil {
			return err
		}
		size := int64(m.Size())
		if err := c.quotas.txRoom(tx, t.bytes, size); err != nil {
			return err
		}
		t.bytes += size
		t.sends = append(t.sends, txSend{dests: dests, msg: m})
		done(nil)
		return nil
	}
	return c.b.send(ctx, c, dests, streams, m, done, start)
}

// scheduled reports whether m asks for scheduled delivery and the broker has a
// scheduler.
func (b *Broker) scheduled(m *persistence.Message) bool { return b.sched != nil && b.sched.Wants(m) }

// transactable refuses m, a SEND to dests in transaction tx, when part of it cannot be
// done at COMMIT.
func (b *Broker) transactable(tx string, dests []destinations.Name, m *persistence.Message) error {
	if q, _ := b.shared.Split(dests); len(q) > 0 {
		return errorf(ErrInvalidDestination, "shared queues and topics do not take part in transactions yet: send to %s outside transaction %s", q[0].String(), tx)
	}
	if b.scheduled(m) {
		// Checked now, scheduled at COMMIT (in its store batch).
		if err := b.sched.Check(m); err != nil {
			return err
		}
	}
	return nil
}

// send routes m, sent by from outside a transaction, to streams and dests (resolved and
// checked): see Conn.Send.
func (b *Broker) send(ctx context.Context, from *Conn, dests []destinations.Name, streams []*destinations.Stream, m *persistence.Message, done func(error), start time.Time) error {
	persistent := m.Persistent
	if len(streams) > 0 || b.scheduled(m) {
		done = b.timedDone(done, persistent, start)
	}
	if len(streams) > 0 {
		rest, err := destinations.AppendStreams(streams, m, len(dests) > 0, done)
		if err != nil || len(dests) == 0 {
			return err
		}
		done = rest
	}
	if b.scheduled(m) {
		if shared, _ := b.shared.Split(dests); len(shared) > 0 {
			// The scheduler keeps its jobs in the node's store: they would not survive
			// the node, so they are refused rather than kept where they could be lost.
			return errorf(ErrInvalidDestination, "scheduled delivery (AMQ_SCHEDULED_*) is not supported on shared destinations (jdbc mode: shared) yet: %s", shared[0])
		}
		return b.sched.Schedule(ctx, dests, m, done)
	}
	if b.shared != nil {
		var shared []destinations.Name
		if shared, dests = b.shared.Split(dests); len(shared) > 0 {
			if len(dests) == 0 {
				b.sendShared(from, shared, m, b.timedDone(done, persistent, start))
				return nil
			}
			done = joinDone(2, done)
			b.sendShared(from, shared, m.Clone(), done)
		}
	}
	batch, entries, marks, refused := b.routeDedup(dests, m, from, true)
	done = marks.Answer(done)
	if len(streams) > 0 {
		start = time.Time{} // done records the latency
	}
	if batch == nil {
		if refused == nil {
			b.sent(persistent, start)
			done(nil)
		}
		return refused
	}
	// (A send that recorded a duplicate-detection id writes it before its RECEIPT: it
	// never qualifies, its batch holding the id's entry too.)
	if !marks.Recorded() && b.storeAndDispatch(batch, entries, refused, done, persistent, start) {
		return nil
	}
	b.commit(batch, persistence.Sync, func(err error) {
		destinations.SettleAll(entries, err)
		marks.Settle(err)
		if err != nil {
			err = storeError(err)
		} else {
			b.sent(persistent, start)
		}
		if refused == nil {
			done(err)
		}
	})
	return refused
}

// storeAndDispatch commits the store write of a message sent to one queue the way
// ActiveMQ's concurrentStoreAndDispatchQueues does, when the store can withdraw a queued
// write: the message is dispatched while its write waits, and if a consumer acknowledges
// it before the write began, the write is withdrawn and the producer answered at once
// (the message was delivered and consumed, so it needs no disk). Otherwise the RECEIPT
// goes after the write, as without it. It reports false, committing nothing, when the
// send does not qualify. persistent and start are for the SEND's latency (see sent).
func (b *Broker) storeAndDispatch(batch persistence.Batch, entries []destinations.Accepted, refused error, done func(error), persistent bool, start time.Time) bool {
	cb, ok := batch.(persistence.CancelableBatch)
	if !ok || refused != nil || len(entries) != 1 || entries[0].E == nil || batch.Len() != 1 {
		return false
	}
	qe := entries[0]
	cancel := cb.CommitCancelable(persistence.Sync, func(err error) {
		if errors.Is(err, persistence.ErrCanceled) {
			return // withdrawn: the producer was answered then
		}
		destinations.SettleAll(entries, err)
		if err != nil {
			err = storeError(err)
		} else {
			b.sent(persistent, start)
		}
		done(err)
	})
	if cancel != nil {
		qe.Q.DispatchWhileStoring(qe.E, func() bool {
			if !cancel() {
				return false
			}
			b.sent(persistent, start)
			done(nil)
			return true
		})
	}
	return true
}

// route hands m to each of dests (already resolved): topics publish at once, queues queue
// it. It returns the store batch the persistent copies need (nil if none) and the queue
// entries to settle when it commits. A queue that refuses the message (memory full) does
// not stop the others; its error is returned.
func (b *Broker) route(dests []destinations.Name, m *persistence.Message, from *Conn) (persistence.Batch, []destinations.Accepted, error) {
	batch, entries, _, refused := b.routeDedup(dests, m, from, false)
	return batch, entries, refused
}

// routeDedup is route that, with detect, first checks each destination's duplicate
// detection (package broker/dedup): a destination that accepted m's id before is
// skipped, and the id is recorded in the batch otherwise; marks (nil without detect)
// is to be settled with the batch's result.
func (b *Broker) routeDedup(dests []destinations.Name, m *persistence.Message, from *Conn, detect bool) (persistence.Batch, []destinations.Accepted, *dedup.Marks, error) {
	var marks *dedup.Marks
	if detect && dedup.ID(m) != "" { // a message without an id costs nothing
		marks = &dedup.Marks{}
	}
	var batch persistence.Batch
	var entries []destinations.Accepted
	var refused error
	expires := m.Expires // as sent: each destination applies its own defaultTimeToLive
	for i, d := range dests {
		msg := messageFor(m, i, expires)
		var rec *dedup.Entry
		if marks != nil {
			var dup bool
			if dup, rec = b.dedup.Check(d, msg, &batch, from.ID, marks); dup {
				continue
			}
		}
		if d.Kind.IsTopic() {
			t := b.dests.TopicFor(d)
			if t == nil {
				continue // a temporary topic deleted meanwhile: nobody hears it
			}
			destinations.ExpireAfter(msg, t.TTL())
			acc, store := t.Accept(msg)
			if store {
				if batch == nil {
					batch = b.store.Begin()
				}
				batch.Add(msg)
			}
			entries = append(entries, acc...)
			t.Publish(msg, from)
			continue
		}
		q, e, err := b.dests.AcceptQueue(d, msg, !msg.Persistent)
		if err != nil {
			// Other parts of a composite send go ahead; the producer hears of this one.
			refused = b.refusedBy(from, q, err)
			if rec != nil {
				rec.Settle(err) // its retry is not a duplicate
			}
			continue
		}
		if !msg.Persistent {
			continue
		}
		if batch == nil {
			batch = b.store.Begin()
		}
		batch.Add(msg)
		entries = append(entries, destinations.Accepted{Q: q, E: e, Seq: msg.Seq})
	}
	return batch, entries, marks, refused
}

type ackCount struct {
	n     int
	bytes int64
}

// refusedBy is the producer's error when queue q refused a message from connection
// from: memoryFull's, or err itself when there is no queue (a temporary queue deleted
// since the message was sent to it).
func (b *Broker) refusedBy(from *Conn, q *destinations.QueueDest, err error) error {
	if q == nil {
		return err
	}
	return b.memoryFull(from, q, err)
}

// memoryFull is the producer's error when a non-persistent message from connection from
// (nil for the scheduler) does not fit queue q (see flowcontrol.Control.MemoryFull).
func (b *Broker) memoryFull(from *Conn, q *destinations.QueueDest, err error) error {
	if from == nil {
		return b.flow.MemoryFull(nil, "", "", q, err)
	}
	return b.flow.MemoryFull(&from.refusedLog, from.ID, from.RemoteAddr, q, err)
}

func storeError(err error) error { return destinations.StoreError(err) }

// resolveSend checks and resolves the destinations of a SEND: temporary ones become
// their real names (and make the message non-persistent: temporary destinations are
// never stored), and a topic with virtual-topic consumer queues gains those queues.
func (c *Conn) resolveSend(dests []destinations.Name, m *persistence.Message) ([]destinations.Name, error) {
	out := make([]destinations.Name, 0, len(dests))
	for _, d := range dests {
		if d.IsWildcard() {
			return nil, errorf(ErrInvalidDestination, "cannot send to a wildcard destination: %s", d)
		}
		temp := d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic
		r, err := c.resolve(d, false)
		if err != nil {
			return nil, err
		}
		if temp {
			m.Persistent = false
		}
		out = append(out, r)
		if r.Kind == destinations.Topic {
			out = append(out, c.dests.VirtualQueues(r.Name)...)
		}
	}
	return out, nil
}

// Close ends the connection: open transactions are aborted and every subscription is
// removed, which gives unacknowledged queue messages back for redelivery.
func (c *Conn) Close() {
	if c.closed {
		return
	}
	for id := range c.txs {
		_ = c.Abort(id)
	}
	for _, s := range c.subs {
		c.unsubscribe(s)
	}
	c.dropTemps()
	if c.share != nil {
		c.share.leave(c)
	}
	c.closed = true
	c.b.disconnected(c)
	close(c.gone)
}

// disconnected forgets c, which closed.
func (b *Broker) disconnected(c *Conn) {
	b.conns.Remove(c, func() {
		b.counters.ClosedReceived.Add(c.received.Load())
		b.counters.ClosedDelivered.Add(c.delivered.Load())
	})
	b.counters.Closed[c.proto].Add(1)
	b.adviseDisconnected(c)
}
