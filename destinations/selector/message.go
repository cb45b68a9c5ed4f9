package selector

import (
	"strconv"

	"github.com/activemq-go/broker/persistence"
)

// Properties gives a selector the properties of one message by name. Get reports
// whether the property is set; a property that is not set is NULL to the selector.
type Properties interface {
	Get(name string) (string, bool)
}

// TypedProperties is an optional interface of Properties for property sets that hold
// values other than strings — numbers such as JMSPriority and JMSTimestamp, booleans
// such as JMSRedelivered — so the evaluator need not format them as strings (which
// would allocate) only to parse them back. When p implements it, Matches calls Value
// instead of Get, for every property. Value returns NullValue() for a property that is
// not set.
type TypedProperties interface {
	Properties
	Value(name string) Value
}

var (
	_ TypedProperties = (*Message)(nil)
)

// Message presents a stored message to a selector. M is the message, DeliveryCount its
// JMSXDeliveryCount, the number of times it has been delivered including the delivery
// being decided (0 means M.RedeliveryCount+1).
//
// Selectors see the application headers of M by their names, first occurrence winning,
// as strings (compared with numbers numerically, as ActiveMQ does for STOMP headers);
// M's typed properties by their names as their JMS types (byte, short, int and long
// exact numbers, float and double approximate ones, boolean a boolean, a byte array
// NULL); and these names as the message's own fields:
//
//	JMSPriority, priority        M.Priority (exact number)
//	JMSTimestamp, timestamp      M.Timestamp (exact number, ms since the epoch)
//	JMSExpiration, expires       M.Expires (exact number, 0 for never)
//	JMSDeliveryMode              'PERSISTENT' or 'NON_PERSISTENT' from M.Persistent
//	persistent                   M.Persistent (boolean)
//	JMSMessageID                 M.ID (NULL when empty)
//	JMSDestination               M.Dest, the qualified name ('queue://ORDERS')
//	JMSXDeliveryCount            the delivery count (exact number)
//	JMSRedelivered, redelivered  delivery count > 1 (boolean)
//	JMSType                      header "type" (persistence.HeaderType)
//	JMSCorrelationID             header "correlation-id" (persistence.HeaderCorrelationID)
//	JMSReplyTo                   header "reply-to" (persistence.HeaderReplyTo)
//	JMSXGroupID, JMSXGroupSeq    headers of the same names
//
// The lower-case STOMP names always mean the field: SEND takes these headers out of
// the application headers. STOMP header names that contain '-' cannot be written in a
// selector (a-b is a subtraction); JMSCorrelationID and JMSReplyTo reach the two that
// matter.
//
// Matches recognises a *Message and reads the fields directly, each name resolved at
// parse time; it does not allocate when the *Message is reused across calls.
// Selector.MatchesMessage needs no Message at all.
type Message struct {
	M             *persistence.Message
	DeliveryCount uint32
}

// Get returns a property as a string, for callers that want the Properties view.
// Numbers are formatted, which allocates; the evaluator uses Value instead.
func (m *Message) Get(name string) (string, bool) {
	v := m.Value(name)
	switch v.kind {
	case Null:
		return "", false
	case String:
		return v.s, true
	case Bool:
		return strconv.FormatBool(v.b), true
	case Float:
		return strconv.FormatFloat(v.f, 'g', -1, 64), true
	}
	return strconv.FormatInt(v.i, 10), true
}

// Value returns a property with its type: fields as numbers and booleans, headers as
// strings. It does not allocate.
func (m *Message) Value(name string) Value {
	if m == nil || m.M == nil {
		return Value{}
	}
	f, hdr := resolveField(name)
	return fieldValue(m.M, m.DeliveryCount, f, hdr)
}

// field is a message field a selector name stands for, resolved at parse time.
type field uint8

const (
	fieldHeader field = iota // an application header
	fieldPriority
	fieldTimestamp
	fieldExpiration
	fieldDeliveryMode
	fieldPersistent
	fieldMessageID
	fieldDestination
	fieldDeliveryCount
	fieldRedelivered
)

// resolveField maps a selector name to a message field, or to the header to read.
func resolveField(name string) (field, string) {
	switch name {
	case "JMSPriority", "priority":
		return fieldPriority, ""
	case "JMSTimestamp", "timestamp":
		return fieldTimestamp, ""
	case "JMSExpiration", "expires":
		return fieldExpiration, ""
	case "JMSDeliveryMode":
		return fieldDeliveryMode, ""
	case "persistent":
		return fieldPersistent, ""
	case "JMSMessageID":
		return fieldMessageID, ""
	case "JMSDestination":
		return fieldDestination, ""
	case "JMSXDeliveryCount":
		return fieldDeliveryCount, ""
	case "JMSRedelivered", "redelivered":
		return fieldRedelivered, ""
	case "JMSType":
		return fieldHeader, persistence.HeaderType
	case "JMSCorrelationID":
		return fieldHeader, persistence.HeaderCorrelationID
	case "JMSReplyTo":
		return fieldHeader, persistence.HeaderReplyTo
	}
	return fieldHeader, name
}

// fieldValue reads field f (or header hdr) of m.
func fieldValue(m *persistence.Message, dc uint32, f field, hdr string) Value {
	if dc == 0 {
		dc = m.RedeliveryCount + 1
	}
	switch f {
	case fieldPriority:
		return IntValue(int64(m.Priority))
	case fieldTimestamp:
		return IntValue(m.Timestamp)
	case fieldExpiration:
		return IntValue(m.Expires)
	case fieldDeliveryMode:
		if m.Persistent {
			return StringValue("PERSISTENT")
		}
		return StringValue("NON_PERSISTENT")
	case fieldPersistent:
		return BoolValue(m.Persistent)
	case fieldMessageID:
		if m.ID == "" {
			return Value{}
		}
		return StringValue(m.ID)
	case fieldDestination:
		if m.Dest == "" {
			return Value{}
		}
		return StringValue(m.Dest)
	case fieldDeliveryCount:
		return IntValue(int64(dc))
	case fieldRedelivered:
		return BoolValue(dc > 1)
	}
	if v, ok := m.Headers.Get(hdr); ok {
		return StringValue(v)
	}
	if len(m.Props) > 0 {
		if p, ok := m.Props.Get(hdr); ok {
			return propValue(p)
		}
	}
	return Value{}
}

// propValue is a typed property as its JMS type: integers exact numbers, float and
// double approximate ones, a boolean a boolean; a byte array is not comparable in a
// selector and reads as NULL.
func propValue(p persistence.Prop) Value {
	switch {
	case p.Kind == persistence.PropBool:
		return BoolValue(p.Bool())
	case p.Kind.IsInteger():
		return IntValue(p.Int())
	case p.Kind.IsFloat():
		return FloatValue(p.Float())
	}
	return Value{}
}
