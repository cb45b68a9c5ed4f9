package logstore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

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

// crash is the logstore's side of the shared crash tests: lazy runs use FlushOS; a run
// checkpoints every 6 steps, so crash points fall inside checkpoints and segment
// deletions too.
var crash = shelltest.Crash{
	Open: func(t *testing.T, fs *vfs.Mem, lazy bool) persistence.Store {
		o := memOptions(fs)
		if lazy {
			o.Flush = FlushOS
		}
		return mustOpen(t, o)
	},
	After: func(s persistence.Store, i int) (bool, error) {
		if i%6 != 5 {
			return false, nil
		}
		err := s.(*Store).checkpoint() // a checkpoint syncs the log first
		return err == nil, err
	},
	Check:     checkReopen,
	Failure:   func(s persistence.Store) error { return s.(*Store).shell.Failure() },
	ErrFailed: ErrFailed,
}

// TestPowerCut cuts the power before every mutating file-system operation of a workload
// (appends, syncs, segment rolls, checkpoints, segment deletion): the store reopened on
// what was durable at that instant holds a prefix of the workload that includes every
// acknowledged batch (shelltest.PowerCut).
func TestPowerCut(t *testing.T) {
	crash.PowerCut(t, newWorkload(t, 1, 60), 150, 20)
}

// TestPowerCutAsyncFlushOS is TestPowerCut with Async commits and FlushOS
// (shelltest.PowerCutLazy).
func TestPowerCutAsyncFlushOS(t *testing.T) {
	crash.PowerCutLazy(t, newWorkload(t, 5, 60))
}

// TestFailureAtEveryStep fails each mutating operation of a workload in turn
// (shelltest.FailureAtEveryStep).
func TestFailureAtEveryStep(t *testing.T) {
	crash.FailureAtEveryStep(t, newWorkload(t, 2, 30), 60)
}

// TestCrashWithoutClose drops a store without closing it (its process state is gone)
// and opens a new one on what the file system holds: every committed batch is there.
func TestCrashWithoutClose(t *testing.T) {
	w := newWorkload(t, 9, 80)
	fs := vfs.NewMem()
	r := crash.Run(t, w, fs)
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
