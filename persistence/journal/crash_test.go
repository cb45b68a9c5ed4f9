package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// runWorkload runs w against a store on fs, with a checkpoint every 5 steps and a cleanup
// (checkpoint, compaction, checkpoint) every 9, calling onOp (if not nil) before every
// mutating file-system operation with the bounds at that moment. Commits use dur; with
// Async a step counts as durable only once a checkpoint after it completed.
func runWorkload(t *testing.T, w *workload, fs *vfs.Mem, o Options, dur persistence.Durability, onOp shelltest.OnOp) shelltest.Result {
	t.Helper()
	s := mustOpen(t, o)
	return shelltest.RunWorkload(t, w, s, fs, shelltest.Run{Dur: dur, SyncDurable: dur == persistence.Sync, ErrFailed: ErrFailed,
		After: func(i int) (bool, error) {
			var err error
			switch {
			case i%9 == 8:
				err = s.cleanup()
			case i%5 == 4:
				err = s.checkpoint(true)
			default:
				return false, nil
			}
			return err == nil, err
		}}, onOp)
}

// checkReopen opens a store on fs and asserts it holds a prefix of w in [lo, hi]; every
// so often it also checks that the recovered store takes new writes that survive a
// reopen.
func checkReopen(t *testing.T, w *workload, fs *vfs.Mem, lo, hi int, what string, writeAfter bool) {
	t.Helper()
	s, err := Open(t.Context(), memOptions(fs)) // the sync strategy does not matter to recovery
	require.NoError(t, err, "open after %s", what)
	k := w.RequirePrefix(t, dump(t, s), lo, hi, what)
	if writeAfter {
		last := shelltest.LastSeq(t, s, wlQueueA)
		shelltest.Commit(t, s, func(b persistence.Batch) {
			b.Add(&persistence.Message{Dest: wlQueueA, Seq: last + 1, Body: []byte("after recovery")})
		})
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
			var points shelltest.Points
			clone := func() *vfs.Mem {
				o := vfs.CrashOptions{FlushDirs: mode.flush}
				if mode.torn {
					o.KeepData = func(_ string, n int) int { return rng.IntN(n + 1) }
				}
				return fs.CrashCloneWith(o)
			}
			r := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, points.At(clone))
			require.NoError(t, errors.Join(r.Errs...))
			require.Equal(t, len(w.Steps), r.Lo)
			points.Add(fs.CrashClone(), r.Lo, r.Hi, "end, before Close")
			require.NoError(t, r.Store.Close())
			points.Add(fs.CrashClone(), r.Hi, r.Hi, "after Close")
			require.Greater(t, len(points.List), 300, "the workload should cross many operations")
			ops := map[string]int{}
			points.Check(func(p shelltest.Point, what string, i int) {
				ops[strings.Fields(p.What)[0]]++
				if strings.Contains(p.What, "/run-") {
					ops["run file"]++
				}
				checkReopen(t, w, p.FS, p.Lo, p.Hi, what, i%25 == 0)
			})
			t.Logf("%d crash points: %v", len(points.List), ops)
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
	shelltest.FailureAtEveryStep(t, shelltest.Failures{
		Run: func(fs *vfs.Mem, onOp shelltest.OnOp) shelltest.Result {
			return runWorkload(t, w, fs, memOptions(fs), persistence.Sync, onOp)
		},
		Failure: func(s persistence.Store) error { return s.(*Store).shell.Failure() },
		Check: func(fs *vfs.Mem, lo, hi int, what string, writeAfter bool) {
			checkReopen(t, w, fs, lo, hi, what, writeAfter)
		},
		MinOps: 100, ErrFailed: ErrFailed,
	})
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
			var points shelltest.Points
			o := memOptions(fs)
			o.SyncStrategy = SyncNever
			r := runWorkload(t, w, fs, o, persistence.Async, points.At(func() *vfs.Mem {
				return fs.CrashCloneWith(vfs.CrashOptions{FlushDirs: flush, KeepData: func(_ string, n int) int { return rng.IntN(n + 1) }})
			}))
			require.NoError(t, errors.Join(r.Errs...))
			require.NoError(t, r.Store.Close())
			points.Add(fs.CrashClone(), r.Hi, r.Hi, "after Close")
			points.Check(func(p shelltest.Point, what string, _ int) { checkReopen(t, w, p.FS, p.Lo, p.Hi, what, false) })
		})
	}
}
