package groupcommit

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
)

var (
	errTooLarge = errors.New("too large")
	errInvalid  = errors.New("invalid")
)

// fakeWriter applies what it takes to a list, in queue order, like an adapter's writer.
type fakeWriter struct {
	q       *Queue[string]
	mu      sync.Mutex
	applied []string
	hold    chan struct{} // if set, each round waits for it until release
	held    sync.Once
	exited  chan struct{}
	synced  atomic.Int64 // if set, each round reports a sync that took this long
}

// release lets the writer go on (once; the cleanup calls it too, so that a failed test
// does not leave the writer waiting).
func (w *fakeWriter) release() {
	w.held.Do(func() {
		if w.hold != nil {
			close(w.hold)
		}
	})
}

func start(t *testing.T, cfg Config) *fakeWriter {
	t.Helper()
	cb := completion.NewRunner()
	if cfg.MaxGroupBytes == 0 {
		cfg.MaxGroupBytes = 1 << 20
	}
	if cfg.MaxQueuedBytes == 0 {
		cfg.MaxQueuedBytes = 1 << 20
	}
	cfg.MaxRecordBytes, cfg.ErrTooLarge, cfg.Callbacks = 1<<10, errTooLarge, cb
	w := &fakeWriter{exited: make(chan struct{})}
	cfg.CheckOpen = func() error { return w.q.Failure() }
	w.q = New[string](cfg)
	go w.run()
	t.Cleanup(func() {
		w.release()
		w.q.Close()
		<-w.exited
		cb.Close()
	})
	return w
}

func (w *fakeWriter) run() {
	defer close(w.exited)
	for {
		w.q.Gather()
		w.q.Hold()
		group, closing := w.q.Take()
		if len(group) == 0 {
			if closing {
				return
			}
			<-w.q.Wake()
			continue
		}
		if w.hold != nil {
			<-w.hold
		}
		if err := w.q.Failure(); err != nil {
			w.q.Complete(group, err)
			continue
		}
		w.mu.Lock()
		for _, r := range group {
			if !r.Take() {
				r.Err = persistence.ErrCanceled
				continue
			}
			if r.Err == nil {
				w.applied = append(w.applied, r.Ops...)
			}
		}
		w.mu.Unlock()
		if took := time.Duration(w.synced.Load()); took > 0 {
			w.q.Synced(0, took)
		}
		w.q.Complete(group, nil)
	}
}

func (w *fakeWriter) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.applied...)
}

func newBatch(w *fakeWriter, ops ...string) *Batch[string] {
	b := &Batch[string]{}
	b.Init(w.q)
	for _, o := range ops {
		b.Rec = append(b.Buf(func(p []byte) []byte { return p }), o...)
		b.Ops = append(b.Ops, o)
	}
	return b
}

func TestCommitAppliesInOrder(t *testing.T) {
	w := start(t, Config{})
	require.NoError(t, newBatch(w, "a", "b").Commit(t.Context(), persistence.Sync))
	require.NoError(t, newBatch(w, "c").Commit(t.Context(), persistence.Async))
	require.Equal(t, []string{"a", "b", "c"}, w.got())
	require.NoError(t, newBatch(w).Commit(t.Context(), persistence.Sync), "an empty Sync batch is a barrier")
	require.NoError(t, newBatch(w).Commit(t.Context(), persistence.Async))
	require.NoError(t, w.q.Barrier())
}

func TestCommitFailsAtOnce(t *testing.T) {
	w := start(t, Config{})
	b := newBatch(w, "a")
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), persistence.ErrBatchDone)

	b = newBatch(w, "x")
	b.Invalid(errInvalid, "bad %d", 7)
	b.Invalid(errInvalid, "second") // the first one is reported
	err := b.Commit(t.Context(), persistence.Sync)
	require.ErrorIs(t, err, errInvalid)
	require.EqualError(t, err, "invalid: bad 7")

	require.ErrorIs(t, newBatch(w, string(make([]byte, 2<<10))).Commit(t.Context(), persistence.Sync), errTooLarge)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, newBatch(w, "y").Commit(ctx, persistence.Sync), context.Canceled)

	b = newBatch(w, "z")
	b.Rollback()
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), persistence.ErrBatchDone)
	require.Equal(t, []string{"a"}, w.got(), "nothing of a failed batch is applied")
}

func TestCommitAsyncCallbacksInCommitOrder(t *testing.T) {
	w := start(t, Config{})
	const n = 500
	got := make(chan int, n)
	for i := range n {
		b := newBatch(w, "m")
		if i%7 == 0 {
			b.Invalid(errInvalid, "odd one") // fails at once, still in its turn
		}
		b.CommitAsync(persistence.Sync, func(err error) {
			assert.Equal(t, i%7 == 0, errors.Is(err, errInvalid))
			got <- i
		})
	}
	for i := range n {
		require.Equal(t, i, <-got)
	}
}

func TestCommitCancelable(t *testing.T) {
	w := start(t, Config{})
	w.hold = make(chan struct{})
	first := newBatch(w, "first") // occupies the writer, which waits on hold
	firstDone := make(chan error, 1)
	first.CommitAsync(persistence.Sync, func(err error) { firstDone <- err })
	require.Eventually(t, func() bool { w.q.mu.Lock(); defer w.q.mu.Unlock(); return len(w.q.queue) == 0 },
		10*time.Second, time.Millisecond, "the writer takes the first group")

	done := make(chan error, 2)
	cancel := newBatch(w, "withdrawn").CommitCancelable(persistence.Sync, func(err error) { done <- err })
	require.NotNil(t, cancel)
	require.True(t, cancel(), "queued, not written yet: withdrawn")
	require.False(t, cancel(), "withdrawn once")
	w.release()
	require.NoError(t, <-firstDone)
	require.ErrorIs(t, <-done, persistence.ErrCanceled)

	kept := make(chan error, 1)
	cancel = newBatch(w, "kept").CommitCancelable(persistence.Sync, func(err error) { kept <- err })
	require.NoError(t, <-kept)
	require.False(t, cancel(), "written: too late to withdraw")
	require.Equal(t, []string{"first", "kept"}, w.got())
}

func TestCommitCancelableStoreBeforeDispatch(t *testing.T) {
	w := start(t, Config{StoreBeforeDispatch: true})
	done := make(chan error, 1)
	require.Nil(t, newBatch(w, "a").CommitCancelable(persistence.Sync, func(err error) { done <- err }))
	require.NoError(t, <-done)
	require.Equal(t, []string{"a"}, w.got())
}

func TestFailIsSticky(t *testing.T) {
	w := start(t, Config{})
	boom := errors.New("boom")
	sticky, first := w.q.Fail(boom)
	require.True(t, first)
	require.Equal(t, boom, sticky)
	sticky, first = w.q.Fail(errors.New("later"))
	require.False(t, first)
	require.Equal(t, boom, sticky)
	require.ErrorIs(t, newBatch(w, "a").Commit(t.Context(), persistence.Sync), boom)
	require.ErrorIs(t, newBatch(w).Commit(t.Context(), persistence.Async), boom, "CheckOpen")
	done := make(chan error, 1)
	newBatch(w, "b").CommitAsync(persistence.Sync, func(err error) { done <- err })
	require.ErrorIs(t, <-done, boom)
}

func TestCloseRefusesSubmissions(t *testing.T) {
	w := start(t, Config{})
	w.q.Close()
	require.ErrorIs(t, newBatch(w, "a").Commit(t.Context(), persistence.Sync), persistence.ErrClosed)
	done := make(chan error, 1)
	newBatch(w, "b").CommitCancelable(persistence.Sync, func(err error) { done <- err })
	require.ErrorIs(t, <-done, persistence.ErrClosed)
}

func TestSubmitBlocksWhenFull(t *testing.T) {
	w := start(t, Config{MaxQueuedBytes: 10, MaxGroupBytes: 5})
	w.hold = make(chan struct{})
	for range 4 { // the writer holds the first; 15 bytes wait
		newBatch(w, "12345").CommitAsync(persistence.Async, func(error) {})
	}
	blocked := make(chan struct{})
	go func() {
		newBatch(w, "12345").CommitAsync(persistence.Async, func(error) {})
		close(blocked)
	}()
	select {
	case <-blocked:
		t.Fatal("Submit did not block over MaxQueuedBytes")
	case <-time.After(50 * time.Millisecond):
	}
	w.release()
	<-blocked
	require.NoError(t, w.q.Barrier())
	require.Len(t, w.got(), 5)
}

func TestTakeRespectsMaxGroupBytes(t *testing.T) {
	q := New[string](Config{MaxGroupBytes: 10, MaxQueuedBytes: 100})
	for _, rec := range []string{"123456", "1234", "1", "123456789012"} {
		require.NoError(t, q.Submit(&Request[string]{Rec: []byte(rec)}))
	}
	var sizes [][]int
	for {
		group, _ := q.Take()
		if len(group) == 0 {
			break
		}
		var s []int
		for _, r := range group {
			s = append(s, len(r.Rec))
		}
		sizes = append(sizes, s)
		clear(group)
		q.group = group[:0]
	}
	require.Equal(t, [][]int{{6, 4}, {1}, {12}}, sizes, "a record larger than a group comes alone")
}

// Hold waits for the withdrawal of cancelable writes (messages with a consumer) for up
// to the last sync's time, as long as holds see withdrawals; otherwise only one write in
// holdProbe is held, to find out whether withdrawals come again.
func TestHoldWaitsForWithdrawals(t *testing.T) {
	w := start(t, Config{HoldCancelable: true, MaxLinger: time.Hour})
	w.synced.Store(int64(time.Hour)) // a hold lasts until its write is withdrawn
	require.NoError(t, newBatch(w, "synced").Commit(t.Context(), persistence.Sync))
	kept := func(op string) {
		t.Helper()
		done := make(chan error, 1)
		newBatch(w, op).CommitCancelable(persistence.Sync, func(err error) { done <- err })
		require.NoError(t, <-done)
	}
	withdrawn := func(op string) {
		t.Helper()
		done := make(chan error, 1)
		h := w.q.holds.Load()
		cancel := newBatch(w, op).CommitCancelable(persistence.Sync, func(err error) { done <- err })
		require.Eventually(t, func() bool { return w.q.holds.Load() > h }, 10*time.Second, time.Millisecond, "held")
		require.True(t, cancel(), "held until withdrawn")
		require.ErrorIs(t, <-done, persistence.ErrCanceled)
		require.Eventually(t, func() bool { w.q.mu.Lock(); defer w.q.mu.Unlock(); return len(w.q.queue) == 0 },
			10*time.Second, time.Millisecond, "the writer went on at the withdrawal")
	}
	for i := range holdProbe - 1 { // no withdrawal seen yet: not held
		kept(strconv.Itoa(i))
	}
	require.Zero(t, w.q.holds.Load())
	withdrawn("probe")
	require.EqualValues(t, 1, w.q.holds.Load())
	withdrawn("credited") // the probe saw a withdrawal: the next one is held too
	require.EqualValues(t, 2, w.q.holds.Load())
	require.NotContains(t, w.got(), "probe")
	require.NotContains(t, w.got(), "credited")

	// No more withdrawals: the holds end at the last sync's time, and once the credit
	// is spent only one write in holdProbe is held.
	w.synced.Store(int64(time.Millisecond))
	require.NoError(t, newBatch(w, "synced again").Commit(t.Context(), persistence.Sync))
	start := w.q.holds.Load()
	for i := range holdCredit + 3*holdProbe {
		kept("late" + strconv.Itoa(i))
	}
	require.EqualValues(t, holdCredit+3, w.q.holds.Load()-start)
}

// Without a sync yet, or without HoldCancelable, nothing is held.
func TestHoldOff(t *testing.T) {
	w := start(t, Config{MaxLinger: time.Hour})
	w.synced.Store(int64(time.Hour))
	require.NoError(t, newBatch(w, "synced").Commit(t.Context(), persistence.Sync))
	for i := range 2 * holdProbe {
		done := make(chan error, 1)
		newBatch(w, strconv.Itoa(i)).CommitCancelable(persistence.Sync, func(err error) { done <- err })
		require.NoError(t, <-done)
	}
	require.Zero(t, w.q.holds.Load())
}
