package pgstore

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

func encodingCases() []persistence.Message {
	return []persistence.Message{
		{},
		{ID: "ID:x:1", Headers: persistence.Headers{"a", "1", "a", "2", "empty", ""}, Body: []byte("hello\x00")},
		{Persistent: true, Priority: 9, Expires: math.MaxInt64, Timestamp: -1, RedeliveryCount: math.MaxUint32,
			ID: "ünïcödé", Headers: persistence.Headers{"k\nx", "v:\\"}, Body: bytes.Repeat([]byte{0xff, 0}, 1000)},
		{Expires: math.MinInt64, Headers: persistence.Headers{"odd"}}, // an odd list round-trips too
		{ID: "ID:t", Body: []byte("x"), Kind: persistence.BodyText, Headers: persistence.Headers{}},
		{ID: "ID:p", Headers: persistence.Headers{"s", "v"}, Kind: persistence.BodyObject, Props: persistence.Props{
			persistence.BoolProp("b", false), persistence.IntProp("i", persistence.PropInt, math.MaxInt32),
			persistence.BytesProp("raw", []byte{9}), persistence.FloatProp("f", -0.25)}},
	}
}

func TestEncodingRoundTrip(t *testing.T) {
	for i, want := range encodingCases() {
		enc := encodeMessage(nil, &want)
		require.LessOrEqual(t, len(enc), encodedSize(&want), "case %d: encodedSize is an upper bound", i)
		format := byte(msgFormat) // as before the typed part, unless the message has one
		if want.Typed() {
			format = msgFormatTyped
		}
		require.Equal(t, format, enc[0], "case %d", i)
		got := persistence.Message{Headers: persistence.Headers{"stale", "x", "y", "z", "w"},
			Kind: persistence.BodyBytes, Props: persistence.Props{{Name: "stale"}}}
		require.NoError(t, decodeMessage(enc, &got), "case %d", i)
		if len(want.Headers) == 0 {
			want.Headers = persistence.Headers{}
		}
		require.Equal(t, want, got, "case %d", i)
	}
}

func TestDecodeRejectsCorrupt(t *testing.T) {
	good := encodeMessage(nil, &encodingCases()[1])
	cases := map[string][]byte{
		"empty":           nil,
		"unknown version": append([]byte{3}, good[1:]...),
		"typed part":      append([]byte{msgFormatTyped}, good[1:]...), // the string count is no typed part
		"typed length":    {2, 0, 4, 0, 0, 0, 0x7f, 1, 0, 0},
		"unknown flags":   append([]byte{1, 0x80}, good[2:]...),
		"truncated":       good[:5],
		"no strings":      {1, 0, 4, 0, 0, 0, 0},
		"huge count":      {1, 0, 4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"long string":     {1, 0, 4, 0, 0, 0, 1, 10, 'a'},
		"big redelivery":  {1, 0, 4, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x1f, 1, 0},
	}
	for name, b := range cases {
		var m persistence.Message
		err := decodeMessage(b, &m)
		require.Error(t, err, name)
		require.True(t, errors.Is(err, ErrCorrupt), "%s: %v", name, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range encodingCases() {
		f.Add(encodeMessage(nil, &m))
	}
	f.Add([]byte{1, 0, 4, 0, 0, 0, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m persistence.Message
		if err := decodeMessage(b, &m); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		// What decodes re-encodes to the same bytes (the format has one spelling
		// per message, varints aside).
		again := encodeMessage(nil, &m)
		var m2 persistence.Message
		if err := decodeMessage(again, &m2); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if m.ID != m2.ID || !bytes.Equal(m.Body, m2.Body) || len(m.Headers) != len(m2.Headers) {
			t.Fatalf("round trip changed the message: %+v vs %+v", m, m2)
		}
	})
}
