package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/oprec"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "broker.db"), Logger: quietLog})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// Many committers waiting at the same time share bbolt Updates: the number of Updates
// (each one commit with its syncs) stays far below the number of batches.
func TestGroupCommitSharesUpdates(t *testing.T) {
	s := openTest(t)
	const (
		committers = 32
		each       = 20
	)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, committers)
	for c := range committers {
		wg.Go(func() {
			q := fmt.Sprintf("queue://group.%d", c)
			for i := uint64(1); i <= each; i++ {
				b := s.Begin()
				b.Add(&persistence.Message{Dest: q, Seq: i, Body: []byte("x")})
				if err := b.Commit(t.Context(), persistence.Sync); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	updates, batches := s.w.updates.Load(), s.w.batches.Load()
	t.Logf("%d batches in %d Updates (%.1f batches per Update) in %v", batches, updates,
		float64(batches)/float64(updates), time.Since(start))
	require.Equal(t, uint64(committers*each), batches)
	// With 32 committers blocked on every commit, a group holds many of them; one batch
	// per Update would mean no group commit at all.
	require.Less(t, updates, batches/4, "group commit: Updates per batch")
	for c := range committers {
		n, _ := s.Stats(fmt.Sprintf("queue://group.%d", c))
		require.Equal(t, int64(each), n)
	}
}

// With AsyncCommitDelay set, Async commits (acknowledgements nobody waits for) ride the
// next Commit(Sync): they share its bbolt Update, and so its syncs, instead of costing
// one of their own; with no Sync commit coming they are committed once the delay passed.
func TestAsyncCommitsRideTheNextSync(t *testing.T) {
	open := func(delay time.Duration) *Store {
		s, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "broker.db"), Logger: quietLog,
			AsyncCommitDelay: delay})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
	add := func(s *Store, seq uint64) persistence.Batch {
		b := s.Begin()
		b.Add(&persistence.Message{Dest: "queue://ride", Seq: seq, Body: []byte("x")})
		return b
	}
	t.Run("carried", func(t *testing.T) {
		s := open(time.Hour) // never reached: the Sync commit carries the Async one
		// The writer is held inside the Update of a first Sync commit while the Async
		// one is queued, so that it finds the Async one alone once it goes on.
		entered, hold := make(chan struct{}), make(chan struct{})
		s.testHookApply = func(ops []op) error {
			if ops[0].Seq == 1 {
				close(entered)
				<-hold
			}
			return nil
		}
		first := make(chan error, 1)
		go func() { first <- add(s, 1).Commit(t.Context(), persistence.Sync) }()
		<-entered
		async := make(chan error, 1)
		add(s, 2).(persistence.AsyncBatch).CommitAsync(persistence.Async, func(err error) { async <- err })
		close(hold)
		require.NoError(t, <-first)
		require.NoError(t, add(s, 3).Commit(t.Context(), persistence.Sync))
		require.NoError(t, <-async)
		require.Equal(t, uint64(2), s.w.updates.Load(), "the Async commit shares the second Sync commit's Update")
		require.Equal(t, uint64(3), s.w.batches.Load())
	})
	t.Run("bounded", func(t *testing.T) {
		s := open(100 * time.Millisecond) // far above the gap between the two commits
		done := make(chan error, 2)
		for seq := uint64(1); seq <= 2; seq++ {
			add(s, seq).(persistence.AsyncBatch).CommitAsync(persistence.Async, func(err error) { done <- err })
		}
		for range 2 {
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Async commits with no Sync commit after them were not committed")
			}
		}
		n, _ := s.Stats("queue://ride")
		require.EqualValues(t, 2, n)
		require.Equal(t, uint64(1), s.w.updates.Load(), "both in one Update")
	})
	t.Run("off", func(t *testing.T) {
		s := open(0) // the default: an Async commit does not wait
		done := make(chan error, 1)
		add(s, 1).(persistence.AsyncBatch).CommitAsync(persistence.Async, func(err error) { done <- err })
		require.NoError(t, <-done)
		require.Equal(t, uint64(1), s.w.updates.Load())
	})
}

// A batch that fails while being applied fails alone: the others of its group are
// committed in a retried Update, and the order of completions is the commit order.
func TestApplyErrorFailsOnlyItsBatch(t *testing.T) {
	s := openTest(t)
	errBoom := errors.New("boom")
	s.testHookApply = func(ops []op) error {
		if ops[0].Kind == oprec.Add && ops[0].Seq == 3 {
			return errBoom
		}
		return nil
	}
	// Hold the writer inside an Update so that the next batches queue up into one group.
	block, release := make(chan struct{}), make(chan struct{})
	first := s.Begin()
	first.Add(&persistence.Message{Dest: "queue://blocker", Seq: 1})
	first.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) {
		require.NoError(t, err)
		close(block)
		<-release // the completer waits here; the writer goes on
	})
	<-block

	type result struct {
		seq uint64
		err error
	}
	results := make(chan result, 5)
	for seq := uint64(1); seq <= 5; seq++ {
		b := s.Begin()
		b.Add(&persistence.Message{Dest: "queue://apply", Seq: seq, Body: []byte("b")})
		b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { results <- result{seq, err} })
	}
	close(release)
	for seq := uint64(1); seq <= 5; seq++ {
		r := <-results
		require.Equal(t, seq, r.seq, "completion order")
		if seq == 3 {
			require.ErrorIs(t, r.err, errBoom)
		} else {
			require.NoError(t, r.err)
		}
	}
	var got []uint64
	require.NoError(t, s.Scan(t.Context(), "queue://apply", 0, 0, func(m *persistence.Message) error {
		got = append(got, m.Seq)
		return nil
	}))
	require.Equal(t, []uint64{1, 2, 4, 5}, got)
	n, bytes := s.Stats("queue://apply")
	require.Equal(t, [2]int64{4, 4}, [2]int64{n, bytes})

	// The store goes on.
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://apply", Seq: 6})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
}

// A Commit whose ctx ends while the batch is still queued withdraws it.
func TestCommitCancelledWhileQueued(t *testing.T) {
	s := openTest(t)
	block, release := make(chan struct{}), make(chan struct{})
	first := s.Begin()
	first.Add(&persistence.Message{Dest: "queue://blocker", Seq: 1})
	entered := false
	s.testHookApply = func([]op) error {
		if !entered {
			entered = true
			close(block)
			<-release // hold the writer inside its Update
		}
		return nil
	}
	done := make(chan error, 1)
	first.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { done <- err })
	<-block

	ctx, cancel := context.WithCancel(t.Context())
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://cancelled", Seq: 1})
	res := make(chan error, 1)
	go func() { res <- b.Commit(ctx, persistence.Sync) }()
	require.Eventually(t, func() bool {
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		return len(s.w.queue) == 1
	}, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-res, context.Canceled)
	close(release)
	require.NoError(t, <-done)

	sync := s.Begin()
	sync.Add(&persistence.Message{Dest: "queue://after", Seq: 1})
	require.NoError(t, sync.Commit(t.Context(), persistence.Sync))
	n, _ := s.Stats("queue://cancelled")
	require.Zero(t, n, "a withdrawn batch is not applied")
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	for _, d := range rec.Destinations {
		require.NotEqual(t, "queue://cancelled", d.Name)
	}
}

// A done callback may commit on the store: it runs on the completer, not the writer.
func TestDoneMayCommit(t *testing.T) {
	s := openTest(t)
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://nested", Seq: 1})
	got := make(chan error, 1)
	b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) {
		if err != nil {
			got <- err
			return
		}
		inner := s.Begin()
		inner.Add(&persistence.Message{Dest: "queue://nested", Seq: 2})
		got <- inner.Commit(context.Background(), persistence.Sync)
	})
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a commit from inside done did not return")
	}
	n, _ := s.Stats("queue://nested")
	require.Equal(t, int64(2), n)
}

// BenchmarkParallelAddUpdates commits one-Add Sync batches from many goroutines (16 per
// GOMAXPROCS), one queue each, and reports how many bbolt Updates (each one commit with
// two fdatasyncs) a message cost.
func BenchmarkParallelAddUpdates(b *testing.B) {
	s := openTest(b)
	body := make([]byte, 256)
	var producers sync.Mutex
	next := 0
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		producers.Lock()
		next++
		q := fmt.Sprintf("queue://bench.%d", next)
		producers.Unlock()
		m := &persistence.Message{Dest: q, ID: "ID:bench", Body: body, Persistent: true}
		for pb.Next() {
			m.Seq++
			bt := s.Begin()
			bt.Add(m)
			if err := bt.Commit(context.Background(), persistence.Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(s.w.updates.Load())/float64(b.N), "updates/msg")
}

// A commit that fails before its meta page took effect fails its group and leaves the
// store usable; one whose meta page is already what bbolt reads makes it refuse every
// further write with ErrFailed.
func TestCommitFailureDecision(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "broker.db"), Logger: quietLog})
	require.NoError(t, err)
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://f", Seq: 1})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	var cur int
	require.NoError(t, s.db.View(func(tx *bolt.Tx) error { cur = tx.ID(); return nil }))
	errIO := errors.New("input/output error")

	clean := &request{}
	s.w.fail([]*request{clean}, cur+1, errIO) // the failed transaction would have been cur+1
	require.ErrorIs(t, clean.err, errIO)
	require.NotErrorIs(t, clean.err, ErrFailed)
	b = s.Begin()
	b.Add(&persistence.Message{Dest: "queue://f", Seq: 2})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync), "the store goes on after a clean failure")

	require.NoError(t, s.db.View(func(tx *bolt.Tx) error { cur = tx.ID(); return nil }))
	unknown := &request{}
	s.w.fail([]*request{unknown}, cur, errIO) // bbolt already reads transaction cur
	require.ErrorIs(t, unknown.err, ErrFailed)
	require.ErrorIs(t, unknown.err, errIO)
	b = s.Begin()
	b.Add(&persistence.Message{Dest: "queue://f", Seq: 3})
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), ErrFailed)
	got := make(chan error, 1)
	b = s.Begin()
	b.Add(&persistence.Message{Dest: "queue://f", Seq: 4})
	b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { got <- err })
	require.ErrorIs(t, <-got, ErrFailed)
	require.ErrorIs(t, s.Close(), ErrFailed, "Close reports that the store failed")
	require.NoError(t, s.Close())
}

// A real failed commit: the database file's descriptor is closed under bbolt, so the
// next Update cannot write its pages. Every batch of the group gets the error.
func TestCommitWriteFailure(t *testing.T) {
	var file *os.File
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "broker.db"), Logger: quietLog})
	require.NoError(t, err)
	require.NoError(t, s.db.Close())
	// Reopen bbolt with a hook that hands us its file.
	opts := s.opts.boltOptions()
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	s.db, err = bolt.Open(s.opts.Path, 0o600, opts)
	require.NoError(t, err)

	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://w", Seq: 1, Body: []byte("ok")})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.NoError(t, file.Close())

	b = s.Begin()
	b.Add(&persistence.Message{Dest: "queue://w", Seq: 2, Body: []byte("lost")})
	err = b.Commit(t.Context(), persistence.Sync)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrFailed, "the pages could not be written: nothing took effect")
	n, bytes := s.Stats("queue://w")
	require.Equal(t, [2]int64{1, 2}, [2]int64{n, bytes}, "the failed batch is not counted")
	var seqs []uint64
	require.NoError(t, s.Scan(t.Context(), "queue://w", 0, 0, func(m *persistence.Message) error {
		seqs = append(seqs, m.Seq)
		return nil
	}))
	require.Equal(t, []uint64{1}, seqs, "the failed batch is not visible")
	_ = s.Close() // bbolt cannot unlock or close the descriptor we closed
}
