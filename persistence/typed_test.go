package persistence

import (
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// typedCase has every property kind, with the extremes of each range.
func typedCase() *Message {
	return &Message{
		Kind: BodyMap,
		Props: Props{
			BoolProp("flag", true),
			BoolProp("off", false),
			IntProp("b", PropByte, math.MinInt8),
			IntProp("s", PropShort, math.MaxInt16),
			IntProp("i", PropInt, math.MinInt32),
			IntProp("l", PropLong, math.MaxInt64),
			FloatProp("f", 1.1),
			DoubleProp("d", -2.5e-300),
			BytesProp("raw", []byte{0, 1, 2, 255}),
			BytesProp("empty", []byte{}),
			IntProp("", PropInt, 7), // names are the sender's business
		},
	}
}

func TestTypedRoundTrip(t *testing.T) {
	for _, m := range []*Message{typedCase(), {Kind: BodyText}, {Kind: BodyObject}, {}} {
		enc := AppendTyped([]byte("prefix"), m)
		require.Equal(t, "prefix", string(enc[:6]))
		require.Len(t, enc[6:], TypedLen(m))
		require.NoError(t, CheckTyped(enc[6:]))
		var got Message
		require.NoError(t, ReadTyped(enc[6:], &got))
		assert.Equal(t, m.Kind, got.Kind)
		assert.Equal(t, len(m.Props), len(got.Props))
		for i := range m.Props {
			assert.True(t, propEqual(m.Props[i], got.Props[i]), "%+v != %+v", m.Props[i], got.Props[i])
		}
	}
	// The values read back as their kinds.
	var got Message
	require.NoError(t, ReadTyped(AppendTyped(nil, typedCase()), &got))
	f, _ := got.Props.Get("f")
	assert.Equal(t, float32(1.1), float32(f.Float()))
	i, _ := got.Props.Get("i")
	assert.Equal(t, int64(math.MinInt32), i.Int())
	b, _ := got.Props.Get("flag")
	assert.True(t, b.Bool())
}

// Every malformed encoding is refused with ErrTyped, and m is left alone.
func TestReadTypedRefuses(t *testing.T) {
	good := AppendTyped(nil, typedCase())
	cases := map[string][]byte{
		"empty":        {},
		"version":      {2, 0, 0},
		"body kind":    {1, 6, 0},
		"trailing":     append(append([]byte(nil), good...), 0),
		"count":        {1, 0, 5, 0, 1, 0},
		"prop kind 0":  {1, 0, 1, 0, 0, 0},
		"prop kind 9":  {1, 0, 1, 0, 9, 0},
		"bool 2":       {1, 0, 1, 0, byte(PropBool), 2},
		"byte range":   {1, 0, 1, 0, byte(PropByte), 0x80, 0x02}, // 128
		"short range":  {1, 0, 1, 0, byte(PropShort), 0x80, 0x80, 0x04},
		"float short":  {1, 0, 1, 0, byte(PropFloat), 0, 0},
		"bytes length": {1, 0, 1, 0, byte(PropBytes), 9, 1},
		"huge count":   {1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for i := range len(good) {
		cases["truncated "+string(rune('a'+i%26))+string(rune('0'+i/26))] = good[:i]
	}
	for name, b := range cases {
		assert.ErrorIs(t, CheckTyped(b), ErrTyped, name)
		m := Message{Kind: BodyText, Props: Props{BoolProp("keep", true)}}
		err := ReadTyped(b, &m)
		assert.True(t, errors.Is(err, ErrTyped), "%s: %v", name, err)
		assert.Equal(t, BodyText, m.Kind, name)
		assert.Len(t, m.Props, 1, name)
	}
}

// Reading allocates the properties and one string for all their names, nothing else;
// a message with a kind and no properties nothing.
func TestReadTypedAllocations(t *testing.T) {
	enc := AppendTyped(nil, typedCase())
	var m Message
	assert.Equal(t, 2.0, testing.AllocsPerRun(100, func() { _ = ReadTyped(enc, &m) }))
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = CheckTyped(enc) }))
	kindOnly := AppendTyped(nil, &Message{Kind: BodyBytes})
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = ReadTyped(kindOnly, &m) }))
}

// FuzzReadTyped feeds arbitrary bytes to ReadTyped, whole and split into a first chunk
// and the rest (as a store would hold a section cut short): it must never panic, must
// refuse what it does not accept with ErrTyped, and whatever it accepts must re-encode to
// an encoding that reads back the same.
func FuzzReadTyped(f *testing.F) {
	f.Add(AppendTyped(nil, typedCase()), uint16(7))
	f.Add(AppendTyped(nil, &Message{Kind: BodyBytes}), uint16(1))
	f.Add([]byte{1, 0, 1, 1, 'x', byte(PropDouble), 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		cut := min(int(split), len(data))
		for _, chunk := range [][]byte{data[:cut], data[cut:], data} {
			var m Message
			err := ReadTyped(chunk, &m)
			require.Equal(t, err == nil, CheckTyped(chunk) == nil, "CheckTyped agrees with ReadTyped")
			if err != nil {
				require.ErrorIs(t, err, ErrTyped)
				continue
			}
			enc := AppendTyped(nil, &m)
			require.Len(t, enc, TypedLen(&m))
			var again Message
			require.NoError(t, ReadTyped(enc, &again))
			require.Equal(t, m.Kind, again.Kind)
			require.Equal(t, len(m.Props), len(again.Props))
			for i := range m.Props {
				require.True(t, propEqual(m.Props[i], again.Props[i]), "%+v != %+v", m.Props[i], again.Props[i])
			}
		}
	})
}

// propEqual compares two properties, NaNs of a float kind as equal.
func propEqual(a, b Prop) bool {
	if a.Name != b.Name || a.Kind != b.Kind || string(a.Bytes) != string(b.Bytes) {
		return false
	}
	if a.Kind.IsFloat() && math.IsNaN(a.Float()) {
		return math.IsNaN(b.Float())
	}
	return a.Num == b.Num
}

func TestPropText(t *testing.T) {
	for _, tc := range []struct {
		p    Prop
		want string
	}{
		{BoolProp("x", true), "true"},
		{IntProp("x", PropByte, -5), "-5"},
		{IntProp("x", PropLong, math.MaxInt64), "9223372036854775807"},
		{DoubleProp("x", 1), "1.0"},
		{DoubleProp("x", 0), "0.0"},
		{DoubleProp("x", math.Copysign(0, -1)), "-0.0"},
		{DoubleProp("x", 1.5), "1.5"},
		{DoubleProp("x", 0.001), "0.001"},
		{DoubleProp("x", 0.0001), "1.0E-4"},
		{DoubleProp("x", 9999999), "9999999.0"},
		{DoubleProp("x", 1e7), "1.0E7"},
		{DoubleProp("x", -1.2345e20), "-1.2345E20"},
		{DoubleProp("x", math.MaxFloat64), "1.7976931348623157E308"},
		{DoubleProp("x", math.NaN()), "NaN"},
		{DoubleProp("x", math.Inf(-1)), "-Infinity"},
		{FloatProp("x", 1.1), "1.1"},
		{FloatProp("x", 3.4028235e38), "3.4028235E38"},
	} {
		got, ok := tc.p.Text()
		assert.True(t, ok)
		assert.Equal(t, tc.want, got, "%+v", tc.p)
	}
	_, ok := BytesProp("x", []byte{1}).Text()
	assert.False(t, ok)
}

func TestMessageTypedPart(t *testing.T) {
	m := typedCase()
	m.Headers = Headers{"type", "order", "correlation-id", "c1", "reply-to", "/queue/r",
		"JMSXGroupID", "g", "JMSXGroupSeq", "-1", "name", "v"}
	assert.True(t, m.Typed())
	assert.False(t, (&Message{Headers: m.Headers}).Typed())
	assert.Equal(t, "order", m.Type())
	assert.Equal(t, "c1", m.CorrelationID())
	assert.Equal(t, "/queue/r", m.ReplyTo())
	assert.Equal(t, "g", m.GroupID())
	seq, ok := m.GroupSeq()
	assert.True(t, ok)
	assert.Equal(t, int64(-1), seq)
	seq, ok = (&Message{Props: Props{IntProp(HeaderGroupSeq, PropInt, 3)}}).GroupSeq()
	assert.True(t, ok)
	assert.Equal(t, int64(3), seq)
	_, ok = (&Message{}).GroupSeq()
	assert.False(t, ok)

	p, s, ok := m.Property("name")
	assert.True(t, ok)
	assert.Equal(t, PropString, p.Kind)
	assert.Equal(t, "v", s)
	p, _, ok = m.Property("l")
	assert.True(t, ok)
	assert.Equal(t, int64(math.MaxInt64), p.Int())
	_, _, ok = m.Property("missing")
	assert.False(t, ok)

	// Size counts the properties (propSize is what one takes in the slice); Clone copies
	// them, byte arrays included.
	assert.Equal(t, uintptr(propSize), unsafe.Sizeof(Prop{}))
	assert.Greater(t, m.Size(), (&Message{Headers: m.Headers}).Size()+len(m.Props)*propSize)
	c := m.Clone()
	assert.Equal(t, m.Props, c.Props)
	assert.Equal(t, m.Kind, c.Kind)
	raw, _ := m.Props.Get("raw")
	raw.Bytes[0] = 99
	craw, _ := c.Props.Get("raw")
	assert.Equal(t, byte(0), craw.Bytes[0])
	assert.Nil(t, (&Message{}).Clone().Props)
}
