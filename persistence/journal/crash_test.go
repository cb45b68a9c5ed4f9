package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// crashPoint is the disk a power cut would have left at one moment of a run, and the
// range of workload prefixes a correct store may then hold: at least every batch whose
// Commit(Sync) had returned, at most every batch whose Commit had been called.
type crashPoint struct {
	fs     *vfs.Mem
	lo, hi int
	what   string
}

// runWorkload runs w against a store on fs, with a checkpoint every 5 steps and a cleanup
// (checkpoint, compaction, checkpoint) every 9, calling onOp (if not nil) before every
// mutating file-system operation with the bounds at that moment. Commits use dur; with
// Async a step counts as durable only once a checkpoint after it completed.
func runWorkload(t *testing.T, w *workload, fs *vfs.Mem, o Options, dur persistence.Durability,
	onOp func(op vfs.Op, path string, lo, hi int) error) (s *Store, lo, hi int, errs []error) {
	t.Helper()
	s = mustOpen(t, o)
	var acked, started atomic.Int64
	if onOp != nil {
		fs.Inject(func(op vfs.Op, path string) error {
			if !op.Mutating() {
				return nil
			}
			return onOp(op, path, int(acked.Load()), int(started.Load()))
		})
	}
	failed := -1
	for i, step := range w.steps {
		started.Store(int64(i + 1))
		b := s.Begin()
		step(b)
		err := b.Commit(t.Context(), dur)
		if err != nil {
			if failed < 0 {
				failed = i
			}
			require.ErrorIs(t, err, ErrFailed, "step %d: a commit fails only with the store's failure", i)
			errs = append(errs, err)
			continue
		}
		require.Less(t, failed, 0, "step %d: a commit succeeded after the store failed at step %d", i, failed)
		if dur == persistence.Sync {
			acked.Store(int64(i + 1))
		}
		var merr error
		switch {
		case i%9 == 8:
			merr = s.cleanup()
		case i%5 == 4:
			merr = s.checkpoint(true)
		default:
			continue
		}
		if merr == nil {
			acked.Store(int64(i + 1))
		}
		errs = append(errs, merr)
	}
	fs.Inject(nil)
	hi = len(w.steps)
	if failed >= 0 {
		hi = failed + 1
	}
	return s, int(acked.Load()), hi, errs
}

// checkReopen opens a store on fs and asserts it holds a prefix of w in [lo, hi]; every
// so often it also checks that the recovered store takes new writes that survive a
// reopen.
func checkReopen(t *testing.T, w *workload, fs *vfs.Mem, lo, hi int, what string, writeAfter bool) {
	t.Helper()
	s, err := Open(t.Context(), memOptions(fs)) // the sync strategy does not matter to recovery
	require.NoError(t, err, "open after %s", what)
	k := w.requirePrefix(t, dump(t, s), lo, hi, what)
	if writeAfter {
		rec, err := s.Recover(t.Context())
		require.NoError(t, err)
		var last uint64
		for _, d := range rec.Destinations {
			if d.Name == wlQueueA {
				last = d.LastSeq
			}
		}
		b := s.Begin()
		b.Add(&persistence.Message{Dest: wlQueueA, Seq: last + 1, Body: []byte("after recovery")})
		require.NoError(t, b.Commit(t.Context(), persistence.Sync), "write after recovery from %s", what)
		want := dump(t, s)
		require.NoError(t, s.Close())
		s, err = Open(t.Context(), memOptions(fs))
		require.NoError(t, err)
		require.Equal(t, want, dump(t, s), "reopen after writing to the store recovered from %s (prefix %d)", what, k)
	}
	require.NoError(t, s.Close())
}

// TestPowerCutAtEveryStep cuts the power before every mutating file-system operation of
// a workload (writes, syncs, segment roll-overs, checkpoints, compaction, segment
// deletion): the store reopened on what was durable at that instant holds exactly the
// batches of a prefix of the workload that includes every acknowledged one — never part
// of a batch, never an acknowledged message back.
func TestPowerCutAtEveryStep(t *testing.T) {
	modes := []struct {
		name  string
		torn  bool // a random prefix of unsynced appends survives
		flush bool // unsynced directory changes survive
	}{{"synced", false, false}, {"torn", true, false}, {"dirs-flushed", false, true}, {"torn+flushed", true, true}}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			w := newWorkload(t, 1, 70)
			fs := vfs.NewMem()
			rng := rand.New(rand.NewPCG(3, 4))
			var mu sync.Mutex
			var points []crashPoint
			clone := func() *vfs.Mem {
				o := vfs.CrashOptions{FlushDirs: mode.flush}
				if mode.torn {
					o.KeepData = func(_ string, n int) int { return rng.IntN(n + 1) }
				}
				return fs.CrashCloneWith(o)
			}
			s, lo, hi, errs := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, func(op vfs.Op, path string, lo, hi int) error {
				c := clone()
				mu.Lock()
				points = append(points, crashPoint{c, lo, hi, op.String() + " " + path})
				mu.Unlock()
				return nil
			})
			require.NoError(t, errors.Join(errs...))
			require.Equal(t, len(w.steps), lo)
			points = append(points, crashPoint{fs.CrashClone(), lo, hi, "end, before Close"})
			require.NoError(t, s.Close())
			points = append(points, crashPoint{fs.CrashClone(), hi, hi, "after Close"})
			require.Greater(t, len(points), 300, "the workload should cross many operations")
			ops := map[string]int{}
			for i, p := range points {
				ops[strings.Fields(p.what)[0]]++
				if strings.Contains(p.what, "/run-") {
					ops["run file"]++
				}
				checkReopen(t, w, p.fs, p.lo, p.hi, fmt.Sprintf("crash point %d (%s)", i, p.what), i%25 == 0)
			}
			t.Logf("%d crash points: %v", len(points), ops)
			require.Positive(t, ops["run file"], "the scheduled jobs of sealed segments go to run files: cut the power while one is written")
		})
	}
}

// TestFailureAtEveryStep fails each mutating operation of the workload in turn: the
// batch hit fails, every later commit fails too (the store refuses to write after an
// I/O error), and both a restart and a power cut afterwards leave a prefix of the
// workload that includes every acknowledged batch.
func TestFailureAtEveryStep(t *testing.T) {
	w := newWorkload(t, 2, 30)
	// Count the operations of a clean run.
	var total atomic.Int64
	counted := vfs.NewMem()
	s, _, _, errs := runWorkload(t, w, counted, memOptions(counted), persistence.Sync, func(vfs.Op, string, int, int) error {
		total.Add(1)
		return nil
	})
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, s.Close())
	n := int(total.Load())
	require.Greater(t, n, 100)

	failedRuns := 0
	for target := 1; target <= n; target++ {
		fs := vfs.NewMem()
		var count atomic.Int64
		var hit atomic.Value
		s, lo, hi, _ := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, func(op vfs.Op, path string, _, _ int) error {
			if count.Add(1) == int64(target) {
				hit.Store(op.String() + " " + path)
				return vfs.ErrInjected
			}
			return nil
		})
		what := fmt.Sprintf("failure of operation %d (%v)", target, hit.Load())
		if err := s.w.failure(); err != nil {
			failedRuns++
			require.ErrorIs(t, err, vfs.ErrInjected, what)
			require.ErrorIs(t, s.Close(), ErrFailed, "Close reports the failure: %s", what)
		} else {
			require.NoError(t, s.Close(), what) // a failed checkpoint does not fail the store
		}
		checkReopen(t, w, fs.CrashClone(), lo, hi, "power cut after "+what, false)
		checkReopen(t, w, fs, lo, hi, "restart after "+what, target%10 == 0)
	}
	require.Greater(t, failedRuns, n/3, "most injected failures hit the write path")
}

// TestPowerCutAsyncNever is TestPowerCutAtEveryStep with Async commits and SyncNever:
// nothing is synced on the commit path, so only the steps before the last completed
// checkpoint must survive, but a power cut still leaves a prefix of the workload.
func TestPowerCutAsyncNever(t *testing.T) {
	w := newWorkload(t, 5, 70)
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("dirs-flushed=%v", flush), func(t *testing.T) {
			fs := vfs.NewMem()
			rng := rand.New(rand.NewPCG(5, 6))
			var points []crashPoint
			var mu sync.Mutex
			o := memOptions(fs)
			o.SyncStrategy = SyncNever
			s, _, hi, errs := runWorkload(t, w, fs, o, persistence.Async, func(op vfs.Op, path string, lo, hi int) error {
				c := fs.CrashCloneWith(vfs.CrashOptions{FlushDirs: flush, KeepData: func(_ string, n int) int { return rng.IntN(n + 1) }})
				mu.Lock()
				points = append(points, crashPoint{c, lo, hi, op.String() + " " + path})
				mu.Unlock()
				return nil
			})
			require.NoError(t, errors.Join(errs...))
			require.NoError(t, s.Close())
			points = append(points, crashPoint{fs.CrashClone(), hi, hi, "after Close"})
			for i, p := range points {
				checkReopen(t, w, p.fs, p.lo, p.hi, fmt.Sprintf("crash point %d (%s)", i, p.what), false)
			}
		})
	}
}
