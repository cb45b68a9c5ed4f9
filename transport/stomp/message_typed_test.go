package stomp

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/stompcodec"
	"github.com/activemq-go/broker/persistence"
)

// TestMessageFromSendKind: a SEND's body kind is ActiveMQ's mapping: content-length
// makes a BytesMessage, its absence a TextMessage, amq-msg-type (text or bytes, any
// case) overrides both and stays a header. The frames are read by the codec, as the
// connection reads them.
func TestMessageFromSendKind(t *testing.T) {
	for _, tc := range []struct {
		headers string
		want    persistence.BodyKind
	}{
		{"content-length:2\n", persistence.BodyBytes},
		{"", persistence.BodyText},
		{"amq-msg-type:text\ncontent-length:2\n", persistence.BodyText},
		{"amq-msg-type:TEXT\n", persistence.BodyText},
		{"amq-msg-type:bytes\n", persistence.BodyBytes},
		{"amq-msg-type:Bytes\ncontent-length:2\n", persistence.BodyBytes},
		// Another value: ActiveMQ refuses the SEND; this broker keeps accepting it and
		// applies the content-length rule.
		{"amq-msg-type:map\ncontent-length:2\n", persistence.BodyBytes},
		{"amq-msg-type:map\n", persistence.BodyText},
	} {
		r := stompcodec.NewReader(strings.NewReader("SEND\ndestination:/queue/a\n"+tc.headers+"x:1\n\nhi\x00"), stompcodec.Limits{})
		f, err := r.Read()
		require.NoError(t, err)
		m, err := messageFromSend(f)
		require.NoError(t, err)
		require.Equal(t, tc.want, m.Kind, "%q", tc.headers)
		require.Equal(t, "hi", string(m.Body))
		require.Empty(t, m.Props, "STOMP headers are string properties")
		want := persistence.Headers{"x", "1"}
		if v, ok := f.Header.Contains("amq-msg-type"); ok {
			want = persistence.Headers{"amq-msg-type", v, "x", "1"}
		}
		require.Equal(t, want, m.Headers, "%q", tc.headers)
	}
}

// writeTestMessage returns the MESSAGE frame a STOMP 1.2 session writes for m.
func writeTestMessage(t *testing.T, m *persistence.Message) string {
	t.Helper()
	var buf bytes.Buffer
	s := &session{w: stompcodec.NewWriter(&buf, 0)}
	s.w.SetVersion(stompcodec.V12)
	d := &broker.Delivery{Sub: &destinations.Consumer{ID: "s1", Mode: destinations.AckClientIndividual}, Tag: 7, Msg: m,
		Destination: "/queue/q", DeliveryCount: 2, Redelivered: true}
	require.NoError(t, s.writeMessage(d))
	require.NoError(t, s.w.Flush())
	return buf.String()
}

// TestWriteMessageKindUnchanged: a MESSAGE is the same bytes whatever a message's body
// kind, and the same as before kinds existed (the frame below is what the broker of
// 6e70a1b writes for this delivery): content-length always, as before, though ActiveMQ
// leaves it out for a TextMessage.
func TestWriteMessageKindUnchanged(t *testing.T) {
	const before = "MESSAGE\ndestination:/queue/q\nmessage-id:ID\\c1\nsubscription:s1\nack:7\npersistent:true\n" +
		"redelivered:true\nJMSXDeliveryCount:2\nredelivery-count:1\npriority:4\nexpires:0\ntimestamp:1700000000123\n" +
		"type:order\na\\cb:v\\nw\ncontent-length:2\n\nhi\x00\n"
	for _, k := range []persistence.BodyKind{persistence.BodyPlain, persistence.BodyText, persistence.BodyBytes} {
		m := &persistence.Message{ID: "ID:1", Persistent: true, Priority: 4, Timestamp: 1700000000123, Kind: k,
			Headers: persistence.Headers{"type", "order", "a:b", "v\nw"}, Body: []byte("hi")}
		require.Equal(t, before, writeTestMessage(t, m), "kind %s", k)
	}
}

// TestWriteMessageTypedProperties: a typed property reaches a STOMP client as a header
// with its string form, as ActiveMQ writes a JMS property (String.valueOf), after the
// string headers; a byte array is left out.
func TestWriteMessageTypedProperties(t *testing.T) {
	m := &persistence.Message{ID: "ID:1", Priority: 4, Timestamp: 1700000000123, Kind: persistence.BodyBytes,
		Headers: persistence.Headers{"s", "v"}, Body: []byte("hi"),
		Props: persistence.Props{
			persistence.BoolProp("flag", true),
			persistence.IntProp("b", persistence.PropByte, -8),
			persistence.IntProp("sh", persistence.PropShort, 300),
			persistence.IntProp("i", persistence.PropInt, math.MinInt32),
			persistence.IntProp("l", persistence.PropLong, math.MaxInt64),
			persistence.FloatProp("f", 1.1),
			persistence.DoubleProp("d", 1e10),
			persistence.DoubleProp("half", 0.5),
			persistence.BytesProp("raw", []byte{1, 2}),
		}}
	got := writeTestMessage(t, m)
	want := "s:v\nflag:true\nb:-8\nsh:300\ni:-2147483648\nl:9223372036854775807\nf:1.1\nd:1.0E10\nhalf:0.5\n" +
		"content-length:2\n\nhi\x00\n"
	require.True(t, strings.HasSuffix(got, "timestamp:1700000000123\n"+want), "frame:\n%s", got)
	require.NotContains(t, got, "raw")

	// Read back by the codec, as a client would: every typed property is a header.
	f, err := stompcodec.NewReader(strings.NewReader(got), stompcodec.Limits{}).Read()
	require.NoError(t, err)
	v, ok := f.Header.Contains("f")
	require.True(t, ok)
	require.Equal(t, "1.1", v)
}

// TestWriteMessageJMSBodies: map, stream and object bodies (OpenWire's encodings) reach a
// STOMP client empty, as ActiveMQ sends them without a transformation; text and bytes
// bodies as they are.
func TestWriteMessageJMSBodies(t *testing.T) {
	for kind, want := range map[persistence.BodyKind]string{
		persistence.BodyMap: "", persistence.BodyStream: "", persistence.BodyObject: "",
		persistence.BodyText: "body", persistence.BodyBytes: "body",
	} {
		got := writeTestMessage(t, &persistence.Message{ID: "ID:1", Priority: 4, Kind: kind, Body: []byte("body")})
		require.True(t, strings.HasSuffix(got, "content-length:"+strconv.Itoa(len(want))+"\n\n"+want+"\x00\n"), "%s: %q", kind, got)
	}
}
