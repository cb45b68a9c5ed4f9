package boltstore

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

var encodingCases = []persistence.Message{
	{},
	{ID: "ID:1", Body: []byte("hello")},
	{
		ID:      "ID:host-1:1:1:1",
		Headers: persistence.Headers{"dup", "a", "dup", "b", "empty", "", "ünï", "line\nbreak"},
		Body:    []byte("\x00\xff\x00"), Persistent: true, Priority: 9,
		Expires: math.MaxInt64, Timestamp: -1, RedeliveryCount: math.MaxUint32,
	},
	{Headers: persistence.Headers{"odd"}}, // an odd count round-trips too
	{ID: string(make([]byte, 300)), Body: make([]byte, 70000), Priority: 4, Expires: math.MinInt64},
	{ID: "ID:t", Body: []byte("x"), Kind: persistence.BodyText},
	{ID: "ID:p", Headers: persistence.Headers{"s", "v"}, Body: []byte{0}, Kind: persistence.BodyMap, Props: persistence.Props{
		persistence.BoolProp("b", true), persistence.IntProp("l", persistence.PropLong, math.MinInt64),
		persistence.BytesProp("raw", []byte{1, 2}), persistence.DoubleProp("d", 1e300)}},
}

// A message without a typed part is a version 1 record, as before; with one, version 2.
func TestMessageRecordVersion(t *testing.T) {
	for i := range encodingCases {
		m := &encodingCases[i]
		want := byte(msgRecordVersion)
		if m.Typed() {
			want = msgRecordVersionTyped
		}
		require.Equal(t, want, encodeMessage(m)[0], "case %d", i)
	}
	// A reused Message keeps nothing of a previous typed part.
	var a arena
	m := persistence.Message{Kind: persistence.BodyText, Props: persistence.Props{{Name: "stale"}}}
	require.NoError(t, decodeMessage(encodeMessage(&encodingCases[1]), &m, &a))
	require.Equal(t, persistence.BodyPlain, m.Kind)
	require.Nil(t, m.Props)
}

func TestMessageRoundTrip(t *testing.T) {
	for i, want := range encodingCases {
		rec := encodeMessage(&want)
		require.Len(t, rec, encodedSize(&want), "case %d: encodedSize", i)
		n, err := recordBodyLen(rec)
		require.NoError(t, err)
		require.Equal(t, int64(len(want.Body)), n)

		var a arena
		var got persistence.Message
		require.NoError(t, decodeMessage(rec, &got, &a), "case %d", i)
		norm := func(m persistence.Message) persistence.Message {
			if len(m.Headers) == 0 {
				m.Headers = nil
			}
			if len(m.Body) == 0 {
				m.Body = nil
			}
			return m
		}
		require.Equal(t, norm(want), norm(got), "case %d", i)
	}
}

func TestDecodeMessageRejects(t *testing.T) {
	good := encodeMessage(&encodingCases[2])
	cases := map[string][]byte{
		"empty":      nil,
		"short":      good[:msgFixedLen-1],
		"version":    append([]byte{3}, good[1:]...),
		"typed part": append([]byte{msgRecordVersionTyped}, good[1:]...), // the ID is no typed part
		"typed length": func() []byte {
			b := encodeMessage(&encodingCases[len(encodingCases)-1])
			b[msgFixedLen] = 0x7f
			return b
		}(),
		"flags":           func() []byte { b := bytes.Clone(good); b[offFlags] = 0x80; return b }(),
		"body too long":   func() []byte { b := bytes.Clone(good); b[offBodyLen] = 0xff; return b }(),
		"truncated":       good[:len(good)-1],
		"stray byte":      append(bytes.Clone(good[:len(good)-3]), append([]byte{0}, good[len(good)-3:]...)...),
		"header overflow": append(bytes.Clone(good[:msgFixedLen]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, rec := range cases {
		var a arena
		var m persistence.Message
		err := decodeMessage(rec, &m, &a)
		require.True(t, errors.Is(err, ErrCorrupt), "%s: %v", name, err)
	}
}

func TestSubRecordRoundTrip(t *testing.T) {
	key := persistence.SubKey{ClientID: "a:b", Name: "c"}
	info := persistence.SubInfo{Key: key, Dest: "topic://x", Selector: "a = 'b'", Created: -5}
	r, err := decodeSubRecord(key, subRecord{id: 7, info: info}.encode())
	require.NoError(t, err)
	require.Equal(t, subRecord{id: 7, info: info}, r)

	k, err := decodeSubKey(encodeSubKey(key))
	require.NoError(t, err)
	require.Equal(t, key, k)
	require.NotEqual(t, encodeSubKey(key), encodeSubKey(persistence.SubKey{ClientID: "a", Name: "b:c"}))

	d, err := decodeDestMeta(destMeta{lastSeq: math.MaxInt64, msgs: 3, bytes: 9}.encode())
	require.NoError(t, err)
	require.Equal(t, destMeta{lastSeq: math.MaxInt64, msgs: 3, bytes: 9}, d)

	ids, err := decodeOwners(encodeOwners([]uint64{3, 1, 2}), nil)
	require.NoError(t, err)
	require.Equal(t, []uint64{3, 1, 2}, ids)
}

// FuzzDecoders feeds arbitrary bytes to every decoder of the file's values: none may
// panic or allocate beyond its input, and whatever decodes re-encodes to something that
// decodes the same.
func FuzzDecoders(f *testing.F) {
	for i := range encodingCases {
		f.Add(encodeMessage(&encodingCases[i]))
	}
	f.Add(subRecord{id: 1, info: persistence.SubInfo{Dest: "topic://t", Selector: "x"}}.encode())
	f.Add(encodeSubKey(persistence.SubKey{ClientID: "c", Name: "n"}))
	f.Add(encodeOwners([]uint64{1, 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a arena
		var m persistence.Message
		if err := decodeMessage(b, &m, &a); err == nil {
			var again persistence.Message
			if err := decodeMessage(encodeMessage(&m), &again, &arena{}); err != nil {
				t.Fatalf("re-encoded message does not decode: %v", err)
			}
			if again.ID != m.ID || !bytes.Equal(again.Body, m.Body) || len(again.Headers) != len(m.Headers) {
				t.Fatalf("re-encoded message differs: %+v vs %+v", again, m)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeMessage error not ErrCorrupt: %v", err)
		}
		if k, err := decodeSubKey(b); err == nil {
			if k2, err := decodeSubKey(encodeSubKey(k)); err != nil || k2 != k {
				t.Fatalf("sub key %v does not round-trip: %v %v", k, k2, err)
			}
		}
		if r, err := decodeSubRecord(persistence.SubKey{}, b); err == nil {
			if r2, err := decodeSubRecord(persistence.SubKey{}, r.encode()); err != nil || r2 != r {
				t.Fatalf("sub record %v does not round-trip: %v %v", r, r2, err)
			}
		}
		_, _ = decodeOwners(b, nil)
		_, _ = decodeDestMeta(b)
	})
}
