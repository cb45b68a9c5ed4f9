package openwire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// Messages, destinations and ids between OpenWire and the broker's session surface.
//
// A message keeps what JMS gives it the way every protocol reads it: its header fields
// in the well-known headers (correlation-id, reply-to in the STOMP form of its
// destination, type, JMSXGroupID, JMSXGroupSeq), string properties as headers, the
// others as typed properties, and its body kind; a text body is stored as its UTF-8
// bytes, a bytes body as it is, the bodies of map, stream and object messages in
// OpenWire's own encoding (uncompressed). So a STOMP client reads an OpenWire message as
// ActiveMQ's STOMP converter shows it, and the other way round.

// toDestination is the broker's name of an OpenWire destination; a composite one (names
// separated by commas) yields one per name.
func toDestinations(d *ow.Destination) ([]broker.Destination, error) {
	if d == nil || d.Name == "" {
		return nil, fmt.Errorf("no destination")
	}
	if !strings.Contains(d.Name, ",") {
		one, err := toDestination(d)
		if err != nil {
			return nil, err
		}
		return []broker.Destination{one}, nil
	}
	var out []broker.Destination
	for _, name := range strings.Split(d.Name, ",") {
		one, err := toDestination(&ow.Destination{Type: d.Type, Name: name})
		if err != nil {
			return nil, err
		}
		out = append(out, one)
	}
	return out, nil
}

// toDestination is the broker's name of a single OpenWire destination. A composite
// member may name its own kind (queue://a,topic://b), as ActiveMQ allows. A temporary
// one is named by its broker-wide name (its client's), so it is Remote for the broker
// except through CreateTemp.
func toDestination(d *ow.Destination) (broker.Destination, error) {
	name := d.Name
	kind := broker.Queue
	switch d.Type {
	case ow.TypeTopic:
		kind = broker.Topic
	case ow.TypeTempQueue:
		kind = broker.TempQueue
	case ow.TypeTempTopic:
		kind = broker.TempTopic
	}
	switch {
	case strings.HasPrefix(name, "queue://"):
		kind, name = broker.Queue, name[len("queue://"):]
	case strings.HasPrefix(name, "topic://"):
		kind, name = broker.Topic, name[len("topic://"):]
	}
	if name == "" {
		return broker.Destination{}, fmt.Errorf("empty destination name")
	}
	out := broker.Destination{Kind: kind, Name: name}
	out.Remote = kind == broker.TempQueue || kind == broker.TempTopic
	return out, nil
}

// fromDestination is the OpenWire destination of a broker one.
func fromDestination(d broker.Destination) *ow.Destination {
	t := ow.TypeQueue
	switch d.Kind {
	case broker.Topic:
		t = ow.TypeTopic
	case broker.TempQueue:
		t = ow.TypeTempQueue
	case broker.TempTopic:
		t = ow.TypeTempTopic
	}
	return &ow.Destination{Type: t, Name: d.Name}
}

// fromClientName is the OpenWire destination of one in the STOMP form deliveries and
// reply-to headers carry (/queue/a, /remote-temp-queue/ID:...); nil if it is none.
func fromClientName(s string) *ow.Destination {
	d, err := broker.ParseDestination(s)
	if err != nil {
		return nil
	}
	return fromDestination(d)
}

// replyToHeader is the STOMP form of a JMSReplyTo: a temporary destination is another
// connection's (remote) for whoever reads it.
func replyToHeader(d *ow.Destination) (string, error) {
	bd, err := toDestination(d)
	if err != nil {
		return "", err
	}
	return bd.String(), nil
}

// messageID is the broker's id of an OpenWire message id: its text form, as ActiveMQ
// prints it (ID:host-40291-1700000000000-1:1:1:1:5).
func messageID(id *ow.MessageID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

// wireMessageID fills id with the OpenWire id of a broker message id. One an OpenWire
// producer gave ("ID:<connection>:<session>:<producer>:<sequence>") is made again from its
// parts, so the client's own ids come back as they were sent; the broker's ("ID:<name>-<boot
// time>-<n>") get a producer id of that prefix and sequence n, unique for the client's
// duplicate checks, with the text form beside them. Producer ids are the connection's,
// one per producer (c.wireProducers).
func (c *conn) wireMessageID(id *ow.MessageID, s string) *ow.MessageID {
	*id = ow.MessageID{TextView: s}
	if rest, seq, ok := cutNumber(s, ':'); ok {
		if rest2, prod, ok := cutNumber(rest, ':'); ok {
			if conn, sess, ok := cutNumber(rest2, ':'); ok {
				id.ProducerID = c.wireProducer(ow.ProducerID{ConnectionID: conn, SessionID: sess, Value: prod})
				id.ProducerSequenceID = seq
				id.TextView = ""
				return id
			}
		}
	}
	if conn, seq, ok := cutNumber(s, '-'); ok {
		id.ProducerID = c.wireProducer(ow.ProducerID{ConnectionID: conn})
		id.ProducerSequenceID = seq
		return id
	}
	id.ProducerID = &ow.ProducerID{ConnectionID: s}
	return id
}

// wireMessageID is the OpenWire id of a broker message id, for a connection's fallback
// (see conn.wireMessageID).
func wireMessageID(s string) *ow.MessageID {
	return (&conn{}).wireMessageID(new(ow.MessageID), s)
}

// maxWireCache bounds the connection's caches of producer ids and destinations (each is
// dropped when full: they are only shortcuts).
const maxWireCache = 1024

// wireProducer is the connection's copy of producer id p.
func (c *conn) wireProducer(p ow.ProducerID) *ow.ProducerID {
	if id := c.wireProducers[p]; id != nil {
		return id
	}
	if c.wireProducers == nil || len(c.wireProducers) >= maxWireCache {
		c.wireProducers = make(map[ow.ProducerID]*ow.ProducerID)
	}
	id := new(ow.ProducerID)
	*id = p
	c.wireProducers[p] = id
	return id
}

// wireDestination is the OpenWire destination of one in the STOMP form (fromClientName),
// the connection's for a name it saw before.
func (c *conn) wireDestination(name string) *ow.Destination {
	if d := c.wireDests[name]; d != nil {
		return d
	}
	d := fromClientName(name)
	if d == nil {
		return nil
	}
	if c.wireDests == nil || len(c.wireDests) >= maxWireCache {
		c.wireDests = make(map[string]*ow.Destination)
	}
	c.wireDests[name] = d
	return d
}

// cutNumber splits s at its last sep into what comes before and the decimal number
// after it.
func cutNumber(s string, sep byte) (string, int64, bool) {
	i := strings.LastIndexByte(s, sep)
	if i <= 0 || i == len(s)-1 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// headerOriginalDestination is where a dead-lettered message was sent (ActiveMQ's
// originalDestination field), in the STOMP form.
const headerOriginalDestination = "original-destination"

// bodyKinds maps OpenWire's message types to the broker's body kinds.
var bodyKinds = map[byte]broker.BodyKind{
	ow.TypeMessage:       broker.BodyPlain,
	ow.TypeTextMessage:   broker.BodyText,
	ow.TypeBytesMessage:  broker.BodyBytes,
	ow.TypeMapMessage:    broker.BodyMap,
	ow.TypeStreamMessage: broker.BodyStream,
	ow.TypeObjectMessage: broker.BodyObject,
}

// toMessage is the broker's message of an OpenWire one a producer sent.
func toMessage(m *ow.Message) (*broker.Message, error) {
	kind, ok := bodyKinds[m.Type]
	if !ok {
		return nil, fmt.Errorf("message type %d is not supported", m.Type)
	}
	out := &broker.Message{
		ID: messageID(m.MessageID), Kind: kind, Persistent: m.Persistent, Priority: m.Priority,
		Expires: m.Expiration, Timestamp: m.Timestamp,
	}
	if out.Priority > 9 {
		out.Priority = 9
	}
	switch kind {
	case broker.BodyPlain:
	case broker.BodyText:
		text, _, err := m.TextBytes()
		if err != nil {
			return nil, fmt.Errorf("text body: %w", err)
		}
		out.Body = text
	default:
		body, err := m.Body()
		if err != nil {
			return nil, fmt.Errorf("%s body: %w", kind, err)
		}
		out.Body = body
	}
	var hs broker.Headers
	if m.CorrelationID != "" {
		hs = appendHeader(hs, broker.HeaderCorrelationID, m.CorrelationID)
	}
	if m.ReplyTo != nil {
		r, err := replyToHeader(m.ReplyTo)
		if err != nil {
			return nil, fmt.Errorf("reply-to: %w", err)
		}
		hs = appendHeader(hs, broker.HeaderReplyTo, r)
	}
	if m.JMSType != "" {
		hs = appendHeader(hs, broker.HeaderType, m.JMSType)
	}
	if m.GroupID != "" {
		hs = appendHeader(hs, broker.HeaderGroupID, m.GroupID)
		hs = appendHeader(hs, broker.HeaderGroupSeq, strconv.Itoa(int(m.GroupSequence)))
	}
	fixed := len(hs)
	var names nameSet
	repeated := false
	for pass := 0; pass < 2; pass++ {
		src := m
		if pass == 1 {
			if !repeated {
				break
			}
			// A name the map repeats (Java's client never does): the last value wins, as
			// in the map Java would read; the map's own encoding has each name once.
			props, err := m.Properties()
			if err != nil {
				return nil, fmt.Errorf("properties: %w", err)
			}
			src = &ow.Message{}
			if err := src.SetProperties(props); err != nil {
				return nil, fmt.Errorf("properties: %w", err)
			}
			hs, out.Props = hs[:fixed], nil
		}
		it := src.PropIter()
		for it.Next() {
			name, v := it.Name(), it.Value()
			repeated = !names.add(name) || repeated
			if v.Type == ow.PropString || v.Type == ow.PropChar {
				hs = appendHeader(hs, name, propString(v))
				continue
			}
			if v.Type == ow.PropNull {
				continue
			}
			p, ok := brokerProp(name, v)
			if !ok {
				return nil, fmt.Errorf("property %s: a %T is not a JMS property type", name, v.Other())
			}
			if out.Props == nil {
				out.Props = make([]broker.Prop, 0, 4)
			}
			out.Props = append(out.Props, p)
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
	}
	out.Headers = hs
	return out, nil
}

// appendHeader appends a header, making room for a few at the first.
func appendHeader(hs broker.Headers, k, v string) broker.Headers {
	if hs == nil {
		hs = make(broker.Headers, 0, 8)
	}
	return append(hs, k, v)
}

// propString is a string property's value; a char's (JMS has no char property) as its
// string.
func propString(v ow.PropValue) string {
	if v.Type == ow.PropChar {
		return string(rune(v.Char()))
	}
	return v.Str()
}

// brokerProp is the broker's typed property of a value that is not a string; ok is false
// for a map or a list, which JMS properties cannot be.
func brokerProp(name string, v ow.PropValue) (broker.Prop, bool) {
	switch v.Type {
	case ow.PropBool:
		return broker.BoolProp(name, v.Bool()), true
	case ow.PropByte:
		return broker.IntProp(name, broker.PropByte, v.Int()), true
	case ow.PropShort:
		return broker.IntProp(name, broker.PropShort, v.Int()), true
	case ow.PropInt:
		return broker.IntProp(name, broker.PropInt, v.Int()), true
	case ow.PropLong:
		return broker.IntProp(name, broker.PropLong, v.Int()), true
	case ow.PropFloat:
		return broker.FloatProp(name, v.Float32()), true
	case ow.PropDouble:
		return broker.DoubleProp(name, v.Float64()), true
	case ow.PropBytes:
		return broker.BytesProp(name, v.Bytes()), true
	}
	return broker.Prop{}, false
}

// nameSet holds the property names seen so far: a linear scan while they are few, a
// map beyond (a message may have thousands).
type nameSet struct {
	few  [16]string
	n    int
	many map[string]struct{}
}

// add adds name and reports whether it was new.
func (s *nameSet) add(name string) bool {
	if s.many != nil {
		if _, ok := s.many[name]; ok {
			return false
		}
		s.many[name] = struct{}{}
		return true
	}
	for _, n := range s.few[:s.n] {
		if n == name {
			return false
		}
	}
	if s.n == len(s.few) {
		s.many = make(map[string]struct{}, 2*len(s.few))
		for _, n := range s.few {
			s.many[n] = struct{}{}
		}
		s.many[name] = struct{}{}
		return true
	}
	s.few[s.n] = name
	s.n++
	return true
}

// wireMessage is a message in the client's form with its id: what fromMessage fills.
type wireMessage struct {
	ow.Message
	id ow.MessageID
}

// fromMessage is the OpenWire message of a broker message delivered from dest (its
// STOMP form). It is the connection's own (c.out, a text body in c.text), valid until
// the next call: it is for writing at once.
func (c *conn) fromMessage(m *broker.Message, dest string) (*ow.Message, error) {
	c.out = wireMessage{}
	out := &c.out.Message
	out.MessageID = c.wireMessageID(&c.out.id, m.ID)
	out.Persistent, out.Priority, out.Expiration, out.Timestamp = m.Persistent, m.Priority, m.Expires, m.Timestamp
	out.Destination = c.wireDestination(dest)
	out.ProducerID = out.MessageID.ProducerID
	kind := m.Kind
	if kind == broker.BodyPlain && len(m.Body) > 0 {
		kind = broker.BodyText // a body without a kind: the broker's own messages (advisories)
	}
	if v, _ := m.Headers.Get("transformation"); v == advisoryTransformation {
		if ds := advisoryData(m.Body); ds != nil {
			out.DataStructure, kind = ds, broker.BodyPlain
		}
	}
	switch kind {
	case broker.BodyText:
		out.Type = ow.TypeTextMessage
		if cap(c.text) > 64<<10 {
			c.text = nil // a large text once does not stay
		}
		c.text = ow.AppendText(c.text[:0], m.Body)
		out.Content = c.text
	case broker.BodyBytes:
		out.Type = ow.TypeBytesMessage
		out.SetBody(m.Body, false)
	case broker.BodyMap:
		out.Type = ow.TypeMapMessage
		out.Content = m.Body
	case broker.BodyStream:
		out.Type = ow.TypeStreamMessage
		out.Content = m.Body
	case broker.BodyObject:
		out.Type = ow.TypeObjectMessage
		out.Content = m.Body
	default:
		out.Type = ow.TypeMessage
	}
	// The properties, each name once: a typed property before a header of the same
	// name, the last of typed ones and the first of headers (what the client would read
	// from a map built in that order).
	var names nameSet
	c.props.Reset()
	for i := len(m.Props) - 1; i >= 0; i-- {
		if p := m.Props[i]; names.add(p.Name) {
			c.encodeProp(p)
		}
	}
	hs := m.Headers
	for i := 0; i+1 < len(hs); i += 2 {
		k, v := hs[i], hs[i+1]
		switch k {
		case broker.HeaderCorrelationID:
			out.CorrelationID = v
			continue
		case broker.HeaderReplyTo:
			if d := c.wireDestination(v); d != nil {
				out.ReplyTo = d
				continue
			}
		case broker.HeaderType:
			out.JMSType = v
			continue
		case broker.HeaderGroupID:
			out.GroupID = v
			continue
		case broker.HeaderGroupSeq:
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				out.GroupSequence = int32(n)
				continue
			}
		case broker.HeaderUserID:
			out.UserID = v
			continue
		case headerOriginalDestination:
			if d := c.wireDestination(v); d != nil {
				out.OriginalDestination = d
				continue
			}
		}
		if names.add(k) {
			c.props.String(k, v)
		}
	}
	props, err := c.props.Finish()
	if err != nil {
		return nil, err
	}
	out.MarshalledProperties = props
	return out, nil
}

// encodeProp writes a typed property into the properties being encoded.
func (c *conn) encodeProp(p broker.Prop) {
	e := &c.props
	switch p.Kind {
	case broker.PropBool:
		e.Bool(p.Name, p.Bool())
	case broker.PropByte:
		e.Byte(p.Name, int8(p.Int()))
	case broker.PropShort:
		e.Short(p.Name, int16(p.Int()))
	case broker.PropInt:
		e.Int(p.Name, int32(p.Int()))
	case broker.PropLong:
		e.Long(p.Name, p.Int())
	case broker.PropFloat:
		e.Float(p.Name, float32(p.Float()))
	case broker.PropDouble:
		e.Double(p.Name, p.Float())
	case broker.PropBytes:
		e.Bytes(p.Name, p.Bytes)
	}
}
