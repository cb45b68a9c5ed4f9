package destinations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// fakeShared is an in-memory SharedQueues: messages by ID, each available or leased.
type fakeShared struct {
	mu     sync.Mutex
	next   int64
	msgs   map[int64]*fakeRow
	calls  []string // "claim queue://q 3", "ack 1,2", "release true 3", "send queue://X", ...
	failAt string   // a call kind that fails
}

type fakeRow struct {
	m      *persistence.Message
	leased bool
	redel  uint32
}

func newFakeShared() *fakeShared { return &fakeShared{msgs: map[int64]*fakeRow{}} }

func (f *fakeShared) log(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeShared) Send(_ context.Context, msgs []*persistence.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range msgs {
		f.log("send %s", m.Dest)
		f.next++
		m.Seq = uint64(f.next)
		f.msgs[f.next] = &fakeRow{m: m.Clone()}
	}
	return nil
}

func (f *fakeShared) Claim(_ context.Context, dest string, max int) ([]SharedMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("claim %s %d", dest, max)
	var out []SharedMessage
	for id := int64(1); id <= f.next && len(out) < max; id++ {
		r := f.msgs[id]
		if r == nil || r.leased || r.m.Dest != dest {
			continue
		}
		r.leased = true
		m := r.m.Clone()
		m.Seq = uint64(id)
		m.RedeliveryCount += r.redel
		out = append(out, SharedMessage{Lease: Lease{ID: id, Epoch: 1}, Message: m})
	}
	return out, nil
}

func (f *fakeShared) Ack(_ context.Context, leases []Lease) ([]Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("ack %v", leases)
	if f.failAt == "ack" {
		return nil, errors.New("fake: database down")
	}
	var lost []Lease
	for _, l := range leases {
		if r := f.msgs[l.ID]; r == nil || !r.leased {
			lost = append(lost, l)
			continue
		}
		delete(f.msgs, l.ID)
	}
	return lost, nil
}

func (f *fakeShared) Release(_ context.Context, leases []Lease, redelivered bool) ([]Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("release %v %v", redelivered, leases)
	for _, l := range leases {
		if r := f.msgs[l.ID]; r != nil {
			r.leased = false
			if redelivered {
				r.redel++
			}
		}
	}
	return nil, nil
}

func (f *fakeShared) ReleaseGroups(_ context.Context, dest string, groups []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("release groups %s %v", dest, groups)
	return nil
}

func (f *fakeShared) Notifications() <-chan string { return nil }

func (f *fakeShared) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeShared) remaining() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs)
}

// recordSink collects the deliveries pushed to its consumers.
type recordSink struct {
	mu sync.Mutex
	ds []*Delivery
}

func (s *recordSink) Push(d *Delivery) { s.mu.Lock(); s.ds = append(s.ds, d); s.mu.Unlock() }
func (s *recordSink) PushAll(ds []*Delivery) {
	for _, d := range ds {
		s.Push(d)
	}
}
func (s *recordSink) AbortConsumer(*Consumer, string, bool) {}
func (s *recordSink) ConnectionID() string                  { return "test" }
func (s *recordSink) count() int                            { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ds) }
func (s *recordSink) all() []*Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Delivery(nil), s.ds...)
}

func sharedEnv(t *testing.T) *Env {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	return &Env{
		Store: memstore.New(), Log: slog.New(slog.DiscardHandler), Memory: NewUsage(1 << 30),
		Space: &SpaceSignal{}, Policy: func(Kind, string) policy.Policy { return policy.Default(true) },
		Background: &wg, Stopping: func() bool { return false }, Done: make(chan struct{}),
		Commit: func(b persistence.Batch, d persistence.Durability, done func(error)) {
			done(b.Commit(context.Background(), d))
		},
	}
}

// sharedQueue is a shared queue "q" over f with n messages, and a consumer of prefetch.
func sharedQueue(t *testing.T, f *fakeShared, n int, prefetch int32, p policy.Policy) (*QueueDest, *Consumer, *recordSink) {
	t.Helper()
	for i := range n {
		require.NoError(t, f.Send(context.Background(), []*persistence.Message{{
			Dest: "queue://q", Persistent: true, Priority: 4, Body: fmt.Appendf(nil, "m%d", i)}}))
	}
	q := NewQueue(sharedEnv(t), "q", p, 0)
	q.Share(f)
	sink := &recordSink{}
	c := &Consumer{Sink: sink, ID: "c", Dest: Name{Kind: Queue, Name: "q"}, Mode: AckClientIndividual, Prefetch: prefetch}
	c.Credit.Store(prefetch)
	require.True(t, q.AddConsumer(c))
	return q, c, sink
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(time.Millisecond)
	}
}

// TestSharedClaimsWithinPrefetch: a shared queue claims no more than its consumers'
// room, delivers in order, and claims again as acknowledgements free room.
func TestSharedClaimsWithinPrefetch(t *testing.T) {
	f := newFakeShared()
	q, c, sink := sharedQueue(t, f, 10, 3, policy.Default(true))
	waitFor(t, "3 deliveries", func() bool { return sink.count() == 3 })
	require.Equal(t, []string{"claim queue://q 3"}, f.callLog()[10:])
	for i, d := range sink.all() {
		require.Equal(t, fmt.Sprintf("m%d", i), string(d.Msg.Body))
		require.False(t, d.Redelivered)
		require.True(t, d.Claimed())
	}
	done := make(chan error, 1)
	q.SettleShared(sink.all()[:2], true, func(err error) { done <- err })
	require.NoError(t, <-done)
	c.Credit.Add(2)
	q.Dispatch()
	waitFor(t, "2 more deliveries", func() bool { return sink.count() == 5 })
	require.Equal(t, 8, f.remaining())
	st := q.MemoryStats()
	require.Equal(t, int64(2), st.Dequeued)
	require.Equal(t, 3, st.InFlight)
}

// TestSharedAckOfLostLease: an acknowledgement whose lease the node no longer holds
// fails with ErrLeaseLost.
func TestSharedAckOfLostLease(t *testing.T) {
	f := newFakeShared()
	q, _, sink := sharedQueue(t, f, 1, 1, policy.Default(true))
	waitFor(t, "a delivery", func() bool { return sink.count() == 1 })
	d := sink.all()[0]
	f.mu.Lock()
	f.msgs[int64(d.Msg.Seq)].leased = false // given to another node
	f.mu.Unlock()
	done := make(chan error, 1)
	q.SettleShared([]*Delivery{d}, true, func(err error) { done <- err })
	require.ErrorIs(t, <-done, ErrLeaseLost)
}

// TestSharedConsumerGoneReleases: a consumer that goes gives its delivered messages back
// counted redelivered, its undelivered ones as they were, and the next claim flags the
// redelivered ones.
func TestSharedConsumerGoneReleases(t *testing.T) {
	f := newFakeShared()
	q, c, sink := sharedQueue(t, f, 4, 4, policy.Default(true))
	waitFor(t, "4 deliveries", func() bool { return sink.count() == 4 })
	ds := sink.all()
	ds[0].Written, ds[1].Written = true, true
	q.RemoveConsumer(c)
	q.Requeue(ds, false)
	q.ConsumerGone(c)
	waitFor(t, "the releases", func() bool { return len(f.callLog()) == 4+1+2 })
	log := f.callLog()[5:]
	require.Contains(t, log[0], "release true")
	require.Contains(t, log[1], "release false")

	sink2 := &recordSink{}
	c2 := &Consumer{Sink: sink2, ID: "c2", Dest: c.Dest, Mode: AckClientIndividual, Prefetch: 4}
	c2.Credit.Store(4)
	require.True(t, q.AddConsumer(c2))
	waitFor(t, "4 deliveries again", func() bool { return sink2.count() == 4 })
	for i, d := range sink2.all() {
		require.Equal(t, i < 2, d.Redelivered, "delivery %d", i)
	}
	require.Zero(t, q.MemoryStats().MemoryBytes-sumSizes(sink2.all()))
}

func sumSizes(ds []*Delivery) int64 {
	var n int64
	for _, d := range ds {
		n += d.Size()
	}
	return n
}

// TestSharedNackToDLQ: a NACK under the default policy sends a dead-letter copy to
// ActiveMQ.DLQ, then acknowledges the message.
func TestSharedNackToDLQ(t *testing.T) {
	f := newFakeShared()
	q, _, sink := sharedQueue(t, f, 1, 1, policy.Default(true))
	waitFor(t, "a delivery", func() bool { return sink.count() == 1 })
	done := make(chan error, 1)
	q.SettleShared(sink.all(), false, func(err error) { done <- err })
	require.NoError(t, <-done)
	log := f.callLog()
	require.Equal(t, "send queue://ActiveMQ.DLQ", log[len(log)-2])
	require.Contains(t, log[len(log)-1], "ack")
	require.Equal(t, 1, f.remaining(), "only the dead-letter copy is left")
}

// TestSharedMaxRedeliveriesAtClaim: a claimed message already redelivered more often
// than the policy allows goes to the dead-letter queue instead of a consumer.
func TestSharedMaxRedeliveriesAtClaim(t *testing.T) {
	f := newFakeShared()
	p := policy.Default(true)
	p.Redelivery.MaximumRedeliveries = 1
	require.NoError(t, f.Send(context.Background(), []*persistence.Message{{
		Dest: "queue://q", Persistent: true, Priority: 4, Body: []byte("poison"), RedeliveryCount: 2}}))
	_, _, sink := sharedQueue(t, f, 1, 5, p)
	waitFor(t, "the good message", func() bool { return sink.count() == 1 })
	require.Equal(t, "m0", string(sink.all()[0].Msg.Body))
	waitFor(t, "the dead-letter copy", func() bool {
		for _, c := range f.callLog() {
			if c == "send queue://ActiveMQ.DLQ" {
				return true
			}
		}
		return false
	})
}

// TestSharedGroupReleasedAfterItsMessages: when a group's consumer goes, its delivered
// messages are given back first, then the group, so that the next owner, on any node,
// gets them in order.
func TestSharedGroupReleasedAfterItsMessages(t *testing.T) {
	f := newFakeShared()
	for i := range 2 {
		m := &persistence.Message{Dest: "queue://q", Persistent: true, Priority: 4, Body: fmt.Appendf(nil, "g%d", i)}
		m.Headers = persistence.Headers{"JMSXGroupID", "G"}
		require.NoError(t, f.Send(context.Background(), []*persistence.Message{m}))
	}
	q, c, sink := sharedQueue(t, f, 0, 5, policy.Default(true))
	waitFor(t, "2 deliveries", func() bool { return sink.count() == 2 })
	ds := sink.all()
	require.True(t, ds[0].GroupFirst)
	for _, d := range ds {
		d.Written = true
	}
	q.RemoveConsumer(c)
	q.Requeue(ds, false)
	q.ConsumerGone(c)
	waitFor(t, "the group released", func() bool {
		log := f.callLog()
		return log[len(log)-1] == "release groups queue://q [G]"
	})
	log := f.callLog()
	require.Contains(t, log[len(log)-2], "release true")
}
