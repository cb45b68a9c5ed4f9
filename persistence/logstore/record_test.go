package logstore

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// batchOnly returns a store that can only record batches: its writer does not run.
func batchOnly() *Store {
	s := &Store{}
	s.shell.Init(s.shellConfig(), nil)
	return s
}

// recordOf returns what a batch built by ops encodes and records, as the writer gets it.
func recordOf(t testing.TB, ops func(b persistence.Batch)) ([]byte, []op) {
	t.Helper()
	b := batchOnly().shell.NewBatch()
	ops(b)
	r, ok := b.Finish(context.Background(), persistence.Sync)
	require.True(t, ok, "batch failed: %v", r.Err)
	return append([]byte(nil), r.Rec...), append([]op(nil), r.Ops...)
}

// TestRecordRoundTrip: replay decodes exactly the operations the batch recorded, and
// every message field round-trips.
func TestRecordRoundTrip(t *testing.T) {
	full := &persistence.Message{
		Dest: "topic://prices", Seq: math.MaxInt64, ID: "ID:host-1:2:3",
		Headers: persistence.Headers{"dup", "a", "dup", "", "ü", "line\nbreak"},
		Body:    []byte("hello\x00world\xff"), Persistent: true, Priority: 9,
		Expires: math.MaxInt64, Timestamp: -1, RedeliveryCount: math.MaxUint32,
		Subs: []persistence.SubKey{{ClientID: "c", Name: "s"}, {ClientID: "", Name: "n:x"}},
	}
	empty := &persistence.Message{Dest: "queue://q", Seq: 1}
	queueWithSubs := &persistence.Message{Dest: "queue://q", Seq: 2, Subs: []persistence.SubKey{{ClientID: "c", Name: "s"}}}
	info := persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "s"}, Dest: "topic://prices",
		Selector: "price > 1 AND sym = 'X'", Created: -42}
	rec, want := recordOf(t, func(b persistence.Batch) {
		b.AddSub(info)
		b.Add(full)
		b.Add(empty)
		b.Add(queueWithSubs)
		b.Ack("queue://q", 1<<40)
		b.AckSub(info.Key, 7)
		b.RemoveSub(persistence.SubKey{ClientID: "c", Name: ""})
		b.Purge("queue://ü")
	})
	require.Len(t, want, 8)
	require.Nil(t, want[3].Subs, "the subscriptions of a queue message are not kept")
	got, err := decodeRecord(rec, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)

	for i, m := range []*persistence.Message{full, empty} {
		msg, err := messageAt(rec, got[i+1].pos)
		require.NoError(t, err)
		var dec persistence.Message
		require.NoError(t, decodeMessage(msg, &dec, "queue://other"))
		want := *m
		if len(want.Headers) == 0 {
			want.Headers = nil
		}
		if len(want.Body) == 0 {
			want.Body, dec.Body = nil, nil
		}
		require.Equal(t, want, dec)
	}

	require.Equal(t, byte(recordVersion), rec[0], "no message has a typed part")
	_, err = decodeRecord(append([]byte{recordVersionTyped + 1}, rec[1:]...), nil)
	require.ErrorIs(t, err, ErrCorrupt, "an unknown version is refused")
	_, err = decodeRecord(nil, nil)
	require.ErrorIs(t, err, ErrCorrupt)
	for n := 2; n < len(rec); n++ {
		ops, err := decodeRecord(rec[:n], nil)
		if err == nil { // a cut at an operation boundary is a shorter valid record
			require.Equal(t, want[:len(ops)], ops, "cut at %d", n)
		}
	}
}

// A record holding a message with a typed part is version 2, and the message reads back
// whole; a message without one leaves none behind in a reused Message.
func TestRecordTypedPart(t *testing.T) {
	typed := &persistence.Message{Dest: "topic://t", Seq: 5, ID: "id", Body: []byte("x"), Kind: persistence.BodyBytes,
		Props: persistence.Props{persistence.IntProp("n", persistence.PropShort, -3), persistence.FloatProp("f", 2.5)},
		Subs:  []persistence.SubKey{{ClientID: "c", Name: "s"}}}
	rec, want := recordOf(t, func(b persistence.Batch) {
		b.Add(&persistence.Message{Dest: "queue://q", Seq: 1})
		b.Add(typed)
	})
	require.Equal(t, byte(recordVersionTyped), rec[0])
	got, err := decodeRecord(rec, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, typed.Subs, got[1].Subs)
	require.EqualValues(t, 1, got[1].body)
	dec := persistence.Message{Kind: persistence.BodyText, Props: persistence.Props{{Name: "stale"}}}
	msg, err := messageAt(rec, got[0].pos)
	require.NoError(t, err)
	require.NoError(t, decodeMessage(msg, &dec, "queue://q"))
	require.Equal(t, persistence.BodyPlain, dec.Kind)
	require.Nil(t, dec.Props)
	msg, err = messageAt(rec, got[1].pos)
	require.NoError(t, err)
	require.NoError(t, decodeMessage(msg, &dec, "topic://t"))
	require.Equal(t, *typed, dec)

	// Replay refuses a record whose typed part Scan could not read.
	at := bytes.Index(rec, persistence.AppendTyped(nil, typed))
	require.Positive(t, at)
	bad := bytes.Clone(rec)
	bad[at] = persistence.TypedVersion + 1
	_, err = decodeRecord(bad, nil)
	require.ErrorIs(t, err, ErrCorrupt)
}

// TestInvalidBatches: what Commit refuses, before anything is written.
func TestInvalidBatches(t *testing.T) {
	s := batchOnly()
	for name, ops := range map[string]func(b persistence.Batch){
		"nil message":  func(b persistence.Batch) { b.Add(nil) },
		"seq 0":        func(b persistence.Batch) { b.Add(&persistence.Message{Dest: "queue://q"}) },
		"seq too high": func(b persistence.Batch) { b.Add(&persistence.Message{Dest: "queue://q", Seq: math.MaxInt64 + 1}) },
		"no dest":      func(b persistence.Batch) { b.Add(&persistence.Message{Seq: 1}) },
		"sub on queue": func(b persistence.Batch) { b.AddSub(persistence.SubInfo{Dest: "queue://q"}) },
	} {
		b := s.shell.NewBatch()
		ops(b)
		r, ok := b.Finish(context.Background(), persistence.Sync)
		require.False(t, ok, name)
		require.ErrorIs(t, r.Err, ErrInvalid, name)
	}
	b := s.shell.NewBatch()
	b.Add(&persistence.Message{Dest: "queue://q", Seq: 1, Body: make([]byte, MaxRecordBytes)})
	r, ok := b.Finish(context.Background(), persistence.Sync)
	require.False(t, ok)
	require.ErrorIs(t, r.Err, ErrTooLarge)
}

// FuzzDecodeRecord feeds arbitrary record values to the decoders replay and Scan use:
// they fail with ErrCorrupt or succeed, never panic or allocate what the input cannot
// hold, and what decodes re-decodes the same from its message bytes.
func FuzzDecodeRecord(f *testing.F) {
	rec, _ := recordOf(f, func(b persistence.Batch) {
		b.AddSub(persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "s"}, Dest: "topic://t"})
		b.Add(&persistence.Message{Dest: "topic://t", Seq: 3, ID: "id", Headers: persistence.Headers{"k", "v"},
			Body: []byte("body"), Subs: []persistence.SubKey{{ClientID: "c", Name: "s"}}})
		b.Add(&persistence.Message{Dest: "queue://q", Seq: 4, Kind: persistence.BodyMap,
			Props: persistence.Props{persistence.BytesProp("b", []byte("v")), persistence.DoubleProp("d", 2)}})
		b.Ack("queue://q", 9)
		b.AckSub(persistence.SubKey{ClientID: "c", Name: "s"}, 3)
		b.RemoveSub(persistence.SubKey{ClientID: "c", Name: "s"})
		b.Purge("queue://q")
	})
	f.Add(rec)
	f.Add([]byte{recordVersion})
	f.Add([]byte{recordVersion, byte(batchrec.OpAdd), 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := decodeRecord(data, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		for _, o := range ops {
			if o.Kind != batchrec.OpAdd {
				continue
			}
			msg, err := messageAt(data, o.pos)
			require.NoError(t, err)
			var m persistence.Message
			require.NoError(t, decodeMessage(msg, &m, o.Dest), "decodeAddOp accepted it")
			require.Equal(t, o.Seq, m.Seq)
			require.Equal(t, o.Dest, m.Dest)
			require.Equal(t, int(o.body), len(m.Body))
		}
	})
}

// FuzzDecodeCheckpoint: the checkpoint decoder never panics on damaged files.
func FuzzDecodeCheckpoint(f *testing.F) {
	c := checkpoint{low: 3, end: 9, dests: []destCheckpoint{{"queue://a", 7}},
		subs: []subCheckpoint{{persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "n"}, Dest: "topic://t"}, 4}}}
	f.Add(c.encode())
	f.Add([]byte(checkpointMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeCheckpoint(data)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		again, err := decodeCheckpoint(got.encode())
		require.NoError(t, err)
		require.Equal(t, got, again, "what decodes survives an encode")
	})
}
