package tests

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
)

// The tests of this file run two broker processes in persistenceAdapter.jdbc.mode:
// shared on one PostgreSQL database: both serve the same queues.

// Short lease settings: a killed node's leases come back within
// sharedLease + sharedReaper (plus a claim).
const (
	sharedLease  = 1500 * time.Millisecond
	sharedReaper = 300 * time.Millisecond
)

// startSharedPair starts two shared-mode brokers on a fresh database.
func startSharedPair(t *testing.T) (n1, n2 *brokerProc) {
	t.Helper()
	srv := pgtest.Shared(t)
	dsn := srv.CreateDB(t, "shared")
	node := func(id string) *brokerProc {
		return startBroker(t, brokerConfig{Adapter: jdbcAdapter(t, srv, dsn, 500*time.Millisecond,
			"mode: shared", "nodeId: "+id, "leaseTimeout: "+sharedLease.String(),
			"heartbeatPeriod: 300ms", "reaperPeriod: "+sharedReaper.String())})
	}
	n1, n2 = node("n1"), node("n2")
	require.Contains(t, n1.Log(), "shared queues: this node serves")
	return n1, n2
}

// sharedSend sends n persistent messages "<prefix>-<i>" to dest with a receipt each
// (pipelined) and waits for every RECEIPT.
func sharedSend(t *testing.T, addr, dest, prefix string, n int) []string {
	t.Helper()
	c := dialRaw(t, addr)
	require.Equal(t, "CONNECTED", c.connect().Command)
	bodies := make([]string, n)
	for i := range n {
		bodies[i] = fmt.Sprintf("%s-%d", prefix, i)
		f := frame.New("SEND", "destination", dest, "persistent", "true", "receipt", strconv.Itoa(i))
		f.Body = []byte(bodies[i])
		c.send(f)
	}
	for i := range n {
		f := c.read()
		require.Equal(t, "RECEIPT", f.Command, "%s", f.Body)
		require.Equal(t, strconv.Itoa(i), f.Header.Get("receipt-id"))
	}
	return bodies
}

// sharedConsumer is a client-individual subscriber over a raw connection.
type sharedConsumer struct {
	c     *rawConn
	early []*frame.Frame // MESSAGEs read while waiting for an ACK's RECEIPT
}

func newSharedConsumer(t *testing.T, addr, dest string, prefetch int) *sharedConsumer {
	t.Helper()
	c := dialRaw(t, addr)
	require.Equal(t, "CONNECTED", c.connect().Command)
	c.send(frame.New("SUBSCRIBE", "id", "s", "destination", dest, "ack", "client-individual",
		"activemq.prefetchSize", strconv.Itoa(prefetch), "receipt", "sub"))
	f := c.read()
	require.Equal(t, "RECEIPT", f.Command)
	return &sharedConsumer{c: c}
}

// next returns the next MESSAGE within d, or nil after d.
func (s *sharedConsumer) next(t *testing.T, d time.Duration) *frame.Frame {
	t.Helper()
	f, err := s.c.readWithin(d)
	if err != nil {
		return nil
	}
	require.Equal(t, "MESSAGE", f.Command, "%s", f.Body)
	return f
}

// ack acknowledges f and waits for the RECEIPT.
func (s *sharedConsumer) ack(t *testing.T, f *frame.Frame) {
	t.Helper()
	id := f.Header.Get("ack")
	s.c.send(frame.New("ACK", "id", id, "receipt", "a"+id))
	for {
		r := s.c.read()
		if r.Command == "RECEIPT" {
			require.Equal(t, "a"+id, r.Header.Get("receipt-id"))
			return
		}
		require.Equal(t, "MESSAGE", r.Command, "%s %s", r.Header.Get("message"), r.Body)
		s.early = append(s.early, r)
	}
}

// TestSharedQueueSendOneNodeConsumeOther: persistent SENDs with receipts on node 1 are
// consumed on node 2, each once, in order, none flagged redelivered.
func TestSharedQueueSendOneNodeConsumeOther(t *testing.T) {
	n1, n2 := startSharedPair(t)
	const n = 200
	bodies := sharedSend(t, n1.Addr, "/queue/shared.a", "a", n)
	cons := newSharedConsumer(t, n2.Addr, "/queue/shared.a", 10)
	for i := range n {
		f := cons.take(t, 10*time.Second)
		require.NotNil(t, f, "message %d not delivered", i)
		require.Equal(t, bodies[i], string(f.Body))
		require.Empty(t, f.Header.Get("redelivered"))
		cons.ack(t, f)
	}
	// Nothing is left for anyone: a consumer on node 1 gets nothing.
	other := newSharedConsumer(t, n1.Addr, "/queue/shared.a", 10)
	require.Nil(t, other.take(t, time.Second))
	require.Nil(t, cons.take(t, 100*time.Millisecond))
}

// take is next, after the messages that arrived while an ACK waited for its RECEIPT.
func (s *sharedConsumer) take(t *testing.T, d time.Duration) *frame.Frame {
	if len(s.early) > 0 {
		f := s.early[0]
		s.early = s.early[1:]
		return f
	}
	return s.next(t, d)
}

// TestSharedQueueConsumersOnBothNodes: consumers on both nodes share a queue: every
// message reaches exactly one of them.
func TestSharedQueueConsumersOnBothNodes(t *testing.T) {
	n1, n2 := startSharedPair(t)
	c1 := newSharedConsumer(t, n1.Addr, "/queue/shared.b", 5)
	c2 := newSharedConsumer(t, n2.Addr, "/queue/shared.b", 5)
	const n = 300
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		per  [2]int
	)
	consume := func(i int, c *sharedConsumer) {
		for {
			mu.Lock()
			done := len(seen) == n
			mu.Unlock()
			if done {
				return
			}
			f := c.take(t, 200*time.Millisecond)
			if f == nil {
				continue
			}
			mu.Lock()
			seen[string(f.Body)]++
			per[i]++
			mu.Unlock()
			c.ack(t, f)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	bodies := sharedSend(t, n1.Addr, "/queue/shared.b", "b", n)
	for i, c := range []*sharedConsumer{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consume(i, c)
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	select {
	case <-errs:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("only %d of %d messages consumed in 30s", len(seen), n)
	}
	for _, b := range bodies {
		require.Equal(t, 1, seen[b], "message %s", b)
	}
	require.Len(t, seen, n)
	require.Positive(t, per[0], "node 1's consumer got nothing")
	require.Positive(t, per[1], "node 2's consumer got nothing")
	t.Logf("node 1: %d, node 2: %d", per[0], per[1])
}
