package storetest

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// messageCases cover storing, reading and deleting messages.
var messageCases = []testCase{
	{name: "RecoverEmpty", run: testRecoverEmpty},
	{name: "AddScanFields", run: testAddScanFields},
	{name: "ScanRange", run: testScanRange},
	{name: "AddCopiesMessage", run: testAddCopiesMessage},
	{name: "AddReplacesSameSeq", run: testAddReplacesSameSeq},
	{name: "OutOfOrderAdd", run: testOutOfOrderAdd},
	{name: "DestinationsIndependent", run: testDestinationsIndependent},
	{name: "AckAndStats", run: testAckAndStats},
	{name: "Purge", run: testPurge},
	{name: "InvalidOperations", run: testInvalidOperations},
	{name: "LargeMessage", run: testLargeMessage},
	{name: "TypedPart", run: testTypedPart},
	{name: "DurableTypedPart", durable: true, run: testDurableTypedPart},
}

func testRecoverEmpty(t *testing.T, f *fixture) {
	require.Empty(t, f.rec.Destinations, "destinations of a fresh store")
	require.Empty(t, f.rec.Subs, "durable subscriptions of a fresh store")
	rec := f.recover()
	require.Empty(t, rec.Destinations)
	require.Empty(t, rec.Subs)
	f.requireStats("queue://storetest.none", 0, 0)
}

func testAddScanFields(t *testing.T, f *fixture) {
	const q = "queue://storetest.fields"
	want := []*persistence.Message{
		{
			Dest: q, Seq: 1, ID: "ID:host-1234-1:1:1:1:1",
			Headers: persistence.Headers{
				"dup", "first", "content-type", "text/plain", "dup", "second",
				"empty", "", "ünïcödé", "värde", "colon:key", "line\nbreak\\back:slash",
			},
			Body:       []byte("hello\x00world\x00\xff\xfe"),
			Persistent: true, Priority: 9, Expires: 1_800_000_000_000, Timestamp: 1_700_000_000_123,
			RedeliveryCount: 3,
		},
		{Dest: q, Seq: 2}, // every field zero: no ID, headers or body
		{
			Dest: q, Seq: 3, ID: "ID:3", Headers: persistence.Headers{}, Body: []byte{},
			Priority: 4, Expires: math.MaxInt64, Timestamp: -1, RedeliveryCount: math.MaxUint32,
		},
		{Dest: q, Seq: 1<<32 + 7, ID: "ID:beyond-32-bits", Body: []byte{0}},
		{Dest: q, Seq: 1<<62 + 1, ID: "ID:beyond-62-bits", Body: []byte("x"), Priority: 1},
	}
	f.add(want...)

	got := f.scan(q, 0, 0)
	requireMessages(t, want, got)
	v, ok := got[0].Headers.Get("dup")
	require.True(t, ok)
	require.Equal(t, "first", v, "the first occurrence of a repeated header wins")
	for _, m := range got {
		requireSubs(t, m) // queue messages report no subscriptions
	}
	requireMessages(t, want[3:], f.scan(q, 3, 0))
	requireMessages(t, want[4:], f.scan(q, 1<<32+7, 0))
	require.Empty(t, f.scan(q, 1<<62+1, 0))
	require.Empty(t, f.scan(q, math.MaxUint64, 0))
	f.requireStats(q, 5, bodyBytes(want...))
}

func testScanRange(t *testing.T, f *fixture) {
	const q = "queue://storetest.range"
	// 300 messages with even seqs 2..600, so afterSeq can fall into gaps and scans cross
	// any internal page size an adapter may use.
	var seqs []uint64
	for s := uint64(2); s <= 600; s += 2 {
		seqs = append(seqs, s)
	}
	f.add(newMsgs(q, seqs)...)

	requireMessages(t, newMsgs(q, seqs), f.scan(q, 0, 0))
	require.Equal(t, seqs, seqsOf(f.scan(q, 0, -1)), "max < 0 means no limit")
	require.Equal(t, seqs[:200], seqsOf(f.scan(q, 0, 200)))
	require.Equal(t, []uint64{4, 6}, seqsOf(f.scan(q, 3, 2)), "afterSeq inside a gap")
	require.Equal(t, []uint64{6, 8}, seqsOf(f.scan(q, 4, 2)), "afterSeq is exclusive")
	require.Equal(t, seqs[150:279], seqsOf(f.scan(q, 300, 129)))
	require.Equal(t, seqs[150:], seqsOf(f.scan(q, 301, 0)))
	require.Equal(t, []uint64{600}, seqsOf(f.scan(q, 598, 10)))
	require.Empty(t, f.scan(q, 600, 0))
	require.Empty(t, f.scan(q, 10_000, 0))

	f.commit(func(b persistence.Batch) { b.Ack(q, 8); b.Ack(q, 10) })
	require.Equal(t, []uint64{12, 14}, seqsOf(f.scan(q, 6, 2)), "acked messages are skipped")

	t.Run("UnknownDest", func(t *testing.T) {
		calls := 0
		err := f.s.Scan(t.Context(), "queue://storetest.unknown", 0, 0, func(*persistence.Message) error {
			calls++
			return nil
		})
		require.NoError(t, err)
		require.Zero(t, calls)
	})
	t.Run("CallbackErrorStops", func(t *testing.T) {
		errStop := errors.New("storetest: stop")
		calls := 0
		err := f.s.Scan(t.Context(), q, 0, 0, func(*persistence.Message) error {
			calls++
			if calls == 2 {
				return errStop
			}
			return nil
		})
		require.ErrorIs(t, err, errStop)
		require.Equal(t, 2, calls, "fn called after it returned an error")
	})
	t.Run("CanceledContext", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := 0
		err := f.s.Scan(ctx, q, 0, 0, func(*persistence.Message) error { calls++; return nil })
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, calls)
	})
}

func testAddCopiesMessage(t *testing.T, f *fixture) {
	const q = "queue://storetest.copies"
	m := newMsg(q, 1)
	want1 := m.Clone()
	b := f.s.Begin()
	b.Add(m)
	// Mutate and reuse m between Add and Commit, as a broker reusing buffers would.
	m.Body[0] = 'X'
	m.Headers[1] = "changed"
	m.ID = "ID:changed"
	m.Seq = 2
	m.Body = append(m.Body, " and more"...)
	want2 := m.Clone()
	b.Add(m)
	m.Seq, m.Priority = 3, 7
	m.Headers = append(m.Headers, "extra", "header")
	want3 := m.Clone()
	b.Add(m)
	m.Headers[0], m.Body[1], m.Seq = "mutated", 'Y', 99
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	// ... and after Commit.
	m.Body[2], m.Headers[2] = 'Z', "mutated"

	got := f.scan(q, 0, 0)
	requireMessages(t, []*persistence.Message{want1, want2, want3}, got)
}

func testAddReplacesSameSeq(t *testing.T, f *fixture) {
	const q = "queue://storetest.replace"
	f.add(newMsg(q, 1), newMsg(q, 2))
	again := newMsg(q, 1)
	again.Body = []byte("redelivered")
	again.RedeliveryCount = 1
	again.Headers = persistence.Headers{"redelivered", "true"}
	f.add(again)
	got := f.scan(q, 0, 0)
	requireMessages(t, []*persistence.Message{again, newMsg(q, 2)}, got)
	f.requireStats(q, 2, bodyBytes(again, newMsg(q, 2)))
}

func testOutOfOrderAdd(t *testing.T, f *fixture) {
	const q = "queue://storetest.order"
	for _, s := range []uint64{5, 3, 4, 1, 2} {
		f.add(newMsg(q, s))
	}
	f.add(newMsgs(q, []uint64{10, 8, 9})...)
	f.requireSeqs(q, 1, 2, 3, 4, 5, 8, 9, 10)
	f.commit(func(b persistence.Batch) { b.Ack(q, 3) })
	f.add(newMsg(q, 7), newMsg(q, 6))
	f.requireSeqs(q, 1, 2, 4, 5, 6, 7, 8, 9, 10)
	require.Equal(t, []uint64{5, 6, 7}, seqsOf(f.scan(q, 4, 3)))
	requireMessages(t, newMsgs(q, []uint64{1, 2, 4, 5, 6, 7, 8, 9, 10}), f.scan(q, 0, 0))
	d, ok := destState(f.recover(), q)
	require.True(t, ok)
	require.Equal(t, uint64(10), d.LastSeq)
}

func testDestinationsIndependent(t *testing.T, f *fixture) {
	const (
		a  = "queue://storetest.A"
		ab = "queue://storetest.AB" // a name that extends another
		qx = "queue://storetest.X"
		tx = "topic://storetest.X" // same name, other kind
	)
	sub := persistence.SubKey{ClientID: "c", Name: "independent"}
	f.commit(func(b persistence.Batch) { b.AddSub(persistence.SubInfo{Key: sub, Dest: tx}) })
	f.add(newMsgs(a, seqRange(1, 3))...)
	f.add(newMsgs(ab, seqRange(1, 2))...)
	f.add(newMsgs(qx, seqRange(1, 2))...)
	f.add(newMsgs(tx, seqRange(1, 2), sub)...)

	requireMessages(t, newMsgs(a, seqRange(1, 3)), f.scan(a, 0, 0))
	requireMessages(t, newMsgs(ab, seqRange(1, 2)), f.scan(ab, 0, 0))
	requireMessages(t, newMsgs(qx, seqRange(1, 2)), f.scan(qx, 0, 0))
	requireMessages(t, newMsgs(tx, seqRange(1, 2)), f.scan(tx, 0, 0))

	f.commit(func(b persistence.Batch) { b.Ack(a, 1); b.Ack(qx, 2) })
	f.requireSeqs(a, 2, 3)
	f.requireSeqs(ab, 1, 2)
	f.requireSeqs(qx, 1)
	f.requireSeqs(tx, 1, 2)
	f.requireSubSeqs(sub, 1, 2)

	f.commit(func(b persistence.Batch) { b.Purge(ab) })
	f.requireSeqs(a, 2, 3)
	f.requireSeqs(ab)
	f.commit(func(b persistence.Batch) { b.Purge(qx) })
	f.requireSeqs(tx, 1, 2)
	f.requireSubSeqs(sub, 1, 2)
	f.requireStats(a, 2, bodyBytes(newMsgs(a, []uint64{2, 3})...))
	f.requireStats(tx, 2, bodyBytes(newMsgs(tx, seqRange(1, 2))...))
	f.requireStats(qx, 0, 0)
}

func testAckAndStats(t *testing.T, f *fixture) {
	const q = "queue://storetest.ack"
	ms := newMsgs(q, seqRange(1, 4))
	ms[1].Body = make([]byte, 1000)
	ms[2].Body = nil
	f.add(ms...)
	f.requireStats(q, 4, bodyBytes(ms...))

	f.commit(func(b persistence.Batch) { b.Ack(q, 2) })
	f.requireSeqs(q, 1, 3, 4)
	f.requireStats(q, 3, bodyBytes(ms[0], ms[2], ms[3]))

	// Acking twice, an unknown seq or an unknown destination is harmless.
	f.commit(func(b persistence.Batch) {
		b.Ack(q, 2)
		b.Ack(q, 99)
		b.Ack("queue://storetest.unknown", 1)
	})
	f.requireSeqs(q, 1, 3, 4)
	f.requireStats(q, 3, bodyBytes(ms[0], ms[2], ms[3]))
	f.requireStats("queue://storetest.unknown", 0, 0)

	f.commit(func(b persistence.Batch) { b.Ack(q, 3) }) // the empty body
	f.requireStats(q, 2, bodyBytes(ms[0], ms[3]))
	f.commit(func(b persistence.Batch) { b.Ack(q, 4); b.Ack(q, 1) })
	f.requireSeqs(q)
	f.requireStats(q, 0, 0)
	d, ok := destState(f.recover(), q)
	require.True(t, ok, "an emptied destination is still recovered")
	require.Equal(t, persistence.DestState{Name: q, LastSeq: 4}, d)
}

func testPurge(t *testing.T, f *fixture) {
	const (
		a = "queue://storetest.purgeA"
		b = "queue://storetest.purgeB"
	)
	f.add(newMsgs(a, seqRange(1, 5))...)
	f.add(newMsgs(b, seqRange(1, 3))...)

	f.commit(func(bt persistence.Batch) { bt.Purge(a) })
	f.requireSeqs(a)
	f.requireStats(a, 0, 0)
	f.requireSeqs(b, 1, 2, 3)
	f.requireStats(b, 3, bodyBytes(newMsgs(b, seqRange(1, 3))...))

	f.commit(func(bt persistence.Batch) { bt.Purge("queue://storetest.unknown") })
	f.add(newMsg(a, 6))
	f.requireSeqs(a, 6)

	rec := f.recover()
	d, ok := destState(rec, a)
	require.True(t, ok)
	require.Equal(t, persistence.DestState{Name: a, LastSeq: 6, Msgs: 1, Bytes: bodyBytes(newMsg(a, 6))}, d)
	_, ok = destState(rec, "queue://storetest.unknown")
	require.False(t, ok, "Purge alone does not create a destination")
}

func testInvalidOperations(t *testing.T, f *fixture) {
	const q = "queue://storetest.invalid"
	cases := []struct {
		name string
		ops  func(b persistence.Batch)
	}{
		{"AddSeqZero", func(b persistence.Batch) { b.Add(newMsg(q, 1)); b.Add(newMsg(q, 0)) }},
		{"AddNoDest", func(b persistence.Batch) { b.Add(newMsg(q, 1)); b.Add(newMsg("", 2)) }},
		{"AddSubOnQueue", func(b persistence.Batch) {
			b.Add(newMsg(q, 1))
			b.AddSub(persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "q"}, Dest: q})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := f.s.Begin()
			c.ops(b)
			require.Error(t, b.Commit(t.Context(), persistence.Sync))
			f.requireSeqs(q)
			rec := f.recover()
			require.Empty(t, rec.Destinations, "nothing of a failed batch is applied")
			require.Empty(t, rec.Subs, "nothing of a failed batch is applied")
		})
	}
}

func testLargeMessage(t *testing.T, f *fixture) {
	const q = "queue://storetest.large"
	m := newMsg(q, 1)
	m.Body = make([]byte, 4<<20)
	for i := range m.Body {
		m.Body[i] = byte(i * 7 % 251) // includes NULs, no period a page size would hide
	}
	f.add(m, newMsg(q, 2))
	got := f.scan(q, 0, 1)
	require.Len(t, got, 1)
	requireMessage(t, m, got[0])
	f.requireStats(q, 2, bodyBytes(m, newMsg(q, 2)))
	f.commit(func(b persistence.Batch) { b.Ack(q, 1) })
	f.requireStats(q, 1, bodyBytes(newMsg(q, 2)))
}

// typedMsgs returns messages with every body kind and every kind of typed property, on
// a queue and on a topic (owed to s1 and s2), and one without a typed part.
func typedMsgs(q string) []*persistence.Message {
	props := persistence.Props{
		persistence.BoolProp("bool", true),
		persistence.BoolProp("false", false),
		persistence.IntProp("byte", persistence.PropByte, math.MinInt8),
		persistence.IntProp("short", persistence.PropShort, math.MaxInt16),
		persistence.IntProp("int", persistence.PropInt, math.MinInt32),
		persistence.IntProp("long", persistence.PropLong, math.MaxInt64),
		persistence.FloatProp("float", 1.1),
		persistence.DoubleProp("double", -2.5e-300),
		persistence.DoubleProp("nan", math.Float64frombits(0x7ff8000000000001)),
		persistence.BytesProp("bytes", []byte{0, 1, 0xff}),
		persistence.BytesProp("empty", nil),
	}
	var ms []*persistence.Message
	for k := persistence.BodyPlain; k <= persistence.BodyObject; k++ {
		m := newMsg(q, uint64(k)+1)
		m.Kind = k
		m.Props = props[:int(k)*2] // BodyPlain: a message without a typed part
		ms = append(ms, m)
	}
	ms = append(ms, &persistence.Message{Dest: q, Seq: 10, Kind: persistence.BodyMap, Props: props,
		Headers: persistence.Headers{"string", "s"}, Body: []byte{1}})
	topic := &persistence.Message{Dest: topicT, Seq: 1, ID: "ID:t", Kind: persistence.BodyStream, Props: props,
		Subs: []persistence.SubKey{s1, s2}}
	return append(ms, topic)
}

// testTypedPart: every body kind and property kind round-trips, from a queue and from a
// topic (Scan and ScanSub), and the store keeps its own copy.
func testTypedPart(t *testing.T, f *fixture) { typedPart(t, f, false) }

// testDurableTypedPart: testTypedPart's messages read back the same after a reopen.
func testDurableTypedPart(t *testing.T, f *fixture) { typedPart(t, f, true) }

func typedPart(t *testing.T, f *fixture, reopen bool) {
	const q = "queue://storetest.typed"
	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)); b.AddSub(subInfo(s2, topicT)) })
	ms := typedMsgs(q)
	f.add(ms...)
	// Add copied the byte arrays: changing the caller's does not reach the store.
	last := ms[len(ms)-1]
	raw, _ := last.Props.Get("bytes")
	raw.Bytes[0] = 42
	want := typedMsgs(q)
	check := func(t *testing.T) {
		requireMessages(t, want[:len(want)-1], f.scan(q, 0, 0))
		topic := want[len(want)-1]
		requireMessages(t, []*persistence.Message{topic}, f.scan(topicT, 0, 0))
		for _, k := range []persistence.SubKey{s1, s2} {
			requireMessages(t, []*persistence.Message{topic}, f.scanSub(k, 0, 0))
		}
		for _, m := range f.scan(q, 0, 0) {
			if m.Kind == persistence.BodyPlain {
				require.Nil(t, m.Props, "a message without a typed part reads back without one")
			}
		}
	}
	check(t)
	if reopen {
		f.reopen()
		check(t)
		f.reopen() // a reopen without writes changes nothing
		check(t)
	}
}
