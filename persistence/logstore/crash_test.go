package logstore

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

// crashPoint is the disk a crash would have left at one moment of a run, and the range
// of workload prefixes a correct store may then hold: at least every batch that was
// durable (acknowledged by a Sync commit under FlushBatch, or before a completed
// checkpoint), at most every batch whose Commit had been called.
type crashPoint struct {
	fs     *vfs.Mem
	lo, hi int
	what   string
}

// checkpointEvery is how often runWorkload checkpoints, so crash points fall inside
// checkpoints and segment deletions too.
const checkpointEvery = 6

// runWorkload runs w against a store on fs with options o, committing with dur and
// checkpointing every checkpointEvery steps, and calls onOp (if not nil) before every
// mutating file-system operation with the prefix bounds at that moment.
func runWorkload(t *testing.T, w *workload, fs *vfs.Mem, o Options, dur persistence.Durability,
	onOp func(op vfs.Op, path string, lo, hi int) error) (s *Store, lo, hi int) {
	t.Helper()
	s = mustOpen(t, o)
	var durable, started atomic.Int64
	if onOp != nil {
		fs.Inject(func(op vfs.Op, path string) error {
			if !op.Mutating() {
				return nil
			}
			return onOp(op, path, int(durable.Load()), int(started.Load()))
		})
	}
	failed := -1
	for i, step := range w.steps {
		started.Store(int64(i + 1))
		b := s.Begin()
		step(b)
		if err := b.Commit(t.Context(), dur); err != nil {
			require.ErrorIs(t, err, ErrFailed, "step %d: a commit fails only with the store's failure", i)
			if failed < 0 {
				failed = i
			}
			continue
		}
		require.Less(t, failed, 0, "step %d: a commit succeeded after the store failed at step %d", i, failed)
		if dur == persistence.Sync && o.Flush == FlushBatch {
			durable.Store(int64(i + 1))
		}
		if i%checkpointEvery == checkpointEvery-1 && s.checkpoint() == nil {
			durable.Store(int64(i + 1)) // a checkpoint syncs the log first
		}
	}
	fs.Inject(nil)
	hi = len(w.steps)
	if failed >= 0 {
		hi = failed + 1 // a failed batch may have reached the disk; no later one did
	}
	return s, int(durable.Load()), hi
}

// checkReopen opens a store on fs and asserts it holds a prefix of w in [lo, hi]. With
// writeAfter it also checks that the recovered store takes new writes, which survive a
// clean reopen and a power cut.
func checkReopen(t *testing.T, w *workload, fs *vfs.Mem, lo, hi int, what string, writeAfter bool) {
	t.Helper()
	s, err := Open(t.Context(), memOptions(fs))
	require.NoError(t, err, "open after %s", what)
	k := w.requirePrefix(t, dump(t, s), lo, hi, what)
	if writeAfter {
		rec, err := s.Recover(t.Context())
		require.NoError(t, err)
		var last uint64
		for _, d := range rec.Destinations {
			if d.Name == wlQueue1 {
				last = d.LastSeq
			}
		}
		commit(t, s, func(b persistence.Batch) { b.Add(testMsg(wlQueue1, last+1, 100)) })
		require.NoError(t, s.checkpoint())
		commit(t, s, func(b persistence.Batch) { b.Ack(wlQueue1, last+1); b.Add(testMsg(wlQueue1, last+2, 100)) })
		want := dump(t, s)
		crashed := fs.CrashClone()
		require.NoError(t, s.Close())
		for _, f := range []*vfs.Mem{fs, crashed} {
			s, err = Open(t.Context(), memOptions(f))
			require.NoError(t, err)
			require.Equal(t, want, dump(t, s), "reopen after writing to the store recovered from %s (prefix %d)", what, k)
			require.NoError(t, s.Close())
		}
		return
	}
	require.NoError(t, s.Close())
}

// TestPowerCut cuts the power before every mutating file-system operation of a workload
// (appends, syncs, segment rolls, checkpoints, segment deletion): the store reopened on
// what was durable at that instant holds exactly the batches of a prefix of the workload
// that includes every acknowledged one: never part of a batch, never an acknowledged
// message or subscription change undone.
func TestPowerCut(t *testing.T) {
	modes := []struct {
		name  string
		torn  bool // a random prefix of unsynced appends survives
		flush bool // unsynced directory changes survive
		kill  bool // everything written survives: a kill -9 of the process, not a power cut
	}{{"synced", false, false, false}, {"torn+dirs", true, true, false}, {"kill", false, false, true}}
	w := newWorkload(t, 1, 60)
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			fs := vfs.NewMem()
			rng := rand.New(rand.NewPCG(3, 4))
			var mu sync.Mutex
			var points []crashPoint
			clone := func() *vfs.Mem {
				o := vfs.CrashOptions{FlushDirs: mode.flush || mode.kill}
				switch {
				case mode.kill:
					o.KeepData = func(_ string, n int) int { return n }
				case mode.torn:
					o.KeepData = func(_ string, n int) int { return rng.IntN(n + 1) }
				}
				return fs.CrashCloneWith(o)
			}
			s, lo, hi := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, func(op vfs.Op, path string, lo, hi int) error {
				c := clone()
				mu.Lock()
				points = append(points, crashPoint{c, lo, hi, op.String() + " " + path})
				mu.Unlock()
				return nil
			})
			require.Equal(t, len(w.steps), lo)
			points = append(points, crashPoint{fs.CrashClone(), lo, hi, "end, before Close"})
			require.NoError(t, s.Close())
			points = append(points, crashPoint{fs.CrashClone(), hi, hi, "after Close"})
			require.Greater(t, len(points), 150, "the workload should cross many operations")
			ops := map[string]int{}
			for i, p := range points {
				ops[strings.Fields(p.what)[0]]++
				checkReopen(t, w, p.fs, p.lo, p.hi, fmt.Sprintf("crash point %d (%s)", i, p.what), i%20 == 0)
			}
			t.Logf("%d crash points: %v", len(points), ops)
		})
	}
}

// TestPowerCutAsyncFlushOS is TestPowerCut with Async commits and FlushOS: nothing is
// synced on the commit path, so only the steps before the last completed checkpoint
// must survive, but a power cut still leaves a prefix of the workload.
func TestPowerCutAsyncFlushOS(t *testing.T) {
	w := newWorkload(t, 5, 60)
	fs := vfs.NewMem()
	rng := rand.New(rand.NewPCG(5, 6))
	var points []crashPoint
	var mu sync.Mutex
	o := memOptions(fs)
	o.Flush = FlushOS
	s, _, hi := runWorkload(t, w, fs, o, persistence.Async, func(op vfs.Op, path string, lo, hi int) error {
		c := fs.CrashCloneWith(vfs.CrashOptions{FlushDirs: rng.IntN(2) == 0, KeepData: func(_ string, n int) int { return rng.IntN(n + 1) }})
		mu.Lock()
		points = append(points, crashPoint{c, lo, hi, op.String() + " " + path})
		mu.Unlock()
		return nil
	})
	require.NoError(t, s.Close())
	points = append(points, crashPoint{fs.CrashClone(), hi, hi, "after Close"})
	for i, p := range points {
		checkReopen(t, w, p.fs, p.lo, p.hi, fmt.Sprintf("crash point %d (%s)", i, p.what), false)
	}
}

// TestFailureAtEveryStep fails each mutating operation of a workload in turn: the batch
// hit fails, every later commit fails too (the store refuses to write after an I/O
// error on its write path), and both a restart and a power cut afterwards leave a prefix
// of the workload that includes every acknowledged batch.
func TestFailureAtEveryStep(t *testing.T) {
	w := newWorkload(t, 2, 30)
	var total atomic.Int64
	counted := vfs.NewMem()
	s, _, _ := runWorkload(t, w, counted, memOptions(counted), persistence.Sync, func(vfs.Op, string, int, int) error {
		total.Add(1)
		return nil
	})
	require.NoError(t, s.Close())
	n := int(total.Load())
	require.Greater(t, n, 60)

	failedRuns := 0
	for target := 1; target <= n; target++ {
		fs := vfs.NewMem()
		var count atomic.Int64
		var hit atomic.Value
		s, lo, hi := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, func(op vfs.Op, path string, _, _ int) error {
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

// TestCrashWithoutClose drops a store without closing it (its process state is gone)
// and opens a new one on what the file system holds: every committed batch is there.
func TestCrashWithoutClose(t *testing.T) {
	w := newWorkload(t, 9, 80)
	fs := vfs.NewMem()
	s, lo, hi := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, nil)
	require.Equal(t, len(w.steps), lo)
	want := dump(t, s)
	// What a kill -9 leaves: every write that returned, synced or not, and no clean
	// shutdown of the log. The abandoned store still holds locks on fs, so the new one
	// opens the clone.
	killed := fs.CrashCloneWith(vfs.CrashOptions{FlushDirs: true, KeepData: func(_ string, n int) int { return n }})
	s2 := mustOpen(t, memOptions(killed))
	require.Equal(t, want, dump(t, s2))
	require.Equal(t, w.states[hi], dump(t, s2))
	require.NoError(t, s2.Close())
	// A power cut at the same instant keeps every Sync commit too.
	s2 = mustOpen(t, memOptions(fs.CrashClone()))
	require.Equal(t, want, dump(t, s2))
	require.NoError(t, errors.Join(s2.Close(), s.Close()))
}
