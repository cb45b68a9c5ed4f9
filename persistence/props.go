package persistence

import (
	"math"
	"strconv"
	"strings"
)

// BodyKind is the JMS type of a message's body. A store keeps it; the broker does not
// interpret the body by it.
type BodyKind uint8

const (
	// BodyPlain is a javax.jms.Message: no body type. It is the zero value, and what a
	// message stored by a version without body kinds reads as.
	BodyPlain BodyKind = iota
	// BodyText is a TextMessage: the body is UTF-8 text. STOMP: a SEND without
	// content-length (or with amq-msg-type:text).
	BodyText
	// BodyBytes is a BytesMessage. STOMP: a SEND with content-length (or with
	// amq-msg-type:bytes).
	BodyBytes
	// BodyMap is a MapMessage, its body the map as the sending protocol encoded it.
	BodyMap
	// BodyStream is a StreamMessage.
	BodyStream
	// BodyObject is an ObjectMessage.
	BodyObject

	maxBodyKind = BodyObject
)

var bodyKindNames = [...]string{"plain", "text", "bytes", "map", "stream", "object"}

func (k BodyKind) String() string {
	if k <= maxBodyKind {
		return bodyKindNames[k]
	}
	return "BodyKind(" + strconv.Itoa(int(k)) + ")"
}

// PropKind is the JMS type of a typed property.
type PropKind uint8

const (
	// PropString is a string property: Message.Property reports a header so. It never
	// appears in Props, since string properties are Headers.
	PropString PropKind = iota
	PropBool            // Num: 0 or 1
	PropByte            // Num: the int64 value's bits (int8 range)
	PropShort           // Num: the int64 value's bits (int16 range)
	PropInt             // Num: the int64 value's bits (int32 range)
	PropLong            // Num: the int64 value's bits
	PropFloat           // Num: the float64 bits of the float32 value
	PropDouble          // Num: the float64 bits
	PropBytes           // Bytes: the byte array

	maxPropKind = PropBytes
)

var propKindNames = [...]string{"string", "boolean", "byte", "short", "int", "long", "float", "double", "bytes"}

func (k PropKind) String() string {
	if k <= maxPropKind {
		return propKindNames[k]
	}
	return "PropKind(" + strconv.Itoa(int(k)) + ")"
}

// IsInteger reports whether k is byte, short, int or long: an exact number.
func (k PropKind) IsInteger() bool { return k >= PropByte && k <= PropLong }

// IsFloat reports whether k is float or double: an approximate number.
func (k PropKind) IsFloat() bool { return k == PropFloat || k == PropDouble }

// Prop is one typed property: a name and a value that is not a string (strings are
// Headers). The value is in Num, or Bytes for a byte array; build one with BoolProp,
// IntProp, FloatProp, DoubleProp or BytesProp.
type Prop struct {
	Name  string
	Kind  PropKind
	Num   uint64
	Bytes []byte
}

// propSize is what a Prop costs in a Props slice, for Message.Size.
const propSize = 56

// BoolProp returns a boolean property.
func BoolProp(name string, v bool) Prop {
	p := Prop{Name: name, Kind: PropBool}
	if v {
		p.Num = 1
	}
	return p
}

// IntProp returns an integer property of kind k (PropByte, PropShort, PropInt or
// PropLong); v should be in k's range.
func IntProp(name string, k PropKind, v int64) Prop {
	return Prop{Name: name, Kind: k, Num: uint64(v)}
}

// FloatProp returns a float (32-bit) property.
func FloatProp(name string, v float32) Prop {
	return Prop{Name: name, Kind: PropFloat, Num: math.Float64bits(float64(v))}
}

// DoubleProp returns a double property.
func DoubleProp(name string, v float64) Prop {
	return Prop{Name: name, Kind: PropDouble, Num: math.Float64bits(v)}
}

// BytesProp returns a byte array property; it keeps v.
func BytesProp(name string, v []byte) Prop {
	return Prop{Name: name, Kind: PropBytes, Bytes: v}
}

// Bool is the value of a boolean property.
func (p Prop) Bool() bool { return p.Num != 0 }

// Int is the value of an integer property.
func (p Prop) Int() int64 { return int64(p.Num) }

// Float is the value of a float or double property.
func (p Prop) Float() float64 { return math.Float64frombits(p.Num) }

// Text returns the value as Java's String.valueOf writes it, which is how ActiveMQ's
// STOMP converter turns a JMS property into a header: "true", "42", "1.5", "1.0E10".
// A byte array has no useful text (Java writes its identity, "[B@1b6d3586"): ok is
// false for it.
func (p Prop) Text() (s string, ok bool) {
	switch {
	case p.Kind == PropBool:
		return strconv.FormatBool(p.Bool()), true
	case p.Kind.IsInteger():
		return strconv.FormatInt(p.Int(), 10), true
	case p.Kind == PropFloat:
		return javaFloat(p.Float(), 32), true
	case p.Kind == PropDouble:
		return javaFloat(p.Float(), 64), true
	}
	return "", false
}

// javaFloat formats f as Java's Double.toString (bits 64) or Float.toString (bits 32)
// do: the shortest digits that read back as f, in plain notation with at least one
// digit after the point for 1e-3 <= |f| < 1e7, in Java's "computerized scientific
// notation" (d.dddE±n, no '+') otherwise; "NaN", "Infinity", "-Infinity".
func javaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, bits) // "-1.2345e+07", "1e-05"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp) // "+07" -> 7, "-05" -> -5
	return mant + "E" + strconv.Itoa(e)
}

// Props is a message's typed properties, in the order they were set; a name occurs
// once.
type Props []Prop

// Get returns the property called name.
func (ps Props) Get(name string) (Prop, bool) {
	for i := range ps {
		if ps[i].Name == name {
			return ps[i], true
		}
	}
	return Prop{}, false
}

// Clone returns a deep copy of ps, every byte array in one allocation; nil for none.
func (ps Props) Clone() Props {
	if len(ps) == 0 {
		return nil
	}
	c := append(Props(nil), ps...)
	n := 0
	for _, p := range ps {
		n += len(p.Bytes)
	}
	if n == 0 {
		return c
	}
	buf := make([]byte, 0, n)
	for i := range c {
		if c[i].Bytes != nil {
			start := len(buf)
			buf = append(buf, c[i].Bytes...)
			c[i].Bytes = buf[start:len(buf):len(buf)]
		}
	}
	return c
}

// Property returns the property called name from either list: a header as kind
// PropString with its value in s, a typed property as p.
func (m *Message) Property(name string) (p Prop, s string, ok bool) {
	if v, ok := m.Headers.Get(name); ok {
		return Prop{Name: name, Kind: PropString}, v, true
	}
	p, ok = m.Props.Get(name)
	return p, "", ok
}

// Typed reports whether m has anything of the typed part (see AppendTyped): a body
// kind other than plain, or typed properties. A store writes the typed part only then,
// so a message without it is stored as by a version without it.
func (m *Message) Typed() bool { return m.Kind != BodyPlain || len(m.Props) > 0 }

// The well-known JMS headers. They stay in Headers, where STOMP carries them; the
// accessors below read them the same way for every protocol.
const (
	HeaderCorrelationID = "correlation-id" // JMSCorrelationID
	HeaderReplyTo       = "reply-to"       // JMSReplyTo, as the protocol names the destination
	HeaderType          = "type"           // JMSType
	HeaderGroupID       = "JMSXGroupID"
	HeaderGroupSeq      = "JMSXGroupSeq"
)

// CorrelationID is JMSCorrelationID, "" when not set.
func (m *Message) CorrelationID() string { v, _ := m.Headers.Get(HeaderCorrelationID); return v }

// ReplyTo is JMSReplyTo as the sender named it, "" when not set.
func (m *Message) ReplyTo() string { v, _ := m.Headers.Get(HeaderReplyTo); return v }

// Type is JMSType, "" when not set.
func (m *Message) Type() string { v, _ := m.Headers.Get(HeaderType); return v }

// GroupID is JMSXGroupID, "" when not set.
func (m *Message) GroupID() string { v, _ := m.Headers.Get(HeaderGroupID); return v }

// GroupSeq is JMSXGroupSeq: the header as a decimal integer, or an integer typed
// property of that name; ok is false when neither is set or the header is not an
// integer. A negative sequence closes the group.
func (m *Message) GroupSeq() (seq int64, ok bool) {
	if v, found := m.Headers.Get(HeaderGroupSeq); found {
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	if p, found := m.Props.Get(HeaderGroupSeq); found && p.Kind.IsInteger() {
		return p.Int(), true
	}
	return 0, false
}
