package shelltest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// OnOp is called before every mutating file-system operation of a run, with the range
// of workload prefixes a correct store may hold if the run stopped there: at least lo
// steps (every one that was durable), at most hi (every one whose Commit was called).
// An error fails the operation.
type OnOp func(op vfs.Op, path string, lo, hi int) error

// Run says how a workload runs on an adapter's store.
type Run struct {
	Dur persistence.Durability // how the steps commit
	// SyncDurable: a successful commit makes its step durable (Sync under the
	// adapter's sync-every-commit policy).
	SyncDurable bool
	// After, if set, runs after step i committed (a checkpoint, a cleanup) and reports
	// whether every step up to i is durable now.
	After func(i int) (durable bool, err error)
	// ErrFailed is the adapter's: a commit fails only with it.
	ErrFailed error
}

// Result is what RunWorkload leaves: the store, still open, the prefix bounds at the
// end, and the errors of r.After.
type Result struct {
	Store  persistence.Store
	Lo, Hi int
	Errs   []error
}

// RunWorkload runs w on s, opened on fs, calling onOp (if not nil) before every mutating
// operation on fs. Once a commit failed, every later one must fail too (the store
// refuses to write after an I/O error).
func RunWorkload(t *testing.T, w *Workload, s persistence.Store, fs *vfs.Mem, r Run, onOp OnOp) Result {
	t.Helper()
	var durable, started atomic.Int64
	if onOp != nil {
		fs.Inject(func(op vfs.Op, path string) error {
			if !op.Mutating() {
				return nil
			}
			return onOp(op, path, int(durable.Load()), int(started.Load()))
		})
	}
	res := Result{Store: s}
	failed := -1
	for i, step := range w.Steps {
		started.Store(int64(i + 1))
		b := s.Begin()
		step(b)
		if err := b.Commit(t.Context(), r.Dur); err != nil {
			require.ErrorIs(t, err, r.ErrFailed, "step %d: a commit fails only with the store's failure", i)
			if failed < 0 {
				failed = i
			}
			continue
		}
		require.Less(t, failed, 0, "step %d: a commit succeeded after the store failed at step %d", i, failed)
		if r.SyncDurable {
			durable.Store(int64(i + 1))
		}
		if r.After != nil {
			ok, err := r.After(i)
			if ok {
				durable.Store(int64(i + 1))
			}
			res.Errs = append(res.Errs, err)
		}
	}
	fs.Inject(nil)
	res.Hi = len(w.Steps)
	if failed >= 0 {
		res.Hi = failed + 1 // a failed batch may have reached the disk; no later one did
	}
	res.Lo = int(durable.Load())
	return res
}

// Point is the disk a crash would have left at one moment of a run, and the prefix
// bounds then.
type Point struct {
	FS     *vfs.Mem
	Lo, Hi int
	What   string
}

// Points collects crash points.
type Points struct {
	mu   sync.Mutex
	List []Point
}

// At returns an OnOp that records the disk clone returns before every operation.
func (p *Points) At(clone func() *vfs.Mem) OnOp {
	return func(op vfs.Op, path string, lo, hi int) error {
		p.Add(clone(), lo, hi, op.String()+" "+path)
		return nil
	}
}

// Add records a crash point.
func (p *Points) Add(fs *vfs.Mem, lo, hi int, what string) {
	p.mu.Lock()
	p.List = append(p.List, Point{fs, lo, hi, what})
	p.mu.Unlock()
}

// Check calls check for every point, naming it by its index and operation.
func (p *Points) Check(check func(pt Point, what string, i int)) {
	for i, pt := range p.List {
		check(pt, fmt.Sprintf("crash point %d (%s)", i, pt.What), i)
	}
}

// Failures is TestFailureAtEveryStep's frame.
type Failures struct {
	// Run runs the workload on a fresh store on fs with onOp.
	Run func(fs *vfs.Mem, onOp OnOp) Result
	// Failure is the store's failure (nil if it did not fail).
	Failure func(s persistence.Store) error
	// Check reopens a store on fs and asserts it holds a prefix in [lo, hi] (and, with
	// writeAfter, that it takes new writes).
	Check func(fs *vfs.Mem, lo, hi int, what string, writeAfter bool)
	// MinOps is the fewest mutating operations a clean run must make.
	MinOps    int
	ErrFailed error
}

// FailureAtEveryStep fails each mutating operation of a run in turn: the batch hit
// fails, every later commit fails too, and both a restart and a power cut afterwards
// leave a prefix of the workload that includes every acknowledged batch.
func FailureAtEveryStep(t *testing.T, f Failures) {
	var total atomic.Int64
	counted := vfs.NewMem()
	res := f.Run(counted, func(vfs.Op, string, int, int) error {
		total.Add(1)
		return nil
	})
	require.NoError(t, errors.Join(res.Errs...))
	require.NoError(t, res.Store.Close())
	n := int(total.Load())
	require.Greater(t, n, f.MinOps)

	failedRuns := 0
	for target := 1; target <= n; target++ {
		fs := vfs.NewMem()
		var count atomic.Int64
		var hit atomic.Value
		res := f.Run(fs, func(op vfs.Op, path string, _, _ int) error {
			if count.Add(1) == int64(target) {
				hit.Store(op.String() + " " + path)
				return vfs.ErrInjected
			}
			return nil
		})
		what := fmt.Sprintf("failure of operation %d (%v)", target, hit.Load())
		if err := f.Failure(res.Store); err != nil {
			failedRuns++
			require.ErrorIs(t, err, vfs.ErrInjected, what)
			require.ErrorIs(t, res.Store.Close(), f.ErrFailed, "Close reports the failure: %s", what)
		} else {
			require.NoError(t, res.Store.Close(), what) // a failed checkpoint does not fail the store
		}
		f.Check(fs.CrashClone(), res.Lo, res.Hi, "power cut after "+what, false)
		f.Check(fs, res.Lo, res.Hi, "restart after "+what, target%10 == 0)
	}
	require.Greater(t, failedRuns, n/3, "most injected failures hit the write path")
}
