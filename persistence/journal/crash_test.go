package journal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

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

// crash is the journal's side of the shared crash tests: lazy runs use SyncNever; a
// run checkpoints every 5 steps and cleans up (checkpoint, compaction, checkpoint)
// every 9.
var crash = shelltest.Crash{
	Open: func(t *testing.T, fs *vfs.Mem, lazy bool) persistence.Store {
		o := memOptions(fs)
		if lazy {
			o.SyncStrategy = SyncNever
		}
		return mustOpen(t, o)
	},
	After: func(ps persistence.Store, i int) (bool, error) {
		s := ps.(*Store)
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
	},
	Check:     checkReopen,
	Failure:   func(s persistence.Store) error { return s.(*Store).shell.Failure() },
	ErrFailed: ErrFailed,
}

// TestPowerCutAtEveryStep cuts the power before every mutating file-system operation of
// a workload (writes, syncs, segment roll-overs, checkpoints, compaction, segment
// deletion, run files): the store reopened on what was durable at that instant holds a
// prefix of the workload that includes every acknowledged batch (shelltest.PowerCut).
// The scheduled jobs of sealed segments go to run files, so the power is also cut
// while one is written.
func TestPowerCutAtEveryStep(t *testing.T) {
	crash.PowerCut(t, newWorkload(t, 1, 70), 300, 25, "/run-")
}

// TestFailureAtEveryStep fails each mutating operation of the workload in turn
// (shelltest.FailureAtEveryStep).
func TestFailureAtEveryStep(t *testing.T) {
	crash.FailureAtEveryStep(t, newWorkload(t, 2, 30), 100)
}

// TestPowerCutAsyncNever is TestPowerCutAtEveryStep with Async commits and SyncNever
// (shelltest.PowerCutLazy).
func TestPowerCutAsyncNever(t *testing.T) {
	crash.PowerCutLazy(t, newWorkload(t, 5, 70))
}
