package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// lifecycleCases cover Recover, Close and, for durable adapters, reopening.
var lifecycleCases = []testCase{
	{name: "RecoverLastSeq", run: testRecoverLastSeq},
	{name: "Close", run: testClose},
	{name: "Size", run: testSize},
	{name: "DurableReopen", durable: true, run: testDurableReopen},
	{name: "DurableReopenCycles", durable: true, run: testDurableReopenCycles},
	{name: "DurableAsyncFlushedByClose", durable: true, run: testDurableAsyncFlushed},
}

// testSize: a store that reports its size (persistence.Sizer, which the broker holds
// under storeUsage) counts at least the bodies of what it holds.
func testSize(t *testing.T, f *fixture) {
	sz, ok := f.s.(persistence.Sizer)
	if !ok {
		t.Skip("the store does not implement persistence.Sizer")
	}
	const dest = "queue://storetest.size"
	body := make([]byte, 16<<10)
	var msgs []*persistence.Message
	for seq := uint64(1); seq <= 64; seq++ {
		m := newMsg(dest, seq)
		m.Body = body
		msgs = append(msgs, m)
	}
	f.add(msgs...)
	n, err := sz.Size(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(64*len(body)), "Size with 1 MiB of bodies stored")
}

func contextCanceled(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx, cancel
}

func testRecoverLastSeq(t *testing.T, f *fixture) {
	const (
		acked     = "queue://storetest.last.acked"
		gaps      = "queue://storetest.last.gaps"
		purged    = "queue://storetest.last.purged"
		sameBatch = "queue://storetest.last.samebatch"
		topic     = "topic://storetest.last"
		rolled    = "queue://storetest.last.rolledback"
	)
	f.add(newMsgs(acked, seqRange(1, 5))...)
	f.commit(func(b persistence.Batch) {
		for s := uint64(5); s >= 1; s-- { // the highest first
			b.Ack(acked, s)
		}
	})
	f.add(newMsg(gaps, 10))
	f.add(newMsg(gaps, 3))
	f.add(newMsgs(purged, seqRange(1, 3))...)
	f.commit(func(b persistence.Batch) { b.Purge(purged) })
	f.commit(func(b persistence.Batch) { b.Add(newMsg(sameBatch, 9)); b.Ack(sameBatch, 9) })
	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topic)) })
	f.add(newMsg(topic, 4, s1), newMsg(topic, 7))
	b := f.s.Begin()
	b.Add(newMsg(rolled, 1))
	b.Add(newMsg(gaps, 20))
	b.Rollback()

	want := []persistence.DestState{
		{Name: acked, LastSeq: 5},
		{Name: gaps, LastSeq: 10, Msgs: 2, Bytes: bodyBytes(newMsg(gaps, 3), newMsg(gaps, 10))},
		{Name: purged, LastSeq: 3},
		{Name: sameBatch, LastSeq: 9},
		{Name: topic, LastSeq: 7, Msgs: 1, Bytes: bodyBytes(newMsg(topic, 4))},
	}
	rec := f.recover()
	requireSorted(t, rec)
	require.Equal(t, want, rec.Destinations)
	for _, d := range rec.Destinations {
		msgs, bytes := f.s.Stats(d.Name)
		require.Equal(t, [2]int64{d.Msgs, d.Bytes}, [2]int64{msgs, bytes}, "Recover and Stats of %s", d.Name)
	}

	if !f.canReopen() {
		return
	}
	f.reopen()
	requireSorted(t, f.rec)
	require.Len(t, f.rec.Destinations, len(want), "destinations after reopen: %v", f.rec.Destinations)
	for i, d := range f.rec.Destinations {
		require.Equal(t, want[i].Name, d.Name)
		require.GreaterOrEqual(t, d.LastSeq, want[i].LastSeq, "LastSeq of %s after reopen: seqs would be reused", d.Name)
		require.Equal(t, [2]int64{want[i].Msgs, want[i].Bytes}, [2]int64{d.Msgs, d.Bytes}, "Msgs, Bytes of %s after reopen", d.Name)
	}
}

// canReopen tells whether the store under test is durable; the fixture learns it from the
// features the suite runs with.
func (f *fixture) canReopen() bool { return f.durable }

func testClose(t *testing.T, f *fixture) {
	const q = "queue://storetest.close"
	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)) })
	f.add(newMsg(q, 1))
	before := f.s.Begin()
	before.Add(newMsg(q, 2))

	require.NoError(t, f.s.Close(), "Close")

	require.ErrorIs(t, before.Commit(t.Context(), persistence.Sync), persistence.ErrClosed,
		"Commit after Close of a batch begun before it")
	after := f.s.Begin()
	after.Add(newMsg(q, 3))
	require.ErrorIs(t, after.Commit(t.Context(), persistence.Sync), persistence.ErrClosed,
		"Commit of a batch begun after Close")
	if ab, ok := f.s.Begin().(persistence.AsyncBatch); ok {
		got := make(chan error, 2)
		ab.CommitAsync(persistence.Sync, func(err error) { got <- err })
		select {
		case err := <-got:
			require.ErrorIs(t, err, persistence.ErrClosed, "CommitAsync after Close")
		case <-time.After(waitLimit):
			t.Fatalf("CommitAsync after Close: done not called within %v", waitLimit)
		}
	}
	noop := func(*persistence.Message) error { return nil }
	require.ErrorIs(t, f.s.Scan(t.Context(), q, 0, 0, noop), persistence.ErrClosed, "Scan after Close")
	require.ErrorIs(t, f.s.ScanSub(t.Context(), s1, 0, 0, noop), persistence.ErrClosed, "ScanSub after Close")
	_, err := f.s.Recover(t.Context())
	require.ErrorIs(t, err, persistence.ErrClosed, "Recover after Close")

	require.NoError(t, f.s.Close(), "a second Close returns nil")
}

// durableState commits a mix of everything a store keeps and returns a check of it.
func durableState(f *fixture) (check func(t *testing.T, exactLastSeq bool)) {
	const (
		q      = "queue://storetest.durable"
		purged = "queue://storetest.durable.purged"
	)
	s3 := persistence.SubKey{ClientID: "client-3", Name: "removed"}
	subA := persistence.SubInfo{Key: s1, Dest: topicT, Created: 1}
	subB := persistence.SubInfo{Key: s2, Dest: topicT, Selector: "a > 1", Created: 2}

	f.add(newMsgs(q, seqRange(1, 5))...)
	f.commit(func(b persistence.Batch) { b.Ack(q, 2); b.Ack(q, 5) })
	f.add(newMsgs(purged, seqRange(1, 7))...)
	f.commit(func(b persistence.Batch) { b.Purge(purged) })
	f.commit(func(b persistence.Batch) {
		b.AddSub(subA)
		b.AddSub(subB)
		b.AddSub(subInfo(s3, topicT))
	})
	f.add(newMsgs(topicT, seqRange(1, 4), s1, s2, s3)...)
	f.add(newMsg(topicT, 5, s1))
	f.commit(func(b persistence.Batch) {
		b.AckSub(s1, 1)
		b.AckSub(s1, 3)
		b.AckSub(s2, 1)
		b.AckSub(s3, 2)
	})
	f.commit(func(b persistence.Batch) { b.RemoveSub(s3) })
	rolled := f.s.Begin()
	rolled.Add(newMsg(q, 6))
	rolled.Ack(q, 1)
	rolled.RemoveSub(s1)
	rolled.Rollback()
	canceled := f.s.Begin()
	canceled.Add(newMsg(q, 7))
	ctx, cancel := contextCanceled(f.t)
	defer cancel()
	require.Error(f.t, canceled.Commit(ctx, persistence.Sync))

	return func(t *testing.T, exactLastSeq bool) {
		t.Helper()
		requireMessages(t, newMsgs(q, []uint64{1, 3, 4}), f.scan(q, 0, 0))
		f.requireSeqs(purged)
		topicMsgs := f.scan(topicT, 0, 0)
		requireMessages(t, newMsgs(topicT, []uint64{2, 3, 4, 5}), topicMsgs)
		for i, subs := range [][]persistence.SubKey{{s1, s2}, {s2}, {s1, s2}, {s1}} {
			requireSubs(t, topicMsgs[i], subs...)
		}
		f.requireSubSeqs(s1, 2, 4, 5)
		f.requireSubSeqs(s2, 2, 3, 4)
		f.requireStats(q, 3, bodyBytes(newMsgs(q, []uint64{1, 3, 4})...))
		f.requireStats(topicT, 4, bodyBytes(newMsgs(topicT, []uint64{2, 3, 4, 5})...))

		rec := f.recover()
		requireSorted(t, rec)
		require.Equal(t, []persistence.SubInfo{subA, subB}, rec.Subs)
		require.Equal(t, map[persistence.SubKey]int64{s1: 3, s2: 3}, rec.Pending, "the backlogs (s3, removed, is not listed)")
		want := map[string]uint64{q: 5, purged: 7, topicT: 5}
		require.Len(t, rec.Destinations, len(want), "destinations: %v", rec.Destinations)
		for _, d := range rec.Destinations {
			last, ok := want[d.Name]
			require.True(t, ok, "unexpected destination %q", d.Name)
			if exactLastSeq {
				require.Equal(t, last, d.LastSeq, "LastSeq of %s", d.Name)
			} else {
				require.GreaterOrEqual(t, d.LastSeq, last, "LastSeq of %s after reopen", d.Name)
			}
		}
	}
}

func testDurableReopen(t *testing.T, f *fixture) {
	check := durableState(f)
	check(t, true)
	f.reopen()
	check(t, false)
	f.reopen() // reopening without writes in between changes nothing
	check(t, false)
}

// testDurableReopenCycles plays the broker over several restarts: sequence numbers
// continue from the recovered LastSeq, and nothing committed is lost or duplicated.
func testDurableReopenCycles(t *testing.T, f *fixture) {
	const (
		q      = "queue://storetest.cycles"
		cycles = 5
	)
	f.commit(func(b persistence.Batch) { b.AddSub(subInfo(s1, topicT)) })
	var (
		wantQ, wantSub []uint64
		lastQ, lastT   uint64
	)
	for cycle := range cycles {
		nextQ, nextT := uint64(1), uint64(1)
		if d, ok := destState(f.rec, q); ok {
			require.GreaterOrEqual(t, d.LastSeq, lastQ, "cycle %d: LastSeq of %s", cycle, q)
			nextQ = d.LastSeq + 1
		}
		if d, ok := destState(f.rec, topicT); ok {
			require.GreaterOrEqual(t, d.LastSeq, lastT, "cycle %d: LastSeq of %s", cycle, topicT)
			nextT = d.LastSeq + 1
		}
		for i := range uint64(20) {
			seq := nextQ + i
			f.add(newMsg(q, seq))
			wantQ = append(wantQ, seq)
			if i%3 == 0 {
				f.commit(func(b persistence.Batch) { b.Ack(q, seq) })
				wantQ = wantQ[:len(wantQ)-1]
			}
		}
		lastQ = nextQ + 19
		for i := range uint64(5) {
			f.add(newMsg(topicT, nextT+i, s1))
		}
		f.commit(func(b persistence.Batch) { b.AckSub(s1, nextT+2) })
		for i := range uint64(5) {
			if i != 2 {
				wantSub = append(wantSub, nextT+i)
			}
		}
		lastT = nextT + 4

		f.reopen()
		require.Equal(t, wantQ, seqsOf(f.scan(q, 0, 0)), "cycle %d: queue after reopen", cycle)
		require.Equal(t, wantSub, seqsOf(f.scanSub(s1, 0, 0)), "cycle %d: subscription after reopen", cycle)
		require.Equal(t, []persistence.SubInfo{subInfo(s1, topicT)}, f.rec.Subs, "cycle %d", cycle)
		f.requireStats(q, int64(len(wantQ)), bodyBytes(f.scan(q, 0, 0)...))
	}
	requireMessages(t, newMsgs(q, wantQ), f.scan(q, 0, 0))
}

func testDurableAsyncFlushed(t *testing.T, f *fixture) {
	const q = "queue://storetest.asyncflush"
	const n = 100
	for i := uint64(1); i <= n; i++ {
		b := f.s.Begin()
		b.Add(newMsg(q, i))
		require.NoError(t, b.Commit(t.Context(), persistence.Async))
	}
	last := f.s.Begin()
	last.Add(newMsg(q, n+1))
	if ab, ok := last.(persistence.AsyncBatch); ok {
		done := make(chan error, 1)
		ab.CommitAsync(persistence.Async, func(err error) { done <- err })
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(waitLimit):
			t.Fatalf("CommitAsync: done not called within %v", waitLimit)
		}
	} else {
		require.NoError(t, last.Commit(t.Context(), persistence.Async))
	}
	f.reopen()
	require.Equal(t, seqRange(1, n+1), seqsOf(f.scan(q, 0, 0)), "Async commits after a clean Close and reopen")
}
