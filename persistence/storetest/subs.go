package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// subCases cover durable subscriptions: one stored copy per topic message, a pending
// set per subscription.
var subCases = []testCase{
	{name: "Recover", run: testSubsRecover},
	{name: "KeysComparedByField", run: testSubsKeysByField},
	{name: "ScanSub", run: testSubsScanSub},
	{name: "AckSub", run: testSubsAckSub},
	{name: "Selective", run: testSubsSelective},
	{name: "AckSubOutOfOrder", run: testSubsAckOutOfOrder},
	{name: "RemoveSub", run: testSubsRemoveSub},
	{name: "ReplaceSameTopic", run: testSubsReplaceSameTopic},
	{name: "ReplaceOtherTopic", run: testSubsReplaceOtherTopic},
	{name: "UnknownSub", run: testSubsUnknown},
	{name: "TopicMessageWithoutSubs", run: testSubsTopicWithoutSubs},
	{name: "QueueIgnoresSubs", run: testSubsQueueIgnoresSubs},
	{name: "AckDeletesTopicMessage", run: testSubsAck},
	{name: "PurgeTopic", run: testSubsPurge},
	{name: "ReplaceTopicMessage", run: testSubsReplaceMessage},
}

const (
	topicT  = "topic://storetest.prices"
	topicT2 = "topic://storetest.news"
)

var (
	s1 = persistence.SubKey{ClientID: "client-1", Name: "sub-1"}
	s2 = persistence.SubKey{ClientID: "client-2", Name: "sub-2"}
)

func subInfo(key persistence.SubKey, dest string) persistence.SubInfo {
	return persistence.SubInfo{Key: key, Dest: dest, Created: 1_700_000_000_000}
}

// withSubs registers s1 and s2 on topicT and adds messages seqs to both.
func (f *fixture) withSubs(seqs []uint64) {
	f.t.Helper()
	f.commit(func(b persistence.Batch) {
		b.AddSub(subInfo(s1, topicT))
		b.AddSub(subInfo(s2, topicT))
	})
	f.add(newMsgs(topicT, seqs, s1, s2)...)
}

func testSubsRecover(t *testing.T, f *fixture) {
	want := []persistence.SubInfo{
		{Key: persistence.SubKey{ClientID: "client-1", Name: "a"}, Dest: topicT2, Created: 5},
		{Key: s1, Dest: topicT, Created: 1_700_000_000_001},
		{Key: s2, Dest: topicT, Selector: "price > 10 AND sym = 'X''Y'", Created: 1_700_000_000_002},
	}
	f.commit(func(b persistence.Batch) {
		for _, i := range []int{2, 0, 1} {
			b.AddSub(want[i])
		}
	})
	rec := f.recover()
	requireSorted(t, rec)
	require.Equal(t, want, rec.Subs)
	require.Empty(t, rec.Destinations, "AddSub alone does not create a destination")
}

func testSubsKeysByField(t *testing.T, f *fixture) {
	x := persistence.SubKey{ClientID: "a:b", Name: "c"}
	y := persistence.SubKey{ClientID: "a", Name: "b:c"}
	// Joined with a plain ":" both keys read "a:b:c" (SubKey.String escapes, stores must
	// not depend on any string form at all).
	require.Equal(t, x.ClientID+":"+x.Name, y.ClientID+":"+y.Name)
	f.commit(func(b persistence.Batch) {
		b.AddSub(subInfo(x, topicT))
		b.AddSub(subInfo(y, topicT))
	})
	f.add(newMsg(topicT, 1, x), newMsg(topicT, 2, y))
	f.requireSubSeqs(x, 1)
	f.requireSubSeqs(y, 2)
	rec := f.recover()
	require.Equal(t, []persistence.SubInfo{subInfo(y, topicT), subInfo(x, topicT)}, rec.Subs)
	f.commit(func(b persistence.Batch) { b.RemoveSub(x) })
	f.requireSubSeqs(y, 2)
	f.requireSeqs(topicT, 2)
}

func testSubsScanSub(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 5))
	want := newMsgs(topicT, seqRange(1, 5))
	for _, k := range []persistence.SubKey{s1, s2} {
		got := f.scanSub(k, 0, 0)
		requireMessages(t, want, got)
		for _, m := range got {
			requireSubs(t, m, s1, s2)
		}
		require.Equal(t, []uint64{3, 4}, seqsOf(f.scanSub(k, 2, 2)))
		require.Equal(t, []uint64{5}, seqsOf(f.scanSub(k, 4, 0)))
		require.Empty(t, f.scanSub(k, 5, 0))
	}
	got := f.scan(topicT, 0, 0)
	requireMessages(t, want, got)
	for _, m := range got {
		requireSubs(t, m, s1, s2)
	}
	f.requireStats(topicT, 5, bodyBytes(want...)) // one copy, not one per subscription
	d, ok := destState(f.recover(), topicT)
	require.True(t, ok)
	require.Equal(t, persistence.DestState{Name: topicT, LastSeq: 5, Msgs: 5, Bytes: bodyBytes(want...)}, d)
}

func testSubsAckSub(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 5))
	all := newMsgs(topicT, seqRange(1, 5))

	f.commit(func(b persistence.Batch) { b.AckSub(s1, 1) })
	f.requireSubSeqs(s1, 2, 3, 4, 5)
	f.requireSubSeqs(s2, 1, 2, 3, 4, 5)
	f.requireStats(topicT, 5, bodyBytes(all...))
	got := f.scan(topicT, 0, 1)
	require.Len(t, got, 1)
	requireSubs(t, got[0], s2)

	// Twice, an unknown seq, an unknown subscription: harmless.
	f.commit(func(b persistence.Batch) {
		b.AckSub(s1, 1)
		b.AckSub(s1, 99)
		b.AckSub(persistence.SubKey{ClientID: "client-1", Name: "unknown"}, 2)
	})
	f.requireSubSeqs(s1, 2, 3, 4, 5)
	f.requireSubSeqs(s2, 1, 2, 3, 4, 5)

	f.commit(func(b persistence.Batch) { b.AckSub(s2, 1) })
	f.requireSeqs(topicT, 2, 3, 4, 5)
	f.requireStats(topicT, 4, bodyBytes(all[1:]...))

	f.commit(func(b persistence.Batch) {
		for s := uint64(2); s <= 5; s++ {
			b.AckSub(s1, s)
			b.AckSub(s2, s)
		}
	})
	f.requireSubSeqs(s1)
	f.requireSubSeqs(s2)
	f.requireSeqs(topicT)
	f.requireStats(topicT, 0, 0)
	d, ok := destState(f.recover(), topicT)
	require.True(t, ok)
	require.Equal(t, persistence.DestState{Name: topicT, LastSeq: 5}, d)
}

func testSubsSelective(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 2))
	f.add(newMsg(topicT, 3, s1)) // s2's selector did not match
	f.add(newMsg(topicT, 4, s2))
	f.requireSubSeqs(s1, 1, 2, 3)
	f.requireSubSeqs(s2, 1, 2, 4)
	got := f.scan(topicT, 2, 0)
	require.Len(t, got, 2)
	requireSubs(t, got[0], s1)
	requireSubs(t, got[1], s2)

	f.commit(func(b persistence.Batch) { b.AckSub(s1, 3) })
	f.requireSeqs(topicT, 1, 2, 4)
	f.commit(func(b persistence.Batch) { b.AckSub(s1, 4) }) // s1 never held 4
	f.requireSeqs(topicT, 1, 2, 4)
	f.requireSubSeqs(s2, 1, 2, 4)
}

func testSubsAckOutOfOrder(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 6))
	for _, s := range []uint64{5, 3, 4} {
		f.commit(func(b persistence.Batch) { b.AckSub(s1, s) })
	}
	f.commit(func(b persistence.Batch) { b.AckSub(s2, 5); b.AckSub(s2, 1) })
	f.requireSubSeqs(s1, 1, 2, 6)
	f.requireSubSeqs(s2, 2, 3, 4, 6)
	f.requireSeqs(topicT, 1, 2, 3, 4, 6)
	require.Equal(t, []uint64{2, 6}, seqsOf(f.scanSub(s1, 1, 0)))
	require.Equal(t, []uint64{3, 4}, seqsOf(f.scanSub(s2, 2, 2)))
	f.requireStats(topicT, 5, bodyBytes(newMsgs(topicT, []uint64{1, 2, 3, 4, 6})...))
}

func testSubsRemoveSub(t *testing.T, f *fixture) {
	f.commit(func(b persistence.Batch) {
		b.AddSub(subInfo(s1, topicT))
		b.AddSub(subInfo(s2, topicT))
	})
	f.add(newMsg(topicT, 1, s1, s2), newMsg(topicT, 2, s1), newMsg(topicT, 3, s2))

	f.commit(func(b persistence.Batch) { b.RemoveSub(s1) })
	f.requireSeqs(topicT, 1, 3) // 2 was held by s1 alone
	got := f.scan(topicT, 0, 0)
	requireSubs(t, got[0], s2)
	f.requireSubSeqs(s2, 1, 3)
	f.requireStats(topicT, 2, bodyBytes(newMsg(topicT, 1), newMsg(topicT, 3)))
	rec := f.recover()
	require.Equal(t, []persistence.SubInfo{subInfo(s2, topicT)}, rec.Subs)
	err := f.s.ScanSub(t.Context(), s1, 0, 0, func(*persistence.Message) error { return nil })
	require.ErrorIs(t, err, persistence.ErrUnknownSub)

	f.commit(func(b persistence.Batch) { b.RemoveSub(s1); b.AckSub(s1, 1) }) // harmless
	f.requireSeqs(topicT, 1, 3)

	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)) })
	f.requireSubSeqs(s1) // a new subscription holds nothing of the old one
	f.add(newMsg(topicT, 4, s1, s2))
	f.requireSubSeqs(s1, 4)

	f.commit(func(b persistence.Batch) { b.RemoveSub(s2) })
	f.requireSeqs(topicT, 4)
	f.requireSubSeqs(s1, 4)
}

func testSubsReplaceSameTopic(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 2))
	changed := persistence.SubInfo{Key: s1, Dest: topicT, Selector: "sym = 'ACME'", Created: 42}
	f.commit(func(b persistence.Batch) { b.AddSub(changed) })
	rec := f.recover()
	require.Equal(t, []persistence.SubInfo{changed, subInfo(s2, topicT)}, rec.Subs)
	f.requireSubSeqs(s1, 1, 2) // what it held is kept
	f.add(newMsg(topicT, 3, s1))
	f.requireSubSeqs(s1, 1, 2, 3)
}

func testSubsReplaceOtherTopic(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 2))
	f.add(newMsg(topicT, 3, s1))
	moved := persistence.SubInfo{Key: s1, Dest: topicT2, Selector: "x = 1", Created: 43}
	f.commit(func(b persistence.Batch) { b.AddSub(moved) })
	rec := f.recover()
	require.Equal(t, []persistence.SubInfo{moved, subInfo(s2, topicT)}, rec.Subs)
	f.requireSubSeqs(s1)             // released, as by RemoveSub
	f.requireSeqs(topicT, 1, 2)      // 3 was held by s1 alone
	f.add(newMsg(topicT, 4, s1, s2)) // s1 is no longer on topicT
	got := f.scan(topicT, 3, 0)
	require.Len(t, got, 1)
	requireSubs(t, got[0], s2)
	f.add(newMsg(topicT2, 1, s1))
	f.requireSubSeqs(s1, 1)
	requireMessages(t, []*persistence.Message{newMsg(topicT2, 1)}, f.scanSub(s1, 0, 0))
}

func testSubsUnknown(t *testing.T, f *fixture) {
	unknown := persistence.SubKey{ClientID: "nobody", Name: "nothing"}
	calls := 0
	err := f.s.ScanSub(t.Context(), unknown, 0, 0, func(*persistence.Message) error { calls++; return nil })
	require.ErrorIs(t, err, persistence.ErrUnknownSub)
	require.Zero(t, calls)

	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)) })
	f.add(newMsg(topicT, 1, s1, unknown), newMsg(topicT, 2, unknown))
	f.requireSeqs(topicT, 1) // 2 names nobody the store holds: not kept
	got := f.scan(topicT, 0, 0)
	requireSubs(t, got[0], s1)
	f.commit(func(b persistence.Batch) { b.AckSub(s1, 1) })
	f.requireSeqs(topicT)
	f.requireStats(topicT, 0, 0)
	d, ok := destState(f.recover(), topicT)
	require.True(t, ok)
	require.Equal(t, uint64(2), d.LastSeq, "an Add that is not kept still counts for LastSeq")

	ctx, cancel := contextCanceled(t)
	defer cancel()
	err = f.s.ScanSub(ctx, s1, 0, 0, func(*persistence.Message) error { calls++; return nil })
	require.ErrorIs(t, err, ctx.Err())
}

func testSubsTopicWithoutSubs(t *testing.T, f *fixture) {
	f.add(newMsg(topicT, 1), newMsg(topicT, 2))
	f.requireSeqs(topicT)
	f.requireStats(topicT, 0, 0)
	rec := f.recover()
	requireSorted(t, rec)
	require.Equal(t, []persistence.DestState{{Name: topicT, LastSeq: 2}}, rec.Destinations)
	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)) })
	f.requireSubSeqs(s1) // a subscription sees only messages added after it
}

func testSubsQueueIgnoresSubs(t *testing.T, f *fixture) {
	const q = "queue://storetest.subs"
	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)) })
	f.add(newMsg(q, 1, s1))
	f.requireSubSeqs(s1)
	got := f.scan(q, 0, 0)
	require.Len(t, got, 1)
	requireMessage(t, newMsg(q, 1), got[0])
	requireSubs(t, got[0])
	f.commit(func(b persistence.Batch) { b.AckSub(s1, 1) })
	f.requireSeqs(q, 1)
	f.commit(func(b persistence.Batch) { b.Ack(q, 1) })
	f.requireSeqs(q)
}

func testSubsAck(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 3))
	f.commit(func(b persistence.Batch) { b.Ack(topicT, 2) }) // e.g. expired
	f.requireSeqs(topicT, 1, 3)
	f.requireSubSeqs(s1, 1, 3)
	f.requireSubSeqs(s2, 1, 3)
	f.requireStats(topicT, 2, bodyBytes(newMsg(topicT, 1), newMsg(topicT, 3)))
	f.commit(func(b persistence.Batch) { b.AckSub(s1, 2); b.AckSub(s2, 2) }) // harmless now
	f.requireSeqs(topicT, 1, 3)
}

func testSubsPurge(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 3))
	f.commit(func(b persistence.Batch) { b.Purge(topicT) })
	f.requireSeqs(topicT)
	f.requireSubSeqs(s1)
	f.requireSubSeqs(s2)
	f.requireStats(topicT, 0, 0)
	require.Len(t, f.recover().Subs, 2, "Purge keeps the subscriptions")
	f.add(newMsg(topicT, 4, s1, s2))
	f.requireSubSeqs(s1, 4)
	f.requireSubSeqs(s2, 4)
}

func testSubsReplaceMessage(t *testing.T, f *fixture) {
	f.withSubs(seqRange(1, 1))
	f.add(newMsg(topicT, 2, s1, s1, s2)) // a duplicate entry counts once
	f.commit(func(b persistence.Batch) { b.AckSub(s1, 2) })
	f.requireSeqs(topicT, 1, 2)
	got := f.scan(topicT, 1, 0)
	requireSubs(t, got[0], s2)

	again := newMsg(topicT, 1, s2)
	again.RedeliveryCount = 2
	f.add(again) // replaces message 1, now owed by s2 only
	f.requireSubSeqs(s1)
	f.requireSubSeqs(s2, 1, 2)
	requireMessage(t, again, f.scanSub(s2, 0, 1)[0])
	f.requireStats(topicT, 2, bodyBytes(again, newMsg(topicT, 2)))
}
