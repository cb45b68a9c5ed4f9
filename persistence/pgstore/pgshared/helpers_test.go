package pgshared_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/internal/race"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Short timings for the tests: a dead node's leases come back within about 1.2s.
const (
	testLease     = time.Second
	testHeartbeat = 200 * time.Millisecond
	testReaper    = 200 * time.Millisecond
	testPoll      = 100 * time.Millisecond
)

// margin is what a bound on a takeover or a wake-up allows beyond the timings that
// make it (lease, reaper period, poll) for the statements of a busy machine: 700ms,
// five times that under the race detector. It catches a takeover that never comes or
// waits for another timeout, not one a few hundred milliseconds late.
var margin = race.Scale(700 * time.Millisecond)

// quiet discards the nodes' logs unless PGSHARED_LOG is set.
func quiet() *slog.Logger {
	if os.Getenv("PGSHARED_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newDB returns the DSN of a fresh database.
func newDB(t testing.TB) string {
	t.Helper()
	return pgtest.Shared(t).CreateDB(t, "pgshared")
}

// testOptions are the short-timing options of node id on dsn.
func testOptions(dsn, id string) pgshared.Options {
	return pgshared.Options{URL: dsn, NodeID: id, LeaseTimeout: testLease, HeartbeatPeriod: testHeartbeat,
		ReaperPeriod: testReaper, PollInterval: testPoll, Logger: quiet()}
}

// openNode opens a node with o and closes it when the test ends.
func openNode(t testing.TB, o pgshared.Options) *pgshared.Node {
	t.Helper()
	n, err := pgshared.Open(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// openNodes opens one node per id on a fresh database, whose DSN it returns too.
func openNodes(t testing.TB, ids ...string) (string, []*pgshared.Node) {
	t.Helper()
	dsn := newDB(t)
	nodes := make([]*pgshared.Node, len(ids))
	for i, id := range ids {
		nodes[i] = openNode(t, testOptions(dsn, id))
	}
	return dsn, nodes
}

// twoNodesHolding opens nodes "a" and "b" on a fresh database, sends count messages
// to q and has a claim them all.
func twoNodesHolding(t testing.TB, q string, count int) (dsn string, a, b *pgshared.Node, held []pgshared.Claimed) {
	t.Helper()
	dsn, nodes := openNodes(t, "a", "b")
	a, b = nodes[0], nodes[1]
	send(t, a, q, 0, count)
	held, err := a.Claim(context.Background(), q, count)
	require.NoError(t, err)
	require.Len(t, held, count)
	return dsn, a, b, held
}

// requireLost fails the test unless n notices within 5s that it lost its
// registration, and then refuses to claim from q.
func requireLost(t testing.TB, n *pgshared.Node, q string) {
	t.Helper()
	select {
	case <-n.Lost():
	case <-time.After(5 * time.Second):
		t.Fatalf("node %s did not notice it lost its registration", n.NodeID())
	}
	_, err := n.Claim(context.Background(), q, 1)
	require.ErrorIs(t, err, pgshared.ErrNodeLost)
}

// consumers runs fn in per goroutines on each node and waits for them; an error is
// reported with t.Error.
func consumers(t testing.TB, nodes []*pgshared.Node, per int, fn func(n *pgshared.Node) error) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range per {
			wg.Go(func() {
				if err := fn(n); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
}

// drainQueue claims batches of dest on n and acknowledges them until a claim comes
// back empty; seen, unless nil, gets each batch before its ack. A lost lease is an
// error.
func drainQueue(n *pgshared.Node, dest string, batch int, seen func([]pgshared.Claimed)) error {
	ctx := context.Background()
	for {
		cs, err := n.Claim(ctx, dest, batch)
		if err != nil || len(cs) == 0 {
			return err
		}
		if seen != nil {
			seen(cs)
		}
		lost, err := n.Ack(ctx, leases(cs))
		if err != nil {
			return err
		}
		if len(lost) > 0 {
			return fmt.Errorf("%d leases of %s lost on %s", len(lost), dest, n.NodeID())
		}
	}
}

// msg builds a queue message for dest.
func msg(dest string, i int, prio uint8, headers ...string) *persistence.Message {
	return &persistence.Message{Dest: dest, ID: "ID:test-" + strconv.Itoa(i), Priority: prio, Persistent: true,
		Headers: headers, Body: []byte(fmt.Sprintf("body %d", i))}
}

// send stores count messages of priority 4 to dest, numbered from first.
func send(t testing.TB, n *pgshared.Node, dest string, first, count int) []*persistence.Message {
	t.Helper()
	msgs := make([]*persistence.Message, count)
	for i := range msgs {
		msgs[i] = msg(dest, first+i, 4)
	}
	require.NoError(t, n.Send(context.Background(), msgs))
	return msgs
}

// leases returns the leases of cs.
func leases(cs []pgshared.Claimed) []pgshared.Lease {
	out := make([]pgshared.Lease, len(cs))
	for i, c := range cs {
		out[i] = c.Lease
	}
	return out
}

// bodies returns the bodies of cs as strings.
func bodies(cs []pgshared.Claimed) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.Message.Body)
	}
	return out
}

// waitFor fails the test unless cond holds within the time given (checked every
// 10ms, in a goroutine of its own: cond reports errors with assert, not require).
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, within, 10*time.Millisecond, what)
}

// execSQL runs sql on dsn.
func execSQL(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// claimAll claims from dest in batches until nothing is left.
func claimAll(t testing.TB, n *pgshared.Node, dest string) []pgshared.Claimed {
	t.Helper()
	var out []pgshared.Claimed
	for {
		cs, err := n.Claim(context.Background(), dest, 7)
		require.NoError(t, err)
		if len(cs) == 0 {
			return out
		}
		out = append(out, cs...)
	}
}
