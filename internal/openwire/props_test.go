package openwire

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// propsOfEveryType are properties of every type a JMS client sends, and a nested map and
// list, which ActiveMQ's map format allows.
var propsOfEveryType = map[string]any{
	"s": "text é 😀", "big": strings.Repeat("x", math.MaxInt16/4), "t": true, "f": false,
	"b": int8(-3), "c": Char('Z'), "h": int16(-300), "i": int32(-70000), "l": int64(-1 << 40),
	"fl": float32(1.5), "d": -2.25, "bytes": []byte{0, 1, 2}, "null": nil,
	"map": map[string]any{"k": int32(1)}, "list": []any{"a", int64(2)},
}

// TestRangeProperties: the properties read one by one are those Properties decodes.
func TestRangeProperties(t *testing.T) {
	m := &Message{}
	require.NoError(t, m.SetProperties(propsOfEveryType))
	got := map[string]any{}
	require.NoError(t, m.RangeProperties(func(name string, v PropValue) error {
		got[name] = v.Any()
		return nil
	}))
	want, err := m.Properties()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.NoError(t, (&Message{}).RangeProperties(func(string, PropValue) error { panic("no properties") }))
	for n := range len(m.MarshalledProperties) { // every truncation fails cleanly
		cut := &Message{MarshalledProperties: m.MarshalledProperties[:n]}
		assert.Error(t, cut.RangeProperties(func(string, PropValue) error { return nil }), "cut at %d", n)
	}
}

// TestPropertyEncoder: properties written one by one decode as those of SetProperties,
// and the encoder reuses its buffer after Reset.
func TestPropertyEncoder(t *testing.T) {
	var e PropertyEncoder
	b, err := e.Finish()
	require.NoError(t, err)
	assert.Nil(t, b, "no properties: none encoded")
	for range 2 {
		e.Reset()
		e.String("s", "text é 😀")
		e.String("big", strings.Repeat("x", math.MaxInt16/4))
		e.Bool("t", true)
		e.Bool("f", false)
		e.Byte("b", -3)
		e.Short("h", -300)
		e.Int("i", -70000)
		e.Long("l", -1<<40)
		e.Float("fl", 1.5)
		e.Double("d", -2.25)
		e.Bytes("bytes", []byte{0, 1, 2})
		assert.Equal(t, 11, e.Len())
		b, err = e.Finish()
		require.NoError(t, err)
		got, err := decodePrimitiveMap(b, math.MaxInt32)
		require.NoError(t, err)
		want := map[string]any{}
		for k, v := range propsOfEveryType {
			switch v.(type) {
			case Char, nil, map[string]any, []any:
			default:
				want[k] = v
			}
		}
		assert.Equal(t, want, got)
	}
	e.Reset()
	e.Int(strings.Repeat("k", math.MaxUint16+1), 1)
	_, err = e.Finish()
	assert.ErrorContains(t, err, "too long")
}

// TestTextBytes: a text body read as bytes and written from bytes is the text Text and
// SetText read and write, ASCII or not (NUL, accents, a supplementary character), null
// and empty; plain ASCII is read in place.
func TestTextBytes(t *testing.T) {
	for _, text := range []string{"", "plain ascii", "nul\x00inside", "é and 😀"} {
		var m Message
		m.SetText(text, false)
		b, ok, err := m.TextBytes()
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, text, string(b))
		assert.Equal(t, m.Content, AppendText(nil, []byte(text)), "%q encoded as SetText does", text)
		if plainASCII([]byte(text)) && text != "" {
			assert.Same(t, &m.Content[4], &b[0], "read in place")
		}
		m.SetText(text, true) // compressed
		b, _, err = m.TextBytes()
		require.NoError(t, err)
		assert.Equal(t, text, string(b))
	}
	null := Message{Content: []byte{0xFF, 0xFF, 0xFF, 0xFF}}
	b, ok, err := null.TextBytes()
	assert.NoError(t, err)
	assert.False(t, ok)
	assert.Nil(t, b)
	bad := Message{Content: []byte{0, 0, 0, 2, 0xC0, 0x41}}
	_, _, err = bad.TextBytes()
	assert.ErrorIs(t, err, ErrMalformed)
}
