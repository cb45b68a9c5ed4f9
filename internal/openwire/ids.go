package openwire

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// ConnectionID names a connection, e.g. "ID:host-40291-1700000000000-1:1".
type ConnectionID struct{ Value string }

// SessionID names a session of a connection.
type SessionID struct {
	ConnectionID string
	Value        int64
}

// ConsumerID names a consumer of a session.
type ConsumerID struct {
	ConnectionID string
	SessionID    int64
	Value        int64
}

// ProducerID names a producer of a session.
type ProducerID struct {
	ConnectionID string
	Value        int64
	SessionID    int64
}

// BrokerID names a broker.
type BrokerID struct{ Value string }

// MessageID names a message: its producer and the producer's sequence number, or a text
// form (TextView) that a client set explicitly.
type MessageID struct {
	TextView           string // since version 10
	ProducerID         *ProducerID
	ProducerSequenceID int64
	BrokerSequenceID   int64
}

// TransactionID is a LocalTransactionID or an XATransactionID.
type TransactionID interface {
	DataStructure
	marshaler
	String() string
}

// LocalTransactionID names a local (JMS session) transaction.
type LocalTransactionID struct {
	Value        int64
	ConnectionID *ConnectionID
}

// XATransactionID is an XA Xid.
type XATransactionID struct {
	FormatID            int32
	GlobalTransactionID []byte
	BranchQualifier     []byte
}

// Destination is a queue, topic, temporary queue or temporary topic (Type is one of
// TypeQueue, TypeTopic, TypeTempQueue, TypeTempTopic). A composite destination has
// comma-separated names.
type Destination struct {
	Type byte
	Name string
}

func (*ConnectionID) DataType() byte       { return TypeConnectionID }
func (*SessionID) DataType() byte          { return TypeSessionID }
func (*ConsumerID) DataType() byte         { return TypeConsumerID }
func (*ProducerID) DataType() byte         { return TypeProducerID }
func (*BrokerID) DataType() byte           { return TypeBrokerID }
func (*MessageID) DataType() byte          { return TypeMessageID }
func (*LocalTransactionID) DataType() byte { return TypeLocalTransactionID }
func (*XATransactionID) DataType() byte    { return TypeXATransactionID }
func (d *Destination) DataType() byte      { return d.Type }

// The String forms are those ActiveMQ prints.

func (id ConnectionID) String() string { return id.Value }
func (id BrokerID) String() string     { return id.Value }
func (id SessionID) String() string {
	return id.ConnectionID + ":" + strconv.FormatInt(id.Value, 10)
}
func (id ConsumerID) String() string {
	return id.ConnectionID + ":" + strconv.FormatInt(id.SessionID, 10) + ":" + strconv.FormatInt(id.Value, 10)
}
func (id ProducerID) String() string {
	return id.ConnectionID + ":" + strconv.FormatInt(id.SessionID, 10) + ":" + strconv.FormatInt(id.Value, 10)
}

func (id MessageID) String() string {
	if id.TextView != "" {
		if strings.HasPrefix(id.TextView, "ID:") {
			return id.TextView
		}
		return "ID:" + id.TextView
	}
	if id.ProducerID == nil {
		return "null:" + strconv.FormatInt(id.ProducerSequenceID, 10)
	}
	// One allocation: a message id is made for every message and every ack.
	p := id.ProducerID
	var buf [96]byte
	b := append(buf[:0], p.ConnectionID...)
	b = strconv.AppendInt(append(b, ':'), p.SessionID, 10)
	b = strconv.AppendInt(append(b, ':'), p.Value, 10)
	b = strconv.AppendInt(append(b, ':'), id.ProducerSequenceID, 10)
	return string(b)
}

func (id *LocalTransactionID) String() string {
	c := "null"
	if id.ConnectionID != nil {
		c = id.ConnectionID.Value
	}
	return "TX:" + c + ":" + strconv.FormatInt(id.Value, 10)
}

func (id *XATransactionID) String() string {
	return "XID:[" + strconv.Itoa(int(id.FormatID)) + ",globalId=" + xidForm(id.FormatID, id.GlobalTransactionID) +
		",branchId=" + xidForm(id.FormatID, id.BranchQualifier) + "]"
}

// xidForm prints an Xid part as ActiveMQ does: Arjuna's (format 131077) as its fields in
// hexadecimal (two longs, three ints; on running short, what was printed so far followed by
// the default form), any other as the hexadecimal of each signed byte.
func xidForm(format int32, b []byte) string {
	var s strings.Builder
	if format == 131077 {
		widths := []int{8, 8, 4, 4, 4}
		off := 0
		for i, w := range widths {
			if off+w > len(b) {
				break
			}
			var v int64
			if w == 8 {
				v = int64(binary.BigEndian.Uint64(b[off:]))
			} else {
				v = int64(int32(binary.BigEndian.Uint32(b[off:])))
			}
			off += w
			s.WriteString(strconv.FormatInt(v, 16))
			if i == len(widths)-1 {
				return s.String()
			}
			s.WriteByte(':')
		}
	}
	for _, c := range b {
		s.WriteString(strconv.FormatUint(uint64(uint32(int32(int8(c)))), 16))
	}
	return s.String()
}

// Destination prefixes as ActiveMQ qualifies names.
const (
	QueuePrefix     = "queue://"
	TopicPrefix     = "topic://"
	TempQueuePrefix = "temp-queue://"
	TempTopicPrefix = "temp-topic://"
)

func (d Destination) String() string {
	if strings.Contains(d.Name, ",") {
		return d.Name
	}
	switch d.Type {
	case TypeQueue:
		return QueuePrefix + d.Name
	case TypeTopic:
		return TopicPrefix + d.Name
	case TypeTempQueue:
		return TempQueuePrefix + d.Name
	case TypeTempTopic:
		return TempTopicPrefix + d.Name
	}
	return d.Name
}

// IsTopic reports whether d is a topic or a temporary topic.
func (d Destination) IsTopic() bool { return d.Type == TypeTopic || d.Type == TypeTempTopic }

// IsTemporary reports whether d is a temporary queue or topic.
func (d Destination) IsTemporary() bool { return d.Type == TypeTempQueue || d.Type == TypeTempTopic }

func (id *ConnectionID) marshal(e *encoder)   { e.str(id.Value) }
func (id *ConnectionID) unmarshal(d *decoder) { id.Value = d.str() }
func (id *BrokerID) marshal(e *encoder)       { e.str(id.Value) }
func (id *BrokerID) unmarshal(d *decoder)     { id.Value = d.str() }
func (x *Destination) marshal(e *encoder)     { e.str(x.Name) }
func (x *Destination) unmarshal(d *decoder)   { x.Name = d.str() }

func (id *SessionID) marshal(e *encoder) {
	e.str(id.ConnectionID)
	e.long(id.Value)
}

func (id *SessionID) unmarshal(d *decoder) {
	id.ConnectionID = d.str()
	id.Value = d.long()
}

func (id *ConsumerID) marshal(e *encoder) {
	e.str(id.ConnectionID)
	e.long(id.SessionID)
	e.long(id.Value)
}

func (id *ConsumerID) unmarshal(d *decoder) {
	id.ConnectionID = d.str()
	id.SessionID = d.long()
	id.Value = d.long()
}

func (id *ProducerID) marshal(e *encoder) {
	e.str(id.ConnectionID)
	e.long(id.Value)
	e.long(id.SessionID)
}

func (id *ProducerID) unmarshal(d *decoder) {
	id.ConnectionID = d.str()
	id.Value = d.long()
	id.SessionID = d.long()
}

func (id *MessageID) marshal(e *encoder) {
	if e.version >= 10 {
		e.str(id.TextView)
	}
	e.cached(opt(id.ProducerID))
	e.long(id.ProducerSequenceID)
	e.long(id.BrokerSequenceID)
}

func (id *MessageID) unmarshal(d *decoder) {
	if d.version >= 10 {
		id.TextView = d.str()
	}
	id.ProducerID = as[*ProducerID](d, d.cached())
	id.ProducerSequenceID = d.long()
	id.BrokerSequenceID = d.long()
}

func (id *LocalTransactionID) marshal(e *encoder) {
	e.long(id.Value)
	e.cached(opt(id.ConnectionID))
}

func (id *LocalTransactionID) unmarshal(d *decoder) {
	id.Value = d.long()
	id.ConnectionID = as[*ConnectionID](d, d.cached())
}

func (id *XATransactionID) marshal(e *encoder) {
	e.i32(id.FormatID)
	e.bytes(id.GlobalTransactionID)
	e.bytes(id.BranchQualifier)
}

func (id *XATransactionID) unmarshal(d *decoder) {
	id.FormatID = d.i32()
	id.GlobalTransactionID = d.bytes()
	id.BranchQualifier = d.bytes()
}

// cacheKey identifies an id or destination for the marshalling cache by value. It is a
// plain struct, not an interface, so that a lookup allocates nothing: typ is the data type
// (never 0 for a cached value), s and a, b the fields of the id.
type cacheKey struct {
	typ  byte
	s    string
	a, b int64
	set  bool // a LocalTransactionID's connection id is present (s)
}

// keyOf returns the cache key of x; ok is false when x is not cached by value (XA ids
// hold slices).
func keyOf(x marshaler) (k cacheKey, ok bool) {
	switch v := x.(type) {
	case *ConnectionID:
		return cacheKey{typ: TypeConnectionID, s: v.Value}, true
	case *SessionID:
		return cacheKey{typ: TypeSessionID, s: v.ConnectionID, a: v.Value}, true
	case *ConsumerID:
		return cacheKey{typ: TypeConsumerID, s: v.ConnectionID, a: v.SessionID, b: v.Value}, true
	case *ProducerID:
		return cacheKey{typ: TypeProducerID, s: v.ConnectionID, a: v.SessionID, b: v.Value}, true
	case *BrokerID:
		return cacheKey{typ: TypeBrokerID, s: v.Value}, true
	case *Destination:
		return cacheKey{typ: v.Type, s: v.Name}, true
	case *LocalTransactionID:
		k := cacheKey{typ: TypeLocalTransactionID, a: v.Value}
		if v.ConnectionID != nil {
			k.s, k.set = v.ConnectionID.Value, true
		}
		return k, true
	}
	return cacheKey{}, false
}
