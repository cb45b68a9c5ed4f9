package broker

import (
	"cmp"
	"context"
	"slices"

	"github.com/activemq-go/broker/broker/registry"
	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/security"
)

// AckMode is how a subscription acknowledges.
type AckMode = destinations.AckMode

// The acknowledgement modes.
const (
	AckAuto             = destinations.AckAuto
	AckClient           = destinations.AckClient
	AckClientIndividual = destinations.AckClientIndividual
)

// SubscribeRequest describes a new subscription.
type SubscribeRequest struct {
	ID       string
	Dest     destinations.Name
	Mode     AckMode
	Prefetch int // <= 0: the destination policy's prefetch
	// Pull: the subscription gets credit only from Subscription.Grant (OpenWire's
	// consumers with prefetch 0, which ask for each message with MessagePull).
	Pull bool
	// Selector is the JMS selector that filters the messages this subscription
	// receives, as the client wrote it; blank for all. One that does not parse is an
	// *Error wrapping ErrInvalidSelector.
	Selector string
	// Exclusive asks to be the queue's only consumer while it lives (activemq.exclusive).
	Exclusive bool
	// Priority: higher-priority consumers are dispatched to first (activemq.priority).
	Priority int
	// NoLocal: skip messages sent on this connection (topics; activemq.noLocal).
	NoLocal bool
	// DurableName makes a topic subscription durable under (client-id, DurableName).
	// On a stream it names the consumer group instead (unless ConsumerGroup does).
	DurableName string
	// DurableStyle is the convention DurableName follows (which needs a client-id, and
	// what an UNSUBSCRIBE naming it does).
	DurableStyle DurableStyle
	// StreamOffset is where reading a stream starts (the x-stream-offset header; see
	// parseStreamStart); ignored for other destinations.
	StreamOffset string
	// ConsumerGroup makes a stream subscriber a member of this group, which shares the
	// stream's partitions and commits its position; ignored for other destinations.
	ConsumerGroup string
}

// Subscription is one consumer: its destination side (destinations.Consumer), where
// it is attached, and what it was sent and has not acknowledged.
type Subscription struct {
	destinations.Consumer
	conn    *Conn
	session *Session
	pull    bool // credit only from Grant (SubscribeRequest.Pull)

	q       *destinations.QueueDest
	wq      *registry.WildQueue // a wildcard queue subscription's queues
	durable *durable.Sub
	// shDurable is the shared durable subscription it is attached to (shared mode).
	shDurable *sharedmode.Durable
	t         *destinations.TopicDest // nil for a wildcard topic subscription
	stream    *destinations.StreamReader
	advID     uint64 // the value of its ActiveMQ consumer id, for advisories

	// Owned by the connection's goroutine: written, not yet acknowledged, in tag order.
	dispatched []*Delivery
	acked      int // entries of dispatched already settled (compacted lazily)
}

// Delivery is one message handed to one subscription.
type Delivery = destinations.Delivery

// subOf is the subscription a delivery was made for.
func subOf(d *Delivery) *Subscription { return d.Sub.Owner.(*Subscription) }

// Subscribe adds a subscription to the connection's default session (Session("")).
func (c *Conn) Subscribe(ctx context.Context, r SubscribeRequest) (*Subscription, error) {
	return c.Session("").Subscribe(ctx, r)
}

// subscribe adds a subscription to the connection (see Session.Subscribe).
func (c *Conn) subscribe(ctx context.Context, r SubscribeRequest) (*Subscription, error) {
	if c.closed {
		return nil, &Error{Message: "connection closed", Fatal: true, Err: ErrClosed}
	}
	if _, dup := c.subs[r.ID]; dup {
		return nil, errorf(ErrDuplicateSubscription, "subscription id %q is already in use on this connection", r.ID)
	}
	if err := c.SubscriptionRoom(0); err != nil {
		return nil, err
	}
	sel, err := parseSelector(r.Selector)
	if err != nil {
		return nil, err
	}
	if err := c.authorizeUse([]destinations.Name{r.Dest}, security.Read, true); err != nil {
		return nil, err
	}
	dest, err := c.resolve(r.Dest, true)
	if err != nil {
		return nil, err
	}
	if err := c.dests.Admit(c.creator(), []destinations.Name{dest}); err != nil {
		return nil, err
	}
	policyKind := r.Dest.Kind // a temporary destination has its own kind's policy
	r.Dest = dest
	p := c.b.policyFor(policyKind, r.Dest.Name)
	prefetch := r.Prefetch
	if max := max(p.MaxPrefetch, 1); prefetch > max {
		return nil, errorf(ErrInvalidPrefetch, "activemq.prefetchSize %d is over the most allowed on %s (destinationPolicy maxPrefetch %d)",
			prefetch, r.Dest, max)
	}
	stream := c.dests.StreamTopic(r.Dest)
	if prefetch <= 0 {
		prefetch = p.Prefetch
		// A stream's consumer group is its durable subscription, by either header, and
		// takes its prefetch: a member holding the topic's 32767 would hold a whole
		// backlog, and a partition it loses in a rebalance waits for what it holds
		// (streamgroup.go), so a member that joins would get none of the backlog.
		if r.DurableName != "" || stream != nil && r.ConsumerGroup != "" {
			prefetch = p.DurableTopicPrefetch
		}
	}
	if r.Pull {
		prefetch = 1 // what a pull holds at most, for the slow-consumer checks
	}
	c.consumers++
	s := &Subscription{conn: c, advID: c.consumers}
	s.Consumer = destinations.Consumer{Sink: c, Owner: s, ID: r.ID, Dest: r.Dest, Mode: r.Mode, Prefetch: int32(prefetch),
		Selector: sel, Exclusive: r.Exclusive, Priority: r.Priority, NoLocal: r.NoLocal}
	if c.share != nil {
		s.Quota = &c.share.quota
	}
	s.Credit.Store(int32(prefetch))
	if s.pull = r.Pull; s.pull {
		s.Credit.Store(0)
	}
	if t := stream; t != nil {
		if err := c.subscribeStream(ctx, r, s, t); err != nil {
			return nil, err
		}
		c.subs[r.ID] = s
		c.meter.NonDurable.Add(1)
		c.nsubs.Store(int32(len(c.subs)))
		c.b.adviseSubscribed(s)
		return s, nil
	}
	if r.DurableName != "" {
		if err := c.subscribeDurable(ctx, r, s); err != nil {
			return nil, err
		}
		c.subs[r.ID] = s
		c.nsubs.Store(int32(len(c.subs)))
		c.b.adviseSubscribed(s)
		return s, nil
	}
	// A temporary destination resolve let through is this connection's, and stays
	// until this connection drops it; it is no queue or topic of its name.
	var tq *destinations.QueueDest
	var tt *destinations.TopicDest
	switch r.Dest.Kind {
	case destinations.TempQueue:
		tq = c.dests.TempQueue(r.Dest)
	case destinations.TempTopic:
		tt = c.dests.TempTopic(r.Dest)
	}
	if (r.Dest.Kind == destinations.TempQueue || r.Dest.Kind == destinations.TempTopic) && tq == nil && tt == nil {
		return nil, errorf(ErrInvalidDestination, "temporary destination %s no longer exists", r.Dest)
	}
	c.subs[r.ID] = s
	c.meter.NonDurable.Add(1)
	c.nsubs.Store(int32(len(c.subs)))
	switch {
	case tq != nil:
		s.q = tq
		s.q.AddConsumer(&s.Consumer)
	case tt != nil:
		s.t = tt
		s.t.Add(&s.Consumer)
	case r.Dest.Kind == destinations.Queue && r.Dest.IsWildcard():
		s.wq = c.dests.AddWildcardQueue(&s.Consumer)
	case r.Dest.Kind == destinations.Queue:
		// Looked up again if the collector removed it meanwhile (package broker/registry).
		for s.q = c.dests.Queue(r.Dest.Name); !s.q.AddConsumer(&s.Consumer); s.q = c.dests.Queue(r.Dest.Name) {
		}
	case r.Dest.IsWildcard():
		c.dests.AddWildcard(&s.Consumer)
	default:
		for {
			s.t = c.dests.Topic(r.Dest.Name)
			s.t.Add(&s.Consumer)
			if !s.t.Removed() {
				break
			}
			s.t.Remove(&s.Consumer)
		}
	}
	c.b.adviseSubscribed(s)
	return s, nil
}

// Grant gives the subscription n more credit (n more messages it may be sent unsettled)
// and resumes dispatch to it: a pull consumer's MessagePull.
func (s *Subscription) Grant(n int32) {
	s.Credit.Add(n)
	s.kick()
}

// Revoke takes back n units of credit Grant gave if the subscription still has them
// (nothing was sent on them meanwhile), and reports whether it did: a MessagePull that
// timed out.
func (s *Subscription) Revoke(n int32) bool {
	for {
		c := s.Credit.Load()
		if c < n {
			return false
		}
		if s.Credit.CompareAndSwap(c, c-n) {
			return true
		}
	}
}

// SetPrefetch gives a pull subscription (SubscribeRequest.Pull) a prefetch window of n
// messages instead, and reports whether it did (a subscription that has a window
// keeps it). OpenWire's failover: client resubscribes its consumers with prefetch 0
// after a reconnect and restores their prefetch with a ConsumerControl once it has
// dealt with what it held (ActiveMQ's ConnectionStateTracker). The window is capped at
// the destination policy's maxPrefetch, and counts the messages written and not yet
// settled; one on its way to the connection when it is called took a pull's credit and
// comes on top. It is called on the connection's goroutine.
func (s *Subscription) SetPrefetch(n int32) bool {
	if !s.pull || n <= 0 {
		return false
	}
	p := s.conn.b.policyFor(s.Dest.Kind, s.Dest.Name)
	n = min(n, int32(max(p.MaxPrefetch, 1)))
	s.pull = false
	s.Credit.Store(n - int32(len(s.dispatched)-s.acked))
	s.kick()
	return true
}

// reopen gives back (or, negative, takes back) the credit of n deliveries settled (or
// unsettled): the window of a prefetch subscription moves; a pull subscription's credit
// comes from Grant only.
func (s *Subscription) reopen(n int) {
	if !s.pull {
		s.Credit.Add(int32(n))
	}
}

// SubscriptionRoom reports an error if the connection, with others more subscriptions
// than the broker knows of (the transport's queue browsers), may not have one more.
func (c *Conn) SubscriptionRoom(others int) error { return c.quotas.subscribe(len(c.subs) + others) }

// kick resumes dispatch to s after it got credit back.
func (s *Subscription) kick() {
	if s.q != nil {
		s.q.Dispatch()
		return
	}
	if s.isWildcardQueue() {
		for _, q := range s.conn.dests.WildcardQueues(s.wq) {
			q.Dispatch()
		}
		return
	}
	if s.stream != nil {
		s.stream.Kick()
		return
	}
	s.Refill()
}

// UnsubscribeRequest describes an UNSUBSCRIBE.
type UnsubscribeRequest struct {
	ID string
	// DurableName, when set, names a durable subscription to delete, in the convention
	// of DurableStyle (see there for what happens to ID's subscription).
	DurableName  string
	DurableStyle DurableStyle
	// Delivered, when not nil, says which of the subscription's unacknowledged queue
	// messages its client gave its application (OpenWire's lastDeliveredSequenceId):
	// those dispatched up to and including the delivery of tag *Delivered. The ones
	// after it, or all when no unacknowledged delivery has that tag (0: none was
	// given), were only prefetched: they go back as never delivered, neither flagged
	// redelivered nor counted, as ActiveMQ's broker gives them back. Nil: all were
	// given to the application.
	Delivered *uint64
}

// Unsubscribe removes a subscription. Its queue messages that were dispatched and not
// acknowledged go back to the queue for other consumers, flagged redelivered; a durable
// subscription is detached and keeps its messages. With a DurableName, it deletes that
// durable subscription instead (UNSUBSCRIBE with activemq.subscriptionName and the like).
func (c *Conn) Unsubscribe(ctx context.Context, r UnsubscribeRequest) error {
	s := c.subs[r.ID]
	if s != nil && s.stream != nil {
		// A stream's consumer group keeps its committed position: it belongs to the
		// group, not to this subscriber, so the subscription name only detaches.
		r.DurableName = ""
	}
	if r.DurableName != "" {
		return c.unsubscribeDurable(ctx, r)
	}
	if s == nil {
		return errorf(ErrUnknownSubscription, "No subscription matched: %s", r.ID)
	}
	if r.Delivered != nil {
		s.prefetchedAfter(*r.Delivered)
	}
	c.unsubscribe(s)
	return nil
}

// prefetchedAfter marks the unacknowledged deliveries of s dispatched after the one of
// tag last (all of them if none has that tag) as never written: the client holds them
// unseen (see UnsubscribeRequest.Delivered). s.dispatched is in tag order.
func (s *Subscription) prefetchedAfter(last uint64) {
	through := slices.IndexFunc(s.dispatched, func(d *Delivery) bool { return !d.Settled && d.Tag == last })
	for _, d := range s.dispatched[through+1:] {
		if !d.Settled && d.Queue != nil {
			d.Written = false
		}
	}
}

// unsubscribe removes s, one of c's subscriptions (see Unsubscribe).
func (c *Conn) unsubscribe(s *Subscription) {
	delete(c.subs, s.ID)
	if s.session != nil {
		delete(s.session.subs, s)
	}
	c.nsubs.Store(int32(len(c.subs)))
	switch {
	case s.durable != nil:
		s.durable.Detach(&s.Consumer)
	case s.shDurable != nil:
		defer c.b.detachShared(s) // once its view gave its messages back
	default:
		c.meter.NonDurable.Add(-1)
	}
	switch {
	case s.stream != nil:
		s.stream.Close()
	case s.q != nil:
		s.q.RemoveConsumer(&s.Consumer)
	case s.isWildcardQueue():
		c.dests.RemoveWildcardQueue(s.wq)
	case s.t != nil:
		s.t.Remove(&s.Consumer)
		s.DropOverflow()
	default:
		c.dests.RemoveWildcard(&s.Consumer)
		s.DropOverflow()
	}
	c.b.adviseUnsubscribed(s)
	// Deliveries queued for the wire but not written yet.
	c.mu.Lock()
	var unwritten []*Delivery
	kept := c.out[:0]
	for _, d := range c.out {
		if d.Sub == &s.Consumer {
			unwritten = append(unwritten, d)
		} else {
			kept = append(kept, d)
		}
	}
	clear(c.out[len(kept):])
	c.out = kept
	c.mu.Unlock()

	back := unwritten
	for _, d := range s.dispatched {
		if !d.Settled {
			d.Settled = true
			delete(c.byTag, d.Tag)
			c.unindexID(d)
			back = append(back, d)
		}
	}
	s.dispatched = nil
	c.releaseBytes(sizeOf(back))
	sortByTag(back)
	requeueEach(back)
	// Shared queues give up the message groups the consumer owned, after its messages.
	if s.q != nil {
		s.q.ConsumerGone(&s.Consumer)
	} else if s.isWildcardQueue() {
		for q := range byQueue(back) {
			q.ConsumerGone(&s.Consumer)
		}
	}
}

func sortByTag(ds []*Delivery) {
	slices.SortFunc(ds, func(a, b *Delivery) int { return cmp.Compare(a.Tag, b.Tag) })
}

// settle marks deliveries of s as done and compacts its dispatched list. The cost is
// O(1) per delivery settled, amortized: settled ones at the head are sliced off (append
// moves the rest to a new array once the old one is used up), and those elsewhere are
// swept out once they are half the list.
func (s *Subscription) settle(ds []*Delivery) {
	s.conn.releaseBytes(sizeOf(ds))
	for _, d := range ds {
		d.Settled = true
		delete(s.conn.byTag, d.Tag)
		s.conn.unindexID(d)
	}
	s.acked += len(ds)
	i := 0
	for i < len(s.dispatched) && s.dispatched[i].Settled {
		i++
	}
	s.conn.ackLooked += len(ds) + i
	if i > 0 {
		s.acked -= i
		clear(s.dispatched[:i])
		s.dispatched = s.dispatched[i:]
	}
	if s.acked > 64 && s.acked*2 > len(s.dispatched) {
		kept := s.dispatched[:0]
		s.conn.ackLooked += len(s.dispatched)
		for _, d := range s.dispatched {
			if !d.Settled {
				kept = append(kept, d)
			}
		}
		clear(s.dispatched[len(kept):])
		s.dispatched = kept
		s.acked = 0
	}
}

// unsettle puts deliveries back to awaiting acknowledgement (an aborted transaction's
// acks, which ActiveMQ leaves dispatched to the same client).
func (s *Subscription) unsettle(ds []*Delivery) {
	s.conn.holdAgain(ds)
	for _, d := range ds {
		d.Settled = false
		s.conn.byTag[d.Tag] = d
		s.conn.indexID(d)
	}
	s.dispatched = append(s.dispatched, ds...)
	sortByTag(s.dispatched)
	s.acked = 0
	for _, d := range s.dispatched {
		if d.Settled {
			s.acked++
		}
	}
}
