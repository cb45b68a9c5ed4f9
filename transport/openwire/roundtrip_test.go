package openwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// TestMessageRoundTrip: a JMS message of every kind, with its header fields and typed
// properties, becomes the broker's message as STOMP reads it and comes back to an
// OpenWire client as it was sent.
func TestMessageRoundTrip(t *testing.T) {
	props := map[string]any{"b": true, "i8": int8(-3), "i16": int16(300), "i32": int32(-70000),
		"i64": int64(1) << 40, "f": float32(1.5), "d": 2.25, "s": "text", "raw": []byte{1, 2}}
	for _, typ := range []byte{ow.TypeTextMessage, ow.TypeBytesMessage, ow.TypeMapMessage, ow.TypeStreamMessage, ow.TypeObjectMessage, ow.TypeMessage} {
		in := &ow.Message{
			Type:        typ,
			MessageID:   &ow.MessageID{ProducerID: &ow.ProducerID{ConnectionID: "ID:host-1-2-1:1", SessionID: 1, Value: 1}, ProducerSequenceID: 7},
			Destination: &ow.Destination{Type: ow.TypeQueue, Name: "orders"}, CorrelationID: "c-1",
			ReplyTo: &ow.Destination{Type: ow.TypeTempQueue, Name: "ID:host-1-2-1:1:1"}, JMSType: "kind",
			GroupID: "g", GroupSequence: 3, Persistent: true, Priority: 7, Expiration: 1234, Timestamp: 99,
		}
		switch typ {
		case ow.TypeTextMessage:
			in.SetText("héllo", true)
		case ow.TypeMessage:
		default:
			in.SetBody([]byte{0, 1, 2, 3}, false)
		}
		require.NoError(t, in.SetProperties(props))

		m, err := toMessage(in)
		require.NoError(t, err, "type %d", typ)
		assert.Equal(t, "ID:host-1-2-1:1:1:1:7", m.ID)
		assert.Equal(t, bodyKinds[typ], m.Kind)
		for k, v := range map[string]string{"correlation-id": "c-1", "reply-to": "/remote-temp-queue/ID:host-1-2-1:1:1",
			"type": "kind", "JMSXGroupID": "g", "JMSXGroupSeq": "3", "s": "text"} {
			got, ok := m.Headers.Get(k)
			assert.True(t, ok, "header %s", k)
			assert.Equal(t, v, got, "header %s", k)
		}
		if typ == ow.TypeTextMessage {
			assert.Equal(t, "héllo", string(m.Body), "stored as UTF-8 text, uncompressed")
		}
		assert.Len(t, m.Props, 8, "every property but the string one is typed")

		out, err := (&conn{}).fromMessage(m, "/queue/orders")
		require.NoError(t, err)
		assert.Equal(t, typ, out.Type)
		assert.Equal(t, "ID:host-1-2-1:1:1:1:7", out.MessageID.String(), "the producer's id comes back")
		assert.Equal(t, in.CorrelationID, out.CorrelationID)
		assert.Equal(t, *in.ReplyTo, *out.ReplyTo)
		assert.Equal(t, in.JMSType, out.JMSType)
		assert.Equal(t, in.GroupID, out.GroupID)
		assert.Equal(t, in.GroupSequence, out.GroupSequence)
		assert.Equal(t, ow.Destination{Type: ow.TypeQueue, Name: "orders"}, *out.Destination)
		got, err := out.Properties()
		require.NoError(t, err)
		assert.Equal(t, props, got)
		wantBody, err := in.Body()
		require.NoError(t, err)
		gotBody, err := out.Body()
		require.NoError(t, err)
		if typ != ow.TypeMessage {
			assert.Equal(t, wantBody, gotBody, "type %d", typ)
		}
	}
}

// TestBrokerMessageIDs: the broker's own ids get a producer id and sequence, unique per
// message, for the client's duplicate checks, and their text form.
func TestBrokerMessageIDs(t *testing.T) {
	a, b := wireMessageID("ID:node-1700000000000-41"), wireMessageID("ID:node-1700000000000-42")
	assert.Equal(t, "ID:node-1700000000000-41", a.String())
	assert.Equal(t, int64(41), a.ProducerSequenceID)
	assert.Equal(t, int64(42), b.ProducerSequenceID)
	assert.Equal(t, *a.ProducerID, *b.ProducerID)
	assert.Equal(t, "ID:node-1700000000000-41", messageID(a))
}

// TestCompositeDestinations: a composite destination names one broker destination per
// member, each of its own kind where it says so.
func TestCompositeDestinations(t *testing.T) {
	ds, err := toDestinations(&ow.Destination{Type: ow.TypeQueue, Name: "a,topic://b,queue://c"})
	require.NoError(t, err)
	assert.Equal(t, []broker.Destination{{Kind: broker.Queue, Name: "a"}, {Kind: broker.Topic, Name: "b"}, {Kind: broker.Queue, Name: "c"}}, ds)
	_, err = toDestinations(&ow.Destination{Type: ow.TypeQueue, Name: "a,"})
	assert.Error(t, err)
}
