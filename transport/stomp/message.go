package stomp

import (
	"strconv"
	"strings"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/internal/stompcodec"
)

// Headers a client may not set on SEND (the broker sets them, or they belong to the
// frame rather than the message), as ActiveMQ strips them.
func reservedSendHeader(k string) bool {
	switch k {
	case "destination", "receipt", "transaction", "content-length", "message-id",
		"redelivered", "subscription", "ack", "JMSXUserID",
		"persistent", "priority", "expires", "timestamp":
		return true
	}
	return false
}

// messageFromSend builds the stored message from a SEND frame. The first occurrence of a
// repeated header wins. Its Kind is ActiveMQ's mapping (see bodyKind); every header is a
// string property.
func messageFromSend(f *frame.Frame) (*broker.Message, error) {
	var looked int
	return buildMessage(f, &looked)
}

// buildMessage is messageFromSend, adding to *looked the names compared or looked up to
// find the repeated ones: the work that TestMessageFromSendLinearInHeaders counts.
func buildMessage(f *frame.Frame, looked *int) (*broker.Message, error) {
	m := &broker.Message{Priority: 4, Body: f.Body}
	n := f.Header.Len()
	hs := make(broker.Headers, 0, 2*n)
	seen := newHeaderSet(n)
	hasLength, msgType := false, ""
	for i := 0; i < n; i++ {
		k, v := f.Header.GetAt(i)
		if seen.repeated(f.Header, i, k, looked) {
			continue
		}
		switch k {
		case "content-length":
			hasLength = true
			continue
		case headerMsgType:
			msgType = v // kept as a header too, as before
		case "persistent":
			m.Persistent = v == "true"
			continue
		case "priority":
			p, err := strconv.Atoi(v)
			if err != nil || p < 0 || p > 9 {
				return nil, requestError("invalid priority " + strconv.Quote(v) + ": an integer 0-9")
			}
			m.Priority = uint8(p)
			continue
		case "expires":
			e, err := strconv.ParseInt(v, 10, 64)
			if err != nil || e < 0 {
				return nil, requestError("invalid expires " + strconv.Quote(v) + ": milliseconds since the epoch, 0 for never")
			}
			m.Expires = e
			continue
		case "timestamp":
			if ts, err := strconv.ParseInt(v, 10, 64); err == nil && ts > 0 {
				m.Timestamp = ts
			}
			continue
		}
		if reservedSendHeader(k) {
			continue
		}
		hs = append(hs, k, v)
	}
	m.Headers = hs
	m.Kind = bodyKind(hasLength, msgType)
	return m, nil
}

// headerMsgType is ActiveMQ's SEND header that chooses the JMS type of the body.
const headerMsgType = "amq-msg-type"

// bodyKind is ActiveMQ's mapping of a SEND to a JMS message type (its
// LegacyFrameTranslator): amq-msg-type "text" or "bytes" (any case) decides; otherwise a
// SEND with content-length is a BytesMessage and one without a TextMessage. ActiveMQ
// refuses another amq-msg-type value with an ERROR; this broker accepted such SENDs
// before it kept kinds and still does, by the content-length rule.
func bodyKind(hasLength bool, msgType string) broker.BodyKind {
	switch {
	case strings.EqualFold(msgType, "text"):
		return broker.BodyText
	case strings.EqualFold(msgType, "bytes"), hasLength:
		return broker.BodyBytes
	}
	return broker.BodyText
}

// smallHeaderCount is the most headers a frame may have for repeated names to be found by
// scanning the names before each one: for a typical SEND that is cheaper than a map and
// allocates nothing. Above it a set keeps the check O(1) per header, so that a frame with
// the maximum number of headers (1000 by default) costs no quadratic scan.
const smallHeaderCount = 16

// headerSet finds the repeated names among a frame's headers, visited in order.
type headerSet struct {
	names map[string]struct{} // nil for a small frame: repeated scans instead
}

func newHeaderSet(n int) headerSet {
	if n <= smallHeaderCount {
		return headerSet{}
	}
	return headerSet{names: make(map[string]struct{}, n)}
}

// repeated reports whether key, the name of header i of h, occurs before index i, and
// adds the names it compared or looked up to *looked. It is called for every i in
// increasing order.
func (s headerSet) repeated(h *frame.Header, i int, key string, looked *int) bool {
	if s.names != nil {
		*looked++
		if _, ok := s.names[key]; ok {
			return true
		}
		s.names[key] = struct{}{}
		return false
	}
	for j := 0; j < i; j++ {
		*looked++
		if k, _ := h.GetAt(j); k == key {
			return true
		}
	}
	return false
}

// writeMessage encodes one MESSAGE frame straight into the write buffer.
func (s *session) writeMessage(d *broker.Delivery) error {
	ack := ""
	if d.Sub.Mode != broker.AckAuto {
		ack = strconv.FormatUint(d.Tag, 10)
	}
	var stream *broker.Delivery
	if d.Stream {
		stream = d
	}
	return s.writeMessageFields(d.Msg, d.Destination, d.Sub.ID, ack, d.Redelivered, d.DeliveryCount, d.GroupFirst, stream)
}

// writeMessageFields writes a MESSAGE; stream, if not nil, is a stream delivery whose
// partition and offset go in the x-stream-* headers.
func (s *session) writeMessageFields(m *broker.Message, dest, sub, ack string, redelivered bool, count uint32, groupFirst bool, stream *broker.Delivery) error {
	w := s.w
	if err := w.StartFrame("MESSAGE"); err != nil {
		return err
	}
	_ = w.Header("destination", dest)
	_ = w.Header("message-id", m.ID)
	_ = w.Header("subscription", sub)
	if ack != "" {
		_ = w.Header("ack", ack)
	}
	if m.Persistent {
		_ = w.Header("persistent", "true")
	}
	if redelivered {
		_ = w.Header("redelivered", "true")
	}
	_ = w.Header("JMSXDeliveryCount", smallInt(int(count)))
	_ = w.Header("redelivery-count", smallInt(int(count)-1))
	if groupFirst {
		_ = w.Header("JMSXGroupFirstForConsumer", "true")
	}
	_ = w.Header("priority", smallInt(int(m.Priority)))
	_ = w.HeaderInt("expires", m.Expires)
	_ = w.HeaderInt("timestamp", m.Timestamp)
	if stream != nil {
		_ = w.Header(headerStreamPartition, smallInt(stream.StreamPartition))
		_ = w.HeaderInt(headerStreamOffset, stream.StreamOffset)
	}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		_ = w.Header(m.Headers[i], m.Headers[i+1])
	}
	for _, p := range m.Props {
		writeProp(w, p)
	}
	body := m.Body
	switch m.Kind {
	case broker.BodyMap, broker.BodyStream, broker.BodyObject:
		// As ActiveMQ: these JMS bodies need a transformation STOMP clients do not
		// ask for here, and reach them empty.
		body = nil
	}
	// Always, whatever the Kind: ActiveMQ writes content-length for a BytesMessage only,
	// but this broker always has, and a body with a NUL needs it.
	_ = w.Header("content-length", smallInt(len(body)))
	return w.EndFrame(body)
}

// writeProp writes a typed property as a header with its string form, as ActiveMQ's
// STOMP converter writes a JMS property (String.valueOf). A byte array is left out:
// ActiveMQ would write Java's identity of the array ("[B@1b6d3586"), which no client
// can use.
func writeProp(w *stompcodec.Writer, p broker.Prop) {
	if p.Kind.IsInteger() {
		_ = w.HeaderInt(p.Name, p.Int()) // formatted in place
	} else if s, ok := p.Text(); ok {
		_ = w.Header(p.Name, s)
	}
}

var smallInts = func() (t [1024]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return
}()

func smallInt(n int) string {
	if n >= 0 && n < len(smallInts) {
		return smallInts[n]
	}
	return strconv.Itoa(n)
}
