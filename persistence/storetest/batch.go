package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// batchCases cover atomicity, ordering and the life of a batch.
var batchCases = []testCase{
	{name: "BatchAtomic", run: testBatchAtomic},
	{name: "BatchRollback", run: testBatchRollback},
	{name: "BatchLen", run: testBatchLen},
	{name: "BatchInOrder", run: testBatchInOrder},
	{name: "BatchDone", run: testBatchDone},
	{name: "CommitCanceledContext", run: testCommitCanceledContext},
	{name: "Concurrency", run: testConcurrency},
	{name: "AsyncBatch", run: testAsyncBatch},
	{name: "CancelableBatch", run: testCancelableBatch},
}

// waitLimit bounds every wait of the suite on another goroutine.
const waitLimit = 30 * time.Second

func testBatchAtomic(t *testing.T, f *fixture) {
	const q = "queue://storetest.atomic"
	f.commit(func(b persistence.Batch) {
		b.Add(newMsg(q, 1))
		b.Add(newMsg(q, 2))
		b.Ack(q, 1)
	})
	f.requireSeqs(q, 2)

	many := newMsgs(q, seqRange(3, 502))
	f.add(many...)
	require.Equal(t, seqRange(2, 502), seqsOf(f.scan(q, 0, 0)))
	f.requireStats(q, 501, bodyBytes(newMsg(q, 2))+bodyBytes(many...))
}

func testBatchRollback(t *testing.T, f *fixture) {
	const (
		q     = "queue://storetest.rollback"
		other = "queue://storetest.rollback.other"
		topic = "topic://storetest.rollback"
	)
	sub := persistence.SubKey{ClientID: "c", Name: "rollback"}
	f.add(newMsg(q, 1), newMsg(q, 2), newMsg(other, 1))

	b := f.s.Begin()
	b.Add(newMsg(q, 3))
	b.Ack(q, 1)
	b.Purge(other)
	b.AddSub(persistence.SubInfo{Key: sub, Dest: topic})
	b.Add(newMsg(topic, 1, sub))
	b.Add(newMsg("queue://storetest.rollback.new", 1))
	b.Rollback()

	f.requireSeqs(q, 1, 2)
	f.requireSeqs(other, 1)
	f.requireSeqs(topic)
	rec := f.recover()
	require.Empty(t, rec.Subs, "a rolled back AddSub is not applied")
	_, ok := destState(rec, "queue://storetest.rollback.new")
	require.False(t, ok, "a rolled back Add creates no destination")
	d, ok := destState(rec, q)
	require.True(t, ok)
	require.Equal(t, uint64(2), d.LastSeq, "a rolled back Add does not move LastSeq")
}

func testBatchLen(t *testing.T, f *fixture) {
	const q, topic = "queue://storetest.len", "topic://storetest.len"
	sub := persistence.SubKey{ClientID: "c", Name: "len"}
	b := f.s.Begin()
	require.Equal(t, 0, b.Len())
	steps := []func(){
		func() { b.Add(newMsg(q, 1)) },
		func() { b.Ack(q, 1) },
		func() { b.AddSub(persistence.SubInfo{Key: sub, Dest: topic}) },
		func() { b.AckSub(sub, 1) },
		func() { b.RemoveSub(sub) },
		func() { b.Purge(q) },
		func() { b.Add(newMsg(q, 2)) },
	}
	for i, step := range steps {
		step()
		require.Equal(t, i+1, b.Len(), "Len after %d operations", i+1)
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	f.requireSeqs(q, 2)
}

func testBatchInOrder(t *testing.T, f *fixture) {
	const q, topic = "queue://storetest.inorder", "topic://storetest.inorder"
	s1 := persistence.SubKey{ClientID: "c", Name: "s1"}
	s2 := persistence.SubKey{ClientID: "c", Name: "s2"}

	f.commit(func(b persistence.Batch) { b.Add(newMsg(q, 1)); b.Ack(q, 1) })
	f.requireSeqs(q)
	f.requireStats(q, 0, 0)
	f.commit(func(b persistence.Batch) { b.Ack(q, 2); b.Add(newMsg(q, 2)) })
	f.requireSeqs(q, 2)
	f.commit(func(b persistence.Batch) { b.Add(newMsg(q, 3)); b.Purge(q) })
	f.requireSeqs(q)
	f.commit(func(b persistence.Batch) { b.Purge(q); b.Add(newMsg(q, 4)) })
	f.requireSeqs(q, 4)

	// A message names the subscriptions registered when its Add applies.
	f.commit(func(b persistence.Batch) {
		b.AddSub(persistence.SubInfo{Key: s1, Dest: topic})
		b.Add(newMsg(topic, 1, s1))
	})
	f.requireSubSeqs(s1, 1)
	f.commit(func(b persistence.Batch) {
		b.Add(newMsg(topic, 2, s2))
		b.AddSub(persistence.SubInfo{Key: s2, Dest: topic})
	})
	f.requireSubSeqs(s2)
	f.requireSeqs(topic, 1)
	f.commit(func(b persistence.Batch) { b.Add(newMsg(topic, 3, s1, s2)); b.AckSub(s1, 3) })
	f.requireSubSeqs(s1, 1)
	f.requireSubSeqs(s2, 3)
	f.commit(func(b persistence.Batch) {
		b.RemoveSub(s1)
		b.AddSub(persistence.SubInfo{Key: s1, Dest: topic})
	})
	f.requireSubSeqs(s1)
	f.requireSeqs(topic, 3)
}

func testBatchDone(t *testing.T, f *fixture) {
	const q = "queue://storetest.done"
	b := f.s.Begin()
	b.Add(newMsg(q, 1))
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), persistence.ErrBatchDone)
	b.Add(newMsg(q, 2))
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), persistence.ErrBatchDone)
	b.Rollback()
	f.requireSeqs(q, 1)

	b = f.s.Begin()
	b.Add(newMsg(q, 3))
	b.Rollback()
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), persistence.ErrBatchDone)
	b.Rollback()
	f.requireSeqs(q, 1)

	require.NoError(t, f.s.Begin().Commit(t.Context(), persistence.Sync), "an empty batch commits")
	f.commit(func(b persistence.Batch) { b.Add(newMsg(q, 4)) })
	f.requireSeqs(q, 1, 4)
	b = f.s.Begin()
	b.Add(newMsg(q, 5))
	require.NoError(t, b.Commit(t.Context(), persistence.Async))
	f.requireSeqs(q, 1, 4, 5)
}

func testCommitCanceledContext(t *testing.T, f *fixture) {
	const q = "queue://storetest.canceled"
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := f.s.Begin()
	b.Add(newMsg(q, 1))
	require.ErrorIs(t, b.Commit(ctx, persistence.Sync), context.Canceled)
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), persistence.ErrBatchDone,
		"a batch is done after a failed Commit")
	f.requireSeqs(q)
	_, ok := destState(f.recover(), q)
	require.False(t, ok)
}

// testConcurrency commits from many goroutines to their own and to a shared destination
// while readers scan and watch Stats. Run it under -race.
func testConcurrency(t *testing.T, f *fixture) {
	const (
		writers = 8
		perDest = 200
		shared  = "queue://storetest.shared"
		atomicQ = "queue://storetest.atomic10"
	)
	ctx := t.Context()
	var (
		sharedSeq atomic.Uint64
		errs      = make(chan error, 4*writers)
		wg        sync.WaitGroup
		stop      = make(chan struct{})
		readers   sync.WaitGroup
	)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w := range writers {
		own := fmt.Sprintf("queue://storetest.own.%d", w)
		wg.Go(func() {
			for i := uint64(1); i <= perDest; i++ {
				for _, m := range []*persistence.Message{newMsg(own, i), newMsg(shared, sharedSeq.Add(1))} {
					b := f.s.Begin()
					b.Add(m)
					if err := b.Commit(ctx, persistence.Sync); err != nil {
						fail(fmt.Errorf("commit %s #%d: %w", m.Dest, m.Seq, err))
						return
					}
				}
				if w == 0 && i%10 == 0 { // batches of ten, watched by the Stats reader
					b := f.s.Begin()
					for j := i - 9; j <= i; j++ {
						b.Add(newMsg(atomicQ, j))
					}
					if err := b.Commit(ctx, persistence.Sync); err != nil {
						fail(fmt.Errorf("commit batch of ten: %w", err))
						return
					}
				}
			}
		})
	}
	readers.Go(func() { // scans are always in seq order, whatever commits in between
		for {
			select {
			case <-stop:
				return
			default:
			}
			var last uint64
			err := f.s.Scan(ctx, shared, 0, 0, func(m *persistence.Message) error {
				if m.Seq <= last {
					return fmt.Errorf("scan of %s: seq %d after %d", shared, m.Seq, last)
				}
				last = m.Seq
				return nil
			})
			if err != nil {
				fail(err)
				return
			}
		}
	})
	readers.Go(func() { // a batch is never visible in part
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, _ := f.s.Stats(atomicQ); n%10 != 0 {
				fail(fmt.Errorf("Stats(%s) = %d messages: part of a batch of ten is visible", atomicQ, n))
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	for w := range writers {
		own := fmt.Sprintf("queue://storetest.own.%d", w)
		requireMessages(t, newMsgs(own, seqRange(1, perDest)), f.scan(own, 0, 0))
	}
	all := seqRange(1, writers*perDest)
	requireMessages(t, newMsgs(shared, all), f.scan(shared, 0, 0))
	f.requireStats(shared, writers*perDest, bodyBytes(newMsgs(shared, all)...))
	f.requireSeqs(atomicQ, seqRange(1, perDest)...)
}

func testAsyncBatch(t *testing.T, f *fixture) {
	const q = "queue://storetest.async"
	probe := f.s.Begin()
	_, ok := probe.(persistence.AsyncBatch)
	probe.Rollback()
	if !ok {
		t.Skip("the adapter's Batch does not implement persistence.AsyncBatch")
	}

	type result struct {
		i   int
		err error
	}
	const n = 200
	var calls [n]atomic.Int32
	results := make(chan result, 2*n) // room for duplicate calls, which the test reports
	for i := range n {
		b := f.s.Begin()
		b.Add(newMsg(q, uint64(i+1)))
		durability := persistence.Sync
		if i%2 == 1 {
			durability = persistence.Async
		}
		b.(persistence.AsyncBatch).CommitAsync(durability, func(err error) {
			calls[i].Add(1)
			results <- result{i, err}
		})
	}
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for want := range n {
		select {
		case r := <-results:
			require.NoError(t, r.err, "CommitAsync #%d", r.i)
			require.Equal(t, want, r.i, "done callbacks out of commit order")
			// done of batch i has run, so its message and every earlier one is visible.
			got := f.scan(q, 0, r.i+1)
			require.Equal(t, seqRange(1, uint64(r.i+1)), seqsOf(got), "after done of batch #%d", r.i)
		case <-deadline.C:
			t.Fatalf("done of batch #%d not called within %v", want, waitLimit)
		}
	}
	for i := range calls {
		require.Equal(t, int32(1), calls[i].Load(), "done calls of batch #%d", i)
	}
	f.requireSeqs(q, seqRange(1, n)...)

	t.Run("DoneBatch", func(t *testing.T) {
		b := f.s.Begin()
		b.Add(newMsg(q, n+1))
		b.Rollback()
		got := make(chan error, 2)
		b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { got <- err })
		select {
		case err := <-got:
			assert.ErrorIs(t, err, persistence.ErrBatchDone)
		case <-time.After(waitLimit):
			t.Fatalf("done not called within %v", waitLimit)
		}
		f.requireSeqs(q, seqRange(1, n)...)
	})
}

// testCancelableBatch: a batch is either withdrawn (cancel true, done gets ErrCanceled,
// nothing of it applied, also after a reopen) or committed (cancel false, done gets
// nil, applied), never both, whoever wins the race between cancel and the writer.
func testCancelableBatch(t *testing.T, f *fixture) {
	const q = "queue://storetest.cancelable"
	probe := f.s.Begin()
	_, ok := probe.(persistence.CancelableBatch)
	probe.Rollback()
	if !ok {
		t.Skip("the adapter's Batch does not implement persistence.CancelableBatch")
	}
	const n = 300
	results := make([]chan error, n)
	withdrawn := make([]bool, n)
	for i := range n {
		results[i] = make(chan error, 2)
		b := f.s.Begin()
		b.Add(newMsg(q, uint64(i+1)))
		cancel := b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { results[i] <- err })
		if cancel == nil {
			t.Skip("the store was opened without concurrent store and dispatch")
		}
		if i%3 != 0 { // leave some to the writer for sure
			withdrawn[i] = cancel()
			require.False(t, withdrawn[i] && cancel(), "a batch is withdrawn once")
		}
	}
	var kept []uint64
	for i := range n {
		select {
		case err := <-results[i]:
			if withdrawn[i] {
				require.ErrorIs(t, err, persistence.ErrCanceled, "batch #%d was withdrawn", i)
			} else {
				require.NoError(t, err, "batch #%d", i)
				kept = append(kept, uint64(i+1))
			}
		case <-time.After(waitLimit):
			t.Fatalf("done of batch #%d not called within %v", i, waitLimit)
		}
	}
	f.requireSeqs(q, kept...)
	if f.durable {
		f.reopen()
		f.requireSeqs(q, kept...)
	}
}
