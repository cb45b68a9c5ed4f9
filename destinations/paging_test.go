package destinations

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// heldScan is a store whose next Scan, once armed, tells entered, waits until the test
// closes the gate, and tells left when it has read the store: a page-in held between its
// snapshot of the queue and its store scan.
type heldScan struct {
	persistence.Store
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
	left    chan struct{}
}

// arm makes the next Scan wait; it returns the gate whose closing lets it go on.
func (s *heldScan) arm() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
	return s.gate
}

func (s *heldScan) Scan(ctx context.Context, dest string, after uint64, max int, fn func(*persistence.Message) error) error {
	s.mu.Lock()
	gate := s.gate
	s.gate = nil
	s.mu.Unlock()
	if gate == nil {
		return s.Store.Scan(ctx, dest, after, max, fn)
	}
	s.entered <- struct{}{}
	<-gate
	defer func() { s.left <- struct{}{} }()
	return s.Store.Scan(ctx, dest, after, max, fn)
}

// pushSink records deliveries and tells pushed of each.
type pushSink struct {
	recordSink
	pushed chan struct{}
}

func (s *pushSink) Push(d *Delivery) { s.recordSink.Push(d); s.pushed <- struct{}{} }
func (s *pushSink) PushAll(ds []*Delivery) {
	for _, d := range ds {
		s.Push(d)
	}
}

// wait receives from ch within a bound that only a failure reaches.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
}

// TestPageInWaitsForWritesAcceptedDuringItsScan: two messages are paged out while a
// page-in is between its snapshot of the queue (no write in flight then) and its store
// scan, and the later one's write completes first, so the scan reads it but not the
// earlier one. The page-in must not bring in the later one and move its cursor past
// the earlier one: once that write completes, the earlier message would be in the
// store below the cursor, never paged in and never delivered. Both are delivered, in
// order.
func TestPageInWaitsForWritesAcceptedDuringItsScan(t *testing.T) {
	store := &heldScan{Store: memstore.New(), entered: make(chan struct{}, 1), left: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	env := &Env{
		Store: store, Log: slog.New(slog.DiscardHandler), Memory: NewUsage(1 << 30),
		Space: &SpaceSignal{}, Policy: func(Kind, string) policy.Policy { return policy.Default(true) },
		Background: &wg, Stopping: func() bool { return false }, Done: make(chan struct{}),
	}
	const limit = 4 << 10
	q := NewQueue(env, "hole", policy.Policy{MemoryLimit: limit}, 0)
	accept := func(body string) uint64 {
		t.Helper()
		m := &persistence.Message{Persistent: true, Priority: 4, Body: []byte(body)}
		e, err := q.Accept(m, false)
		require.NoError(t, err)
		require.Nil(t, e, "paged out")
		return m.Seq
	}
	write := func(seq uint64, body string) {
		t.Helper()
		batch := store.Begin()
		batch.Add(&persistence.Message{Dest: q.Qualified(), Seq: seq, Persistent: true, Priority: 4, Body: []byte(body)})
		require.NoError(t, batch.Commit(context.Background(), persistence.Sync))
		Accepted{Q: q, Seq: seq}.Settle(nil)
	}
	sink := &pushSink{pushed: make(chan struct{}, 8)}
	delivered := func() []string {
		var out []string
		for _, d := range sink.all() {
			out = append(out, string(d.Msg.Body[:1]))
		}
		return out
	}

	// A message over the memory limit starts the paging; the consumer pages it in.
	big := "0" + strings.Repeat(".", limit)
	write(accept(big), big)
	c := &Consumer{Sink: sink, ID: "c", Mode: AckClientIndividual, Prefetch: 10}
	c.Credit.Store(10)
	require.True(t, q.AddConsumer(c))
	wait(t, sink.pushed, "the first message was not paged in")

	// Its acknowledgement starts a page-in with no write in flight, held before its scan.
	gate := store.arm()
	q.Acked(1, sink.all()[0].entry.Size)
	wait(t, store.entered, "no page-in started")
	a, b := accept("a"), accept("b")
	write(b, "b") // the later write completes first
	close(gate)
	wait(t, store.left, "the page-in's scan did not end") // it read b, and not a
	write(a, "a")

	wait(t, sink.pushed, "a message was lost")
	wait(t, sink.pushed, "a message was lost")
	wg.Wait()
	require.Equal(t, []string{"0", "a", "b"}, delivered())
	require.Zero(t, q.MemoryStats().Pending)
}
