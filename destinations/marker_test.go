package destinations

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// heldCommits is an Env.Commit whose commits wait until the test lets them through, one
// at a time, as a slow store's group commits would.
type heldCommits struct {
	mu      sync.Mutex
	waiting []func()
	arrived chan struct{}
}

func (h *heldCommits) commit(batch persistence.Batch, d persistence.Durability, done func(error)) {
	h.mu.Lock()
	h.waiting = append(h.waiting, func() { done(batch.Commit(context.Background(), d)) })
	h.mu.Unlock()
	h.arrived <- struct{}{}
}

// release lets the oldest held commit through.
func (h *heldCommits) release(t *testing.T) {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("no commit arrived")
	}
	h.mu.Lock()
	next := h.waiting[0]
	h.waiting = h.waiting[1:]
	h.mu.Unlock()
	next()
}

func markerEnv(t *testing.T, h *heldCommits) (*Env, persistence.Store) {
	var wg sync.WaitGroup
	store := memstore.New()
	t.Cleanup(wg.Wait)
	return &Env{
		Store: store, Log: slog.New(slog.DiscardHandler), Memory: NewUsage(1 << 30),
		Space: &SpaceSignal{}, Policy: func(Kind, string) policy.Policy { return policy.Default(true) },
		Background: &wg, Stopping: func() bool { return false }, Done: make(chan struct{}),
		Commit: h.commit,
	}, store
}

func storedMark(t *testing.T, store persistence.Store, dest string) uint64 {
	t.Helper()
	var hwm uint64
	require.NoError(t, store.Scan(context.Background(), dest, 0, 1, func(m *persistence.Message) error {
		hwm = ParseMarker(m)
		return nil
	}))
	return hwm
}

// TestWhenMarkedWaitsForTheStoredMark: an acknowledgement's answer waits until the
// dispatch mark covering what was dispatched before it is in the store, also when a
// write of an older mark is in flight; once the mark is stored it is answered at once.
func TestWhenMarkedWaitsForTheStoredMark(t *testing.T) {
	h := &heldCommits{arrived: make(chan struct{}, 8)}
	env, store := markerEnv(t, h)
	q := NewQueue(env, "marks", policy.Default(true), 0)

	q.MarkWritten(3) // the write of mark 3 is held
	q.MarkWritten(7) // waits for it: one write in flight per queue
	called := make(chan struct{}, 1)
	q.WhenMarked(func() { called <- struct{}{} }) // needs 7
	require.Len(t, called, 0)

	h.release(t) // mark 3 stored; the write of 7 starts and is held
	require.Equal(t, uint64(3), storedMark(t, store, q.MarkerDest()))
	require.Len(t, called, 0, "mark 3 does not cover message 7")

	h.release(t) // mark 7 stored
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("WhenMarked not called once the mark covered what was dispatched")
	}
	require.Equal(t, uint64(7), storedMark(t, store, q.MarkerDest()))

	q.WhenMarked(func() { called <- struct{}{} })
	require.Len(t, called, 1, "nothing dispatched since: answered at once")
}

// TestWithdrawDroppedOnceWritten: an entry dispatched while its store write was queued
// keeps its withdraw function only until the write is done (it holds the batch and the
// producer's completion); a write that finished first leaves it unset.
func TestWithdrawDroppedOnceWritten(t *testing.T) {
	h := &heldCommits{arrived: make(chan struct{}, 8)}
	env, _ := markerEnv(t, h)
	q := NewQueue(env, "withdraw", policy.Default(true), 0)
	m := &persistence.Message{Dest: "queue://withdraw", Persistent: true, Priority: 4, Body: []byte("x")}
	e, err := q.Accept(m, false)
	require.NoError(t, err)
	require.NotNil(t, e)
	calls := 0
	q.DispatchWhileStoring(e, func() bool { calls++; return false })
	d := &Delivery{entry: e}
	require.False(t, d.Withdrawn())
	require.Equal(t, 1, calls, "consulted while the write waits")
	Accepted{Q: q, E: e, Seq: m.Seq}.Settle(nil)
	require.Nil(t, e.withdraw.Load(), "dropped once written")
	require.False(t, d.Withdrawn())
	require.Equal(t, 1, calls)

	e2, err := q.Accept(&persistence.Message{Dest: "queue://withdraw", Persistent: true, Priority: 4}, false)
	require.NoError(t, err)
	Accepted{Q: q, E: e2}.Settle(nil)
	q.DispatchWhileStoring(e2, func() bool { return true })
	require.Nil(t, e2.withdraw.Load(), "written before it was dispatched: nothing to withdraw")
}
