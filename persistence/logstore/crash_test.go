package logstore

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// checkpointEvery is how often runWorkload checkpoints, so crash points fall inside
// checkpoints and segment deletions too.
const checkpointEvery = 6

// runWorkload runs w against a store on fs with options o, committing with dur and
// checkpointing every checkpointEvery steps, and calls onOp (if not nil) before every
// mutating file-system operation with the prefix bounds at that moment.
func runWorkload(t *testing.T, w *workload, fs *vfs.Mem, o Options, dur persistence.Durability, onOp shelltest.OnOp) shelltest.Result {
	t.Helper()
	s := mustOpen(t, o)
	return shelltest.RunWorkload(t, w, s, fs, shelltest.Run{Dur: dur, SyncDurable: dur == persistence.Sync && o.Flush == FlushBatch,
		ErrFailed: ErrFailed,
		After: func(i int) (bool, error) {
			if i%checkpointEvery != checkpointEvery-1 {
				return false, nil
			}
			err := s.checkpoint() // a checkpoint syncs the log first
			return err == nil, err
		}}, onOp)
}

// checkReopen opens a store on fs and asserts it holds a prefix of w in [lo, hi]. With
// writeAfter it also checks that the recovered store takes new writes, which survive a
// clean reopen and a power cut.
func checkReopen(t *testing.T, w *workload, fs *vfs.Mem, lo, hi int, what string, writeAfter bool) {
	t.Helper()
	s, err := Open(t.Context(), memOptions(fs))
	require.NoError(t, err, "open after %s", what)
	k := w.RequirePrefix(t, dump(t, s), lo, hi, what)
	if writeAfter {
		last := shelltest.LastSeq(t, s, wlQueue1)
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
			var points shelltest.Points
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
			r := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, points.At(clone))
			require.Equal(t, len(w.Steps), r.Lo)
			points.Add(fs.CrashClone(), r.Lo, r.Hi, "end, before Close")
			require.NoError(t, r.Store.Close())
			points.Add(fs.CrashClone(), r.Hi, r.Hi, "after Close")
			require.Greater(t, len(points.List), 150, "the workload should cross many operations")
			ops := map[string]int{}
			points.Check(func(p shelltest.Point, what string, i int) {
				ops[strings.Fields(p.What)[0]]++
				checkReopen(t, w, p.FS, p.Lo, p.Hi, what, i%20 == 0)
			})
			t.Logf("%d crash points: %v", len(points.List), ops)
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
	var points shelltest.Points
	o := memOptions(fs)
	o.Flush = FlushOS
	r := runWorkload(t, w, fs, o, persistence.Async, points.At(func() *vfs.Mem {
		return fs.CrashCloneWith(vfs.CrashOptions{FlushDirs: rng.IntN(2) == 0, KeepData: func(_ string, n int) int { return rng.IntN(n + 1) }})
	}))
	require.NoError(t, r.Store.Close())
	points.Add(fs.CrashClone(), r.Hi, r.Hi, "after Close")
	points.Check(func(p shelltest.Point, what string, _ int) { checkReopen(t, w, p.FS, p.Lo, p.Hi, what, false) })
}

// TestFailureAtEveryStep fails each mutating operation of a workload in turn: the batch
// hit fails, every later commit fails too (the store refuses to write after an I/O
// error on its write path), and both a restart and a power cut afterwards leave a prefix
// of the workload that includes every acknowledged batch.
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
		MinOps: 60, ErrFailed: ErrFailed,
	})
}

// TestCrashWithoutClose drops a store without closing it (its process state is gone)
// and opens a new one on what the file system holds: every committed batch is there.
func TestCrashWithoutClose(t *testing.T) {
	w := newWorkload(t, 9, 80)
	fs := vfs.NewMem()
	r := runWorkload(t, w, fs, memOptions(fs), persistence.Sync, nil)
	s, hi := r.Store, r.Hi
	require.Equal(t, len(w.Steps), r.Lo)
	want := dump(t, s)
	// What a kill -9 leaves: every write that returned, synced or not, and no clean
	// shutdown of the log. The abandoned store still holds locks on fs, so the new one
	// opens the clone.
	killed := fs.CrashCloneWith(vfs.CrashOptions{FlushDirs: true, KeepData: func(_ string, n int) int { return n }})
	s2 := mustOpen(t, memOptions(killed))
	require.Equal(t, want, dump(t, s2))
	require.Equal(t, w.States[hi], dump(t, s2))
	require.NoError(t, s2.Close())
	// A power cut at the same instant keeps every Sync commit too.
	s2 = mustOpen(t, memOptions(fs.CrashClone()))
	require.Equal(t, want, dump(t, s2))
	require.NoError(t, errors.Join(s2.Close(), s.Close()))
}
