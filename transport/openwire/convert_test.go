package openwire

import (
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// wireProps decodes the properties of a message fromMessage made, and counts the entries
// encoded (each name must be there once).
func wireProps(t *testing.T, m *ow.Message) (map[string]any, int) {
	t.Helper()
	props, err := m.Properties()
	require.NoError(t, err)
	n := 0
	require.NoError(t, m.RangeProperties(func(string, ow.PropValue) error { n++; return nil }))
	return props, n
}

// TestPropertiesRoundTrip: a producer's properties of every JMS type and its header
// fields come back to a consumer as they were sent (a char, which JMS lacks, as its
// string).
func TestPropertiesRoundTrip(t *testing.T) {
	sent := map[string]any{
		"s": "text é", "t": true, "b": int8(-3), "h": int16(-300), "i": int32(-70000), "l": int64(-1 << 40),
		"fl": float32(1.5), "d": -2.25, "bytes": []byte{0, 1, 2}, "c": ow.Char('Z'), "null": nil,
	}
	m := benchWire(t)
	m.CorrelationID, m.JMSType, m.GroupID, m.GroupSequence = "corr", "type", "g", 3
	m.ReplyTo = &ow.Destination{Type: ow.TypeTopic, Name: "replies"}
	require.NoError(t, m.SetProperties(sent))
	bm, err := toMessage(m)
	require.NoError(t, err)
	c := &conn{}
	got, err := c.fromMessage(bm, "/queue/BENCH.q")
	require.NoError(t, err)
	props, n := wireProps(t, got)
	want := map[string]any{}
	for k, v := range sent {
		switch v := v.(type) {
		case nil: // a null property is no property
		case ow.Char:
			want[k] = string(rune(v))
		default:
			want[k] = v
		}
	}
	assert.Equal(t, want, props)
	assert.Equal(t, len(want), n)
	assert.Equal(t, []any{"corr", "type", "g", int32(3), "topic://replies"},
		[]any{got.CorrelationID, got.JMSType, got.GroupID, got.GroupSequence, got.ReplyTo.String()})
	assert.Equal(t, "queue://BENCH.q", got.Destination.String())
	assert.Equal(t, m.MessageID.String(), got.MessageID.String())
}

// TestPropertyNamesOnce: a name the broker's message has twice is sent once: a typed
// property before a header of the same name, the last typed one, the first header (the
// values a client reading a map built in that order would see), with many names too.
func TestPropertyNamesOnce(t *testing.T) {
	hs := broker.Headers{"a", "first", "a", "second", "x", "header"}
	var many []string
	for i := range 40 {
		many = append(many, "n"+strconv.Itoa(i))
		hs = append(hs, many[i], "v")
	}
	hs = append(hs, "n0", "again")
	m := &broker.Message{ID: "ID:b-1-7", Kind: broker.BodyBytes, Headers: hs,
		Props: []broker.Prop{broker.IntProp("x", broker.PropInt, 1), broker.IntProp("x", broker.PropInt, 2)}}
	got, err := (&conn{}).fromMessage(m, "/queue/q")
	require.NoError(t, err)
	props, n := wireProps(t, got)
	assert.Equal(t, "first", props["a"])
	assert.Equal(t, int32(2), props["x"])
	assert.Equal(t, "v", props["n0"])
	assert.Equal(t, 2+len(many), n)
	assert.Len(t, props, n)
}

// TestRepeatedWireName: a map that repeats a name (Java's client never sends one) gives
// the last value, as the map Java would read.
func TestRepeatedWireName(t *testing.T) {
	var e ow.PropertyEncoder
	e.String("k", "first")
	e.Int("n", 1)
	e.Int("k", 7)
	e.String("n", "last")
	b, err := e.Finish()
	require.NoError(t, err)
	m := benchWire(t)
	m.MarshalledProperties = b
	bm, err := toMessage(m)
	require.NoError(t, err)
	assert.Equal(t, broker.Headers{"n", "last"}, bm.Headers)
	assert.Equal(t, []broker.Prop{broker.IntProp("k", broker.PropInt, 7)}, []broker.Prop(bm.Props))
}

// TestTextRoundTrip: a TextMessage's text reaches the broker as its UTF-8 and comes back
// as it was sent, ASCII or not.
func TestTextRoundTrip(t *testing.T) {
	c := &conn{}
	for _, text := range []string{"plain", "nul\x00é 😀", ""} {
		m := benchWire(t, "text")
		m.SetText(text, false)
		bm, err := toMessage(m)
		require.NoError(t, err)
		assert.Equal(t, text, string(bm.Body))
		got, err := c.fromMessage(bm, "/queue/q")
		require.NoError(t, err)
		back, ok, err := got.Text()
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, text, back)
	}
}

// TestDispatchAllocations counts the allocations of turning a delivered message into
// the client's form and encoding its MessageDispatch: the connection reuses the message,
// its properties' and text's buffers, producer ids and destinations, so none in the
// steady state.
func TestDispatchAllocations(t *testing.T) {
	for _, kind := range benchKinds {
		m := benchStored(t, kind)
		c := &conn{w: ow.NewWriter(io.Discard, benchFormat)}
		cid := &ow.ConsumerID{ConnectionID: benchConn, SessionID: 1, Value: 1}
		n := testing.AllocsPerRun(100, func() {
			wm, err := c.fromMessage(m, "/queue/BENCH.q")
			if err != nil {
				t.Fatal(err)
			}
			c.md = ow.MessageDispatch{ConsumerID: cid, Destination: wm.Destination, Message: wm}
			if err := c.w.Write(&c.md); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, n, kind)
	}
}
