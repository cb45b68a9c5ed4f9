package shelltest

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

// OnOp is called before every mutating file-system operation of a run, with the range
// of workload prefixes a correct store may hold if the run stopped there: at least lo
// steps (every one that was durable), at most hi (every one whose Commit was called).
// An error fails the operation.
type OnOp func(op vfs.Op, path string, lo, hi int) error

// run says how a workload runs on an adapter's store.
type run struct {
	dur persistence.Durability // how the steps commit
	// syncDurable: a successful commit makes its step durable (Sync under the
	// adapter's sync-every-commit policy).
	syncDurable bool
	// after, if set, runs after step i committed (a checkpoint, a cleanup) and reports
	// whether every step up to i is durable now.
	after     func(i int) (durable bool, err error)
	errFailed error // the adapter's: a commit fails only with it
}

// Result is what a run of a workload leaves: the store, still open, the prefix bounds
// at the end, and the errors of Crash.After.
type Result struct {
	Store  persistence.Store
	Lo, Hi int
	Errs   []error
}

// runWorkload runs w on s, opened on fs, calling onOp (if not nil) before every mutating
// operation on fs. Once a commit failed, every later one must fail too (the store
// refuses to write after an I/O error).
func runWorkload(t *testing.T, w *Workload, s persistence.Store, fs *vfs.Mem, r run, onOp OnOp) Result {
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
		if err := b.Commit(t.Context(), r.dur); err != nil {
			require.ErrorIs(t, err, r.errFailed, "step %d: a commit fails only with the store's failure", i)
			if failed < 0 {
				failed = i
			}
			continue
		}
		require.Less(t, failed, 0, "step %d: a commit succeeded after the store failed at step %d", i, failed)
		if r.syncDurable {
			durable.Store(int64(i + 1))
		}
		if r.after != nil {
			ok, err := r.after(i)
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

// Mode is what a crash leaves of what was not synced.
type Mode struct {
	Name  string
	Torn  bool // a random prefix of unsynced appends survives
	Flush bool // unsynced directory changes survive
	Kill  bool // everything written survives: a kill -9 of the process, not a power cut
}

// Modes are the crash modes PowerCut runs.
var Modes = []Mode{
	{Name: "synced"},
	{Name: "torn", Torn: true},
	{Name: "dirs-flushed", Flush: true},
	{Name: "torn+flushed", Torn: true, Flush: true},
	{Name: "kill", Kill: true},
}

// Clone returns the disk a crash in mode m would leave of fs; rng picks the torn
// prefixes.
func (m Mode) Clone(fs *vfs.Mem, rng *rand.Rand) *vfs.Mem {
	o := vfs.CrashOptions{FlushDirs: m.Flush || m.Kill}
	switch {
	case m.Kill:
		o.KeepData = func(_ string, n int) int { return n }
	case m.Torn:
		o.KeepData = func(_ string, n int) int { return rng.IntN(n + 1) }
	}
	return fs.CrashCloneWith(o)
}

// Crash is an adapter's side of the crash tests.
type Crash struct {
	// Open opens a store on fs with the memory options: under the policy that syncs
	// every Sync commit, or, lazy, under the one that never syncs on the commit path.
	// Runs commit with Sync, lazy ones with Async.
	Open func(t *testing.T, fs *vfs.Mem, lazy bool) persistence.Store
	// After, if set, runs on s after step i of a run committed (a checkpoint, a cleanup,
	// as the adapter schedules them) and reports whether every step up to i is durable
	// now.
	After func(s persistence.Store, i int) (durable bool, err error)
	// Check reopens a store on fs and asserts it holds a prefix of w in [lo, hi] (and,
	// with writeAfter, that it takes new writes that survive a reopen).
	Check func(t *testing.T, w *Workload, fs *vfs.Mem, lo, hi int, what string, writeAfter bool)
	// Failure is the store's failure (nil if it did not fail).
	Failure   func(s persistence.Store) error
	ErrFailed error // the adapter's
}

// run runs w on a fresh store on fs (see Open), calling onOp, if not nil, before every
// mutating operation: a step is durable once its Sync commit returned, or once an
// After that reports so ran after it.
func (c Crash) run(t *testing.T, w *Workload, fs *vfs.Mem, lazy bool, onOp OnOp) Result {
	t.Helper()
	s := c.Open(t, fs, lazy)
	r := run{dur: persistence.Sync, syncDurable: !lazy, errFailed: c.ErrFailed}
	if lazy {
		r.dur = persistence.Async
	}
	if c.After != nil {
		r.after = func(i int) (bool, error) { return c.After(s, i) }
	}
	return runWorkload(t, w, s, fs, r, onOp)
}

// Run runs w with Sync commits on a fresh store on fs (see Open) and returns the store,
// still open, and the prefix bounds.
func (c Crash) Run(t *testing.T, w *Workload, fs *vfs.Mem) Result {
	t.Helper()
	return c.run(t, w, fs, false, nil)
}

// PowerCut cuts the power, in every mode of Modes, before every mutating file-system
// operation of a run of w: the store reopened on what was durable at that instant holds
// exactly the batches of a prefix of w that includes every acknowledged one, never part
// of a batch, never an acknowledged change undone. A run must cross more than
// minPoints operations, and one on a path holding each of mustCross; every
// writeAfterEvery-th point also checks that the recovered store takes new writes.
func (c Crash) PowerCut(t *testing.T, w *Workload, minPoints, writeAfterEvery int, mustCross ...string) {
	for _, mode := range Modes {
		t.Run(mode.Name, func(t *testing.T) {
			fs := vfs.NewMem()
			rng := rand.New(rand.NewPCG(3, 4))
			var points Points
			r := c.run(t, w, fs, false, points.At(func() *vfs.Mem { return mode.Clone(fs, rng) }))
			require.NoError(t, errors.Join(r.Errs...))
			require.Equal(t, len(w.Steps), r.Lo)
			points.Add(fs.CrashClone(), r.Lo, r.Hi, "end, before Close")
			require.NoError(t, r.Store.Close())
			points.Add(fs.CrashClone(), r.Hi, r.Hi, "after Close")
			require.Greater(t, len(points.List), minPoints, "the workload should cross many operations")
			ops := map[string]int{}
			points.Check(func(p Point, what string, i int) {
				ops[strings.Fields(p.What)[0]]++
				for _, part := range mustCross {
					if strings.Contains(p.What, part) {
						ops[part]++
					}
				}
				c.Check(t, w, p.FS, p.Lo, p.Hi, what, i%writeAfterEvery == 0)
			})
			t.Logf("%d crash points: %v", len(points.List), ops)
			for _, part := range mustCross {
				require.Positive(t, ops[part], "the power is cut during an operation on a %q file", part)
			}
		})
	}
}

// PowerCutLazy is PowerCut with Async commits under the policy that never syncs on the
// commit path, with torn appends and with or without the directories flushed: only
// the steps before the last completed checkpoint must survive, but a power cut still
// leaves a prefix of the workload.
func (c Crash) PowerCutLazy(t *testing.T, w *Workload) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("dirs-flushed=%v", flush), func(t *testing.T) {
			fs := vfs.NewMem()
			rng := rand.New(rand.NewPCG(5, 6))
			mode := Mode{Torn: true, Flush: flush}
			var points Points
			r := c.run(t, w, fs, true, points.At(func() *vfs.Mem { return mode.Clone(fs, rng) }))
			require.NoError(t, errors.Join(r.Errs...))
			require.NoError(t, r.Store.Close())
			points.Add(fs.CrashClone(), r.Hi, r.Hi, "after Close")
			points.Check(func(p Point, what string, _ int) { c.Check(t, w, p.FS, p.Lo, p.Hi, what, false) })
		})
	}
}

// FailureAtEveryStep fails each mutating operation of a run of w (Sync commits) in
// turn: the batch hit fails, every later commit fails too (the store refuses to write
// after an I/O error), and both a restart and a power cut afterwards leave a prefix of
// the workload that includes every acknowledged batch. A clean run must make more than
// minOps mutating operations.
func (c Crash) FailureAtEveryStep(t *testing.T, w *Workload, minOps int) {
	run := func(fs *vfs.Mem, onOp OnOp) Result { return c.run(t, w, fs, false, onOp) }
	var total atomic.Int64
	counted := vfs.NewMem()
	res := run(counted, func(vfs.Op, string, int, int) error {
		total.Add(1)
		return nil
	})
	require.NoError(t, errors.Join(res.Errs...))
	require.NoError(t, res.Store.Close())
	n := int(total.Load())
	require.Greater(t, n, minOps)

	failedRuns := 0
	for target := 1; target <= n; target++ {
		fs := vfs.NewMem()
		var count atomic.Int64
		var hit atomic.Value
		res := run(fs, func(op vfs.Op, path string, _, _ int) error {
			if count.Add(1) == int64(target) {
				hit.Store(op.String() + " " + path)
				return vfs.ErrInjected
			}
			return nil
		})
		what := fmt.Sprintf("failure of operation %d (%v)", target, hit.Load())
		if err := c.Failure(res.Store); err != nil {
			failedRuns++
			require.ErrorIs(t, err, vfs.ErrInjected, what)
			require.ErrorIs(t, res.Store.Close(), c.ErrFailed, "Close reports the failure: %s", what)
		} else {
			require.NoError(t, res.Store.Close(), what) // a failed checkpoint does not fail the store
		}
		c.Check(t, w, fs.CrashClone(), res.Lo, res.Hi, "power cut after "+what, false)
		c.Check(t, w, fs, res.Lo, res.Hi, "restart after "+what, target%10 == 0)
	}
	require.Greater(t, failedRuns, n/3, "most injected failures hit the write path")
}
