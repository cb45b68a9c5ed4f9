package journal

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// failOn makes fs fail every op on a segment file from now on.
func failOn(fs *vfs.Mem, op vfs.Op) {
	fs.Inject(func(o vfs.Op, path string) error {
		if o == op && strings.HasSuffix(path, ".log") {
			return vfs.ErrInjected
		}
		return nil
	})
}

func addMsg(dest string, seq uint64) *persistence.Message {
	return &persistence.Message{Dest: dest, Seq: seq, Body: []byte(fmt.Sprint("body ", seq))}
}

func TestFailedIOFailsBatchAndEveryLaterWrite(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpSync, vfs.OpWrite} {
		t.Run(op.String(), func(t *testing.T) {
			const q = "queue://q"
			fs := vfs.NewMem()
			s := mustOpen(t, memOptions(fs))
			commitMsgs(t, s, q, 1, 1, 10)

			failOn(fs, op)
			b := s.Begin()
			b.Add(addMsg(q, 2))
			err := b.Commit(t.Context(), persistence.Sync)
			require.ErrorIs(t, err, vfs.ErrInjected, "the batch gets the I/O error")
			require.ErrorIs(t, err, ErrFailed)
			require.Equal(t, []uint64{1}, shelltest.Seqs(t, s, q), "a failed batch is not applied")
			n, _ := s.Stats(q)
			require.EqualValues(t, 1, n)

			fs.Inject(nil) // the disk is fine again: the store still refuses to write
			b = s.Begin()
			b.Add(addMsg(q, 3))
			require.ErrorIs(t, b.Commit(t.Context(), persistence.Async), ErrFailed)
			done := make(chan error, 1)
			b = s.Begin()
			b.Add(addMsg(q, 4))
			b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { done <- err })
			require.ErrorIs(t, <-done, ErrFailed)
			require.ErrorIs(t, s.Begin().Commit(t.Context(), persistence.Sync), ErrFailed)
			require.Equal(t, []uint64{1}, shelltest.Seqs(t, s, q), "reads still work")

			crashed := fs.CrashClone()
			require.ErrorIs(t, s.Close(), ErrFailed, "Close reports the failure")
			require.NoError(t, s.Close(), "a second Close returns nil")

			s = mustOpen(t, memOptions(crashed))
			require.Equal(t, []uint64{1}, shelltest.Seqs(t, s, q), "after a power cut only what was acknowledged is there")
			require.NoError(t, s.Close())
			s = mustOpen(t, memOptions(fs))
			got := shelltest.Seqs(t, s, q)
			require.Contains(t, [][]uint64{{1}, {1, 2}}, got, "after a restart the failed batch is there or not, never later ones")
			commitMsgs(t, s, q, 5, 5, 10)
			require.NoError(t, s.Close(), "a reopened store writes again")
		})
	}
}

// countSyncs counts fsyncs of segment files, making each take d.
func countSyncs(fs *vfs.Mem, d time.Duration) *atomic.Int64 {
	var n atomic.Int64
	fs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			n.Add(1)
			time.Sleep(d)
		}
		return nil
	})
	return &n
}

// TestGroupCommit commits from many goroutines at once on a disk with slow fsyncs: the
// commits share fsyncs.
func TestGroupCommit(t *testing.T) {
	fs := vfs.NewMem()
	o := memOptions(fs)
	o.MaxFileLength = 1 << 20
	s := mustOpen(t, o)
	syncs := countSyncs(fs, 2*time.Millisecond)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			dest := fmt.Sprint("queue://g", w)
			for seq := uint64(1); seq <= each; seq++ {
				b := s.Begin()
				b.Add(addMsg(dest, seq))
				if err := b.Commit(t.Context(), persistence.Sync); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := syncs.Load()
	t.Logf("%d commits, %d fsyncs", writers*each, n)
	require.Less(t, n, int64(writers*each/4), "commits share fsyncs")
	for w := range writers {
		require.Equal(t, shelltest.SeqRange(1, each), shelltest.Seqs(t, s, fmt.Sprint("queue://g", w)))
	}
	require.NoError(t, s.Close())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSyncStrategies(t *testing.T) {
	t.Run("always", func(t *testing.T) {
		fs := vfs.NewMem()
		s := mustOpen(t, memOptions(fs))
		syncs := countSyncs(fs, 0)
		b := s.Begin()
		b.Add(addMsg("queue://q", 1))
		require.NoError(t, b.Commit(t.Context(), persistence.Async))
		require.Zero(t, syncs.Load(), "Async does not wait for an fsync")
		require.NoError(t, s.Begin().Commit(t.Context(), persistence.Sync), "an empty Sync batch is a barrier")
		require.EqualValues(t, 1, syncs.Load())
		require.NoError(t, s.Begin().Commit(t.Context(), persistence.Sync))
		require.EqualValues(t, 1, syncs.Load(), "nothing new to sync")
		b = s.Begin()
		b.Add(addMsg("queue://q", 2))
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
		require.EqualValues(t, 2, syncs.Load())
		require.NoError(t, s.Close())
	})
	t.Run("periodic", func(t *testing.T) {
		fs := vfs.NewMem()
		o := memOptions(fs)
		o.SyncStrategy, o.SyncInterval = SyncPeriodic, 20*time.Millisecond
		s := mustOpen(t, o)
		syncs := countSyncs(fs, 0)
		start := time.Now()
		b := s.Begin()
		b.Add(addMsg("queue://q", 1))
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
		if time.Since(start) < o.SyncInterval {
			require.Zero(t, syncs.Load(), "Commit(Sync) does not wait for the periodic fsync")
		}
		waitFor(t, "the periodic fsync", func() bool { return syncs.Load() == 1 })
		time.Sleep(3 * o.SyncInterval)
		require.EqualValues(t, 1, syncs.Load(), "no fsync when nothing was written")
		// Under a steady load (a pipeline) the periodic fsyncs go on.
		var pending sync.WaitGroup
		seq := uint64(1)
		for start := time.Now(); time.Since(start) < 5*o.SyncInterval; {
			for range 100 {
				seq++
				b := s.Begin()
				b.Add(addMsg("queue://load", seq))
				pending.Add(1)
				b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) {
					if err != nil {
						t.Error(err)
					}
					pending.Done()
				})
			}
		}
		pending.Wait()
		require.GreaterOrEqual(t, syncs.Load(), int64(3), "periodic fsyncs under load")
		crashed := fs.CrashClone()
		require.NoError(t, s.Close())
		s = mustOpen(t, memOptions(crashed))
		require.Equal(t, []uint64{1}, shelltest.Seqs(t, s, "queue://q"))
		require.NoError(t, s.Close())
	})
	t.Run("never", func(t *testing.T) {
		fs := vfs.NewMem()
		o := memOptions(fs)
		o.SyncStrategy = SyncNever
		s := mustOpen(t, o)
		syncs := countSyncs(fs, 0)
		commitMsgs(t, s, "queue://q", 1, 3, 10)
		require.Zero(t, syncs.Load())
		crashed := fs.CrashClone()
		require.NoError(t, s.checkpoint(true))
		require.EqualValues(t, 1, syncs.Load(), "a checkpoint syncs the journal first")
		require.NoError(t, s.Close())
		s = mustOpen(t, memOptions(crashed))
		require.Empty(t, shelltest.Seqs(t, s, "queue://q"), "never: unsynced commits are lost in a power cut")
		require.NoError(t, s.Close())
		s = mustOpen(t, memOptions(fs.CrashClone()))
		require.Equal(t, shelltest.SeqRange(1, 3), shelltest.Seqs(t, s, "queue://q"), "Close syncs everything")
		require.NoError(t, s.Close())
	})
}

// TestAsyncRidesTheNextSync: under SyncAlways an Async commit (an acknowledgement nobody
// waits for) costs no fsync of its own: the next Commit(Sync) carries it, and when none
// comes, the AsyncSyncDelay bound does, so a power cut loses at most that much of them.
func TestAsyncRidesTheNextSync(t *testing.T) {
	commit := func(s *Store, seq uint64, d persistence.Durability) {
		b := s.Begin()
		b.Add(addMsg("queue://q", seq))
		require.NoError(t, b.Commit(t.Context(), d))
	}
	t.Run("carried", func(t *testing.T) {
		fs := vfs.NewMem()
		o := memOptions(fs)
		o.AsyncSyncDelay = time.Hour // never reached: every Async commit rides a Sync one
		s := mustOpen(t, o)
		syncs := countSyncs(fs, 0)
		for seq := uint64(1); seq <= 20; seq += 2 {
			commit(s, seq, persistence.Async)
			commit(s, seq+1, persistence.Sync)
		}
		require.EqualValues(t, 10, syncs.Load(), "one fsync per Sync commit, none for the Async ones")
		crashed := fs.CrashClone()
		require.NoError(t, s.Close())
		s = mustOpen(t, memOptions(crashed))
		require.Equal(t, shelltest.SeqRange(1, 20), shelltest.Seqs(t, s, "queue://q"))
		require.NoError(t, s.Close())
	})
	t.Run("bounded", func(t *testing.T) {
		fs := vfs.NewMem()
		o := memOptions(fs)
		o.AsyncSyncDelay = 10 * time.Millisecond
		s := mustOpen(t, o)
		syncs := countSyncs(fs, 0)
		commit(s, 1, persistence.Async)
		commit(s, 2, persistence.Async)
		waitFor(t, "the bound's fsync", func() bool { return syncs.Load() == 1 })
		crashed := fs.CrashClone()
		require.NoError(t, s.Close())
		s = mustOpen(t, memOptions(crashed))
		require.Equal(t, shelltest.SeqRange(1, 2), shelltest.Seqs(t, s, "queue://q"),
			"Async commits are on disk once the bound passed, with nothing else to carry them")
		require.NoError(t, s.Close())
	})
	t.Run("default", func(t *testing.T) {
		o := memOptions(vfs.NewMem())
		o.AsyncSyncDelay = 0
		s := mustOpen(t, o)
		require.Equal(t, DefaultAsyncSyncDelay, s.opts.AsyncSyncDelay)
		require.NoError(t, s.Close())
	})
}

// TestBackgroundCheckpointAndCleanup runs the timers: checkpoints appear on their own,
// and a stuck message is compacted away from the first segment without help.
func TestBackgroundCheckpointAndCleanup(t *testing.T) {
	const q = "queue://q"
	fs := vfs.NewMem()
	o := memOptions(fs)
	o.CheckpointInterval, o.CleanupInterval = 5*time.Millisecond, 20*time.Millisecond
	s := mustOpen(t, o)
	commitMsgs(t, s, q, 1, 1, 100)
	commitMsgs(t, s, q, 2, 60, 500)
	ackAll(t, s, q, 2, 60)
	waitFor(t, "the first segment to be compacted away", func() bool {
		file, _, ok := s.OldestSegment()
		return ok && !strings.HasSuffix(file, "/"+segmentName(1)) && !contains(segmentFiles(t, fs), segmentName(1))
	})
	require.NotEmpty(t, s.ckpts)
	require.Equal(t, []uint64{1}, scanSeqs(t, s, q))
	require.NoError(t, s.Close())
	s = mustOpen(t, memOptions(fs.CrashClone()))
	require.Equal(t, []uint64{1}, scanSeqs(t, s, q))
	require.NoError(t, s.Close())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestInvalidSeq(t *testing.T) {
	s := mustOpen(t, memOptions(vfs.NewMem()))
	for _, seq := range []uint64{0, math.MaxInt64 + 1, math.MaxUint64} {
		b := s.Begin()
		b.Add(&persistence.Message{Dest: "queue://q", Seq: 1})
		b.Add(&persistence.Message{Dest: "queue://q", Seq: seq})
		require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), ErrInvalid, "seq %d", seq)
	}
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://q", Seq: math.MaxInt64})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.Equal(t, []uint64{math.MaxInt64}, shelltest.Seqs(t, s, "queue://q"))
	require.NoError(t, s.Close())
}

// TestCommitAsyncFailuresKeepOrder: a batch that fails at once (invalid) still gets its
// callback after those of earlier batches of the same goroutine.
func TestCommitAsyncFailuresKeepOrder(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	countSyncs(fs, 5*time.Millisecond) // keep the valid batches in flight
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 20 {
		b := s.Begin()
		if i%3 == 2 {
			b.Add(&persistence.Message{Dest: "queue://q"}) // invalid: no seq
		} else {
			b.Add(addMsg("queue://q", uint64(i+1)))
		}
		wg.Add(1)
		b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) {
			defer wg.Done()
			if (i%3 == 2) != (err != nil) {
				t.Errorf("batch %d: %v", i, err)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range order {
		require.Equal(t, i, order[i], "callbacks out of order: %v", order)
	}
	require.NoError(t, s.Close())
}

// TestScanCallbackMayCommit: Scan holds no lock while fn runs, so fn may commit (here:
// ack what it sees), and Close afterwards leaves no goroutine behind.
func TestScanCallbackMayCommit(t *testing.T) {
	const q = "queue://q"
	before := runtime.NumGoroutine()
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	b := s.Begin()
	for seq := uint64(1); seq <= 1000; seq++ {
		b.Add(addMsg(q, seq))
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	seen := 0
	require.NoError(t, s.Scan(t.Context(), q, 0, 0, func(m *persistence.Message) error {
		seen++
		ack := s.Begin()
		ack.Ack(q, m.Seq)
		return ack.Commit(t.Context(), persistence.Sync)
	}))
	require.Equal(t, 1000, seen)
	n, size := s.Stats(q)
	require.Zero(t, n)
	require.Zero(t, size)
	require.NoError(t, s.Close())
	waitFor(t, "the store's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestCommitCancelable: a batch withdrawn while it waits in the write queue is neither
// written nor applied, and its done gets ErrCanceled; once the writer took a batch,
// cancel fails and done gets the commit's result.
func TestCommitCancelable(t *testing.T) {
	const q = "queue://q"
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))

	// Hold the writer inside the fsync of a first batch, so the next one stays queued.
	syncing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs.Inject(func(o vfs.Op, path string) error {
		if o == vfs.OpSync && strings.HasSuffix(path, ".log") {
			once.Do(func() { close(syncing); <-release })
		}
		return nil
	})
	first := make(chan error, 1)
	b := s.Begin()
	b.Add(addMsg(q, 1))
	b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { first <- err })
	<-syncing

	withdrawn := make(chan error, 1)
	b = s.Begin()
	b.Add(addMsg(q, 2))
	cancel := b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { withdrawn <- err })
	require.NotNil(t, cancel)
	require.True(t, cancel(), "queued behind a running write: withdrawn")
	require.False(t, cancel(), "withdrawn once")

	kept := make(chan error, 1)
	b = s.Begin()
	b.Add(addMsg(q, 3))
	keep := b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { kept <- err })
	close(release)
	require.NoError(t, <-first)
	require.ErrorIs(t, <-withdrawn, persistence.ErrCanceled)
	require.NoError(t, <-kept)
	require.False(t, keep(), "written: too late to withdraw")
	require.Equal(t, []uint64{1, 3}, shelltest.Seqs(t, s, q), "the withdrawn batch is not applied")

	require.NoError(t, s.Close())
	s = mustOpen(t, memOptions(fs.CrashClone()))
	require.Equal(t, []uint64{1, 3}, shelltest.Seqs(t, s, q), "nor written")
	require.NoError(t, s.Close())
}

// TestCommitCancelableFailedGroup: a batch withdrawn before its group failed still gets
// ErrCanceled, since its committer has answered already; one not withdrawn gets the error.
func TestCommitCancelableFailedGroup(t *testing.T) {
	const q = "queue://q"
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	syncing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs.Inject(func(o vfs.Op, path string) error {
		if o == vfs.OpSync && strings.HasSuffix(path, ".log") {
			once.Do(func() { close(syncing); <-release })
			return vfs.ErrInjected
		}
		return nil
	})
	first := make(chan error, 1)
	b := s.Begin()
	b.Add(addMsg(q, 1))
	b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { first <- err })
	<-syncing
	withdrawn, failed := make(chan error, 1), make(chan error, 1)
	b = s.Begin()
	b.Add(addMsg(q, 2))
	cancel := b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { withdrawn <- err })
	b = s.Begin()
	b.Add(addMsg(q, 3))
	b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { failed <- err })
	require.True(t, cancel())
	close(release)
	require.ErrorIs(t, <-first, vfs.ErrInjected)
	require.ErrorIs(t, <-withdrawn, persistence.ErrCanceled)
	require.ErrorIs(t, <-failed, ErrFailed)
	require.ErrorIs(t, s.Close(), ErrFailed, "the store stays failed")
}

func TestStoreBeforeDispatchCannotCancel(t *testing.T) {
	o := memOptions(vfs.NewMem())
	o.StoreBeforeDispatch = true
	s := mustOpen(t, o)
	done := make(chan error, 1)
	b := s.Begin()
	b.Add(addMsg("queue://q", 1))
	require.Nil(t, b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { done <- err }))
	require.NoError(t, <-done)
	require.NoError(t, s.Close())
}

// BenchmarkBatchRecord: the CPU a batch spends recording an Add and an Ack before the
// writer takes it (shelltest.RecordLoop).
func BenchmarkBatchRecord(b *testing.B) { shelltest.RecordLoop(b, &recAdapter) }
