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

// wireMessageID is the OpenWire id of a broker message id. One an OpenWire producer
// gave ("ID:<connection>:<session>:<producer>:<sequence>") is made again from its parts,
// so the client's own ids come back as they were sent; the broker's ("ID:<name>-<boot
// time>-<n>") get a producer id of that prefix and sequence n, unique for the client's
// duplicate checks, with the text form beside them.
func wireMessageID(s string) *ow.MessageID {
	id := &ow.MessageID{TextView: s}
	if rest, seq, ok := cutNumber(s, ':'); ok {
		if rest2, prod, ok := cutNumber(rest, ':'); ok {
			if conn, sess, ok := cutNumber(rest2, ':'); ok {
				id.ProducerID = &ow.ProducerID{ConnectionID: conn, SessionID: sess, Value: prod}
				id.ProducerSequenceID = seq
				id.TextView = ""
				return id
			}
		}
	}
	if conn, seq, ok := cutNumber(s, '-'); ok {
		id.ProducerID = &ow.ProducerID{ConnectionID: conn}
		id.ProducerSequenceID = seq
		return id
	}
	id.ProducerID = &ow.ProducerID{ConnectionID: s}
	return id
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
		text, _, err := m.Text()
		if err != nil {
			return nil, fmt.Errorf("text body: %w", err)
		}
		out.Body = []byte(text)
	case broker.BodyBytes:
		body, err := m.Body()
		if err != nil {
			return nil, fmt.Errorf("bytes body: %w", err)
		}
		out.Body = body
	default:
		body, err := m.Body()
		if err != nil {
			return nil, fmt.Errorf("%s body: %w", kind, err)
		}
		out.Body = body
	}
	hs := make(broker.Headers, 0, 8)
	if m.CorrelationID != "" {
		hs = append(hs, broker.HeaderCorrelationID, m.CorrelationID)
	}
	if m.ReplyTo != nil {
		r, err := replyToHeader(m.ReplyTo)
		if err != nil {
			return nil, fmt.Errorf("reply-to: %w", err)
		}
		hs = append(hs, broker.HeaderReplyTo, r)
	}
	if m.JMSType != "" {
		hs = append(hs, broker.HeaderType, m.JMSType)
	}
	if m.GroupID != "" {
		hs = append(hs, broker.HeaderGroupID, m.GroupID)
		hs = append(hs, broker.HeaderGroupSeq, strconv.Itoa(int(m.GroupSequence)))
	}
	props, err := m.Properties()
	if err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	for name, v := range props {
		switch v := v.(type) {
		case string:
			hs = append(hs, name, v)
		case bool:
			out.Props = append(out.Props, broker.BoolProp(name, v))
		case int8:
			out.Props = append(out.Props, broker.IntProp(name, broker.PropByte, int64(v)))
		case int16:
			out.Props = append(out.Props, broker.IntProp(name, broker.PropShort, int64(v)))
		case int32:
			out.Props = append(out.Props, broker.IntProp(name, broker.PropInt, int64(v)))
		case int64:
			out.Props = append(out.Props, broker.IntProp(name, broker.PropLong, v))
		case float32:
			out.Props = append(out.Props, broker.FloatProp(name, v))
		case float64:
			out.Props = append(out.Props, broker.DoubleProp(name, v))
		case []byte:
			out.Props = append(out.Props, broker.BytesProp(name, v))
		case ow.Char: // JMS has no char property; kept as its string
			hs = append(hs, name, string(rune(v)))
		case nil:
		default:
			return nil, fmt.Errorf("property %s: a %T is not a JMS property type", name, v)
		}
	}
	out.Headers = hs
	return out, nil
}

// fromMessage is the OpenWire message of a broker message delivered from dest (its
// STOMP form).
func fromMessage(m *broker.Message, dest string) (*ow.Message, error) {
	out := &ow.Message{
		MessageID: wireMessageID(m.ID), Persistent: m.Persistent, Priority: m.Priority,
		Expiration: m.Expires, Timestamp: m.Timestamp, Destination: fromClientName(dest),
	}
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
		out.SetText(string(m.Body), false)
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
	var props map[string]any
	hs := m.Headers
	for i := 0; i+1 < len(hs); i += 2 {
		k, v := hs[i], hs[i+1]
		switch k {
		case broker.HeaderCorrelationID:
			out.CorrelationID = v
			continue
		case broker.HeaderReplyTo:
			if d := fromClientName(v); d != nil {
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
			if d := fromClientName(v); d != nil {
				out.OriginalDestination = d
				continue
			}
		}
		if props == nil {
			props = make(map[string]any, len(hs)/2+len(m.Props))
		}
		if _, dup := props[k]; !dup {
			props[k] = v
		}
	}
	for _, p := range m.Props {
		if props == nil {
			props = make(map[string]any, len(m.Props))
		}
		props[p.Name] = propValue(p)
	}
	if len(props) > 0 {
		if err := out.SetProperties(props); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// propValue is a typed property's value as the codec writes it.
func propValue(p broker.Prop) any {
	switch p.Kind {
	case broker.PropBool:
		return p.Bool()
	case broker.PropByte:
		return int8(p.Int())
	case broker.PropShort:
		return int16(p.Int())
	case broker.PropInt:
		return int32(p.Int())
	case broker.PropLong:
		return p.Int()
	case broker.PropFloat:
		return float32(p.Float())
	case broker.PropDouble:
		return p.Float()
	case broker.PropBytes:
		return p.Bytes
	}
	return nil
}
