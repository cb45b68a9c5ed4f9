package broker

import (
	"context"
	"strings"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

// The session surface: what a wire protocol's transport drives, and all it imports of
// the broker's insides. A transport connects (Broker.Connect), opens sessions on the
// connection (Conn.Session), subscribes through a session, sends, settles deliveries
// in the forms JMS has (Conn.Settle), runs transactions (Begin, Commit, Abort) and
// closes; deliveries come back through the connection (Wake, Take, Delivered) within
// the credit each subscription was given. The value types below are the lower
// packages' own (aliases, so nothing is copied on the hot path); a transport names
// them through this package only.

// Destination names a queue, topic, temporary queue or temporary topic.
type Destination = destinations.Name

// DestinationKind is what a Destination names.
type DestinationKind = destinations.Kind

// The kinds of destination.
const (
	Queue     = destinations.Queue
	Topic     = destinations.Topic
	TempQueue = destinations.TempQueue
	TempTopic = destinations.TempTopic
)

// Message is the protocol-neutral message: its JMS fields, typed properties beside the
// string headers, and its body kind (see package persistence).
type Message = persistence.Message

// Headers are a message's string properties, as name, value pairs.
type Headers = persistence.Headers

// Prop is one typed property of a message.
type Prop = persistence.Prop

// PropKind is the JMS type of a typed property.
type PropKind = persistence.PropKind

// The typed properties' kinds (string properties are Headers).
const (
	PropBool   = persistence.PropBool
	PropByte   = persistence.PropByte
	PropShort  = persistence.PropShort
	PropInt    = persistence.PropInt
	PropLong   = persistence.PropLong
	PropFloat  = persistence.PropFloat
	PropDouble = persistence.PropDouble
	PropBytes  = persistence.PropBytes
)

// BoolProp returns a boolean property.
func BoolProp(name string, v bool) Prop { return persistence.BoolProp(name, v) }

// IntProp returns an integer property of kind k (PropByte, PropShort, PropInt, PropLong).
func IntProp(name string, k PropKind, v int64) Prop { return persistence.IntProp(name, k, v) }

// FloatProp returns a float (32-bit) property.
func FloatProp(name string, v float32) Prop { return persistence.FloatProp(name, v) }

// DoubleProp returns a double property.
func DoubleProp(name string, v float64) Prop { return persistence.DoubleProp(name, v) }

// BytesProp returns a byte array property; it keeps v.
func BytesProp(name string, v []byte) Prop { return persistence.BytesProp(name, v) }

// The well-known headers JMS's header fields travel in, whatever the protocol.
const (
	HeaderCorrelationID = persistence.HeaderCorrelationID
	HeaderReplyTo       = persistence.HeaderReplyTo
	HeaderType          = persistence.HeaderType
	HeaderGroupID       = persistence.HeaderGroupID
	HeaderGroupSeq      = persistence.HeaderGroupSeq
	HeaderUserID        = destinations.UserIDProperty
)

// BodyKind is the JMS message type of a body.
type BodyKind = persistence.BodyKind

// The body kinds.
const (
	BodyPlain  = persistence.BodyPlain
	BodyText   = persistence.BodyText
	BodyBytes  = persistence.BodyBytes
	BodyMap    = persistence.BodyMap
	BodyStream = persistence.BodyStream
	BodyObject = persistence.BodyObject
)

// ParseDestinations parses a destination as STOMP clients write it (/queue/a,
// /topic/b, /temp-queue/c, /temp-topic/d, or a bare name for a queue); a
// comma-separated list is a composite destination and yields one per part. The error
// is a *Error the client can be told.
func ParseDestinations(s string) ([]Destination, error) {
	ds, err := destinations.Parse(s)
	if err != nil {
		return nil, &Error{Message: err.Error(), Err: ErrInvalidDestination}
	}
	return ds, nil
}

// ParseDestination parses a single destination (see ParseDestinations).
func ParseDestination(s string) (Destination, error) {
	d, err := destinations.ParseOne(s)
	if err != nil {
		return d, &Error{Message: err.Error(), Err: ErrInvalidDestination}
	}
	return d, nil
}

// parseSelector parses a subscription's selector; blank text selects everything.
func parseSelector(text string) (*selector.Selector, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	sel, err := selector.Parse(text)
	if err != nil {
		return nil, &Error{Message: "invalid selector: " + err.Error(), Err: ErrInvalidSelector}
	}
	return sel, nil
}

// Session is a JMS session of a connection: the subscriptions opened through it, which
// its Recover and Close act on. STOMP has one per connection; OpenWire one per
// SessionInfo. A session belongs to its connection's goroutine.
type Session struct {
	c    *Conn
	id   string
	subs map[*Subscription]struct{}
}

// Session returns the connection's session id, opening it if it is not open.
func (c *Conn) Session(id string) *Session {
	if s := c.sessions[id]; s != nil {
		return s
	}
	s := &Session{c: c, id: id, subs: map[*Subscription]struct{}{}}
	if c.sessions == nil {
		c.sessions = map[string]*Session{}
	}
	c.sessions[id] = s
	return s
}

// ID is the session's id on its connection.
func (s *Session) ID() string { return s.id }

// Subscribe adds a subscription to the session (see SubscribeRequest).
func (s *Session) Subscribe(ctx context.Context, r SubscribeRequest) (*Subscription, error) {
	sub, err := s.c.subscribe(ctx, r)
	if err != nil {
		return nil, err
	}
	sub.session = s
	s.subs[sub] = struct{}{}
	return sub, nil
}

// Recover redelivers what the session's consumers were sent and have not settled, as
// JMS's Session.recover(): each goes back to its queue (or durable subscription)
// flagged redelivered with its delivery count raised, in the order it was sent, past
// the redelivery policy's limit to the dead-letter queue. Messages of a plain topic
// subscription are not kept by the broker once written and are not given again; a
// stream subscriber rewinds by its offset instead. It returns how many went back.
func (s *Session) Recover() int {
	var back []*Delivery
	for sub := range s.subs {
		back = append(back, sub.takeUnsettled()...)
	}
	sortByTag(back)
	requeueEach(back)
	return len(back)
}

// takeUnsettled settles, in the connection's books, every delivery of s not yet
// settled, gives their credit back, and returns them.
func (s *Subscription) takeUnsettled() []*Delivery {
	var ds []*Delivery
	for _, d := range s.dispatched {
		if !d.Settled && !d.Stream {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	s.settle(ds)
	s.reopen(len(ds))
	return ds
}

// Close removes the session's subscriptions (Conn.Unsubscribe's detach for each: what
// they hold unacknowledged goes back) and the session.
func (s *Session) Close() {
	for sub := range s.subs {
		if s.c.subs[sub.ID] == sub {
			s.c.unsubscribe(sub)
		}
	}
	clear(s.subs)
	delete(s.c.sessions, s.id)
}
