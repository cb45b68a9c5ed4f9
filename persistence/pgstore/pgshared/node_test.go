package pgshared_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

// returnBound is how soon a dead node's leases must be claimable elsewhere: the lease
// timeout and a reaper period, with a margin for the statements of a busy machine.
var returnBound = testLease + testReaper + margin

func TestDeadNodeLeasesReturnedByReaper(t *testing.T) {
	for _, reaperDies := range []bool{false, true} {
		name := map[bool]string{false: "survivor reaps", true: "reaper dies"}[reaperDies]
		t.Run(name, func(t *testing.T) {
			dsn := newDB(t)
			ctx := context.Background()
			first := openNode(t, testOptions(dsn, "first"))
			waitFor(t, 5*time.Second, "first is the reaper", first.IsReaper)
			second := openNode(t, testOptions(dsn, "second"))
			dead, survivor := second, first
			if reaperDies {
				dead, survivor = first, second
			}
			const q = "queue://DEAD"
			send(t, survivor, q, 0, 10)
			held, err := dead.Claim(ctx, q, 6)
			require.NoError(t, err)
			require.Len(t, held, 6)
			mine, err := survivor.Claim(ctx, q, 10)
			require.NoError(t, err)
			require.Len(t, mine, 4)

			dead.Crash()
			crashed := time.Now()
			var back []pgshared.Claimed
			waitFor(t, 3*returnBound, "the dead node's leases are returned", func() bool {
				cs, err := survivor.Claim(ctx, q, 10)
				back = append(back, cs...)
				return assert.NoError(t, err) && len(back) == 6
			})
			took := time.Since(crashed)
			t.Logf("returned after %v", took)
			require.Less(t, took, returnBound)
			require.ElementsMatch(t, bodies(held), bodies(back))
			for _, c := range back {
				require.Equal(t, 1, c.Redeliveries)
			}
			for _, c := range mine {
				require.Equal(t, 0, c.Redeliveries, "the survivor's own leases stay")
			}
			lost, err := survivor.Ack(ctx, leases(append(mine, back...)))
			require.NoError(t, err)
			require.Empty(t, lost)
			require.True(t, survivor.IsReaper())
		})
	}
}

func TestOneReaperAtATime(t *testing.T) {
	dsn := newDB(t)
	a := openNode(t, testOptions(dsn, "a"))
	waitFor(t, 5*time.Second, "a is the reaper", a.IsReaper)
	b := openNode(t, testOptions(dsn, "b"))
	// Over ten reaper periods, b never reaps while a holds the lease.
	start := a.ReapRounds()
	waitFor(t, 5*time.Second, "a reaps ten rounds", func() bool { return a.ReapRounds() >= start+10 })
	require.Zero(t, b.ReapRounds())
	require.False(t, b.IsReaper())

	a.Crash()
	crashed := time.Now()
	waitFor(t, 3*returnBound, "b takes over as the reaper", func() bool { return b.ReapRounds() > 0 })
	require.Less(t, time.Since(crashed), testLease+2*testReaper+margin)
	require.True(t, b.IsReaper())

	// A node that closes gives the lease up at once.
	c := openNode(t, testOptions(dsn, "c"))
	require.NoError(t, b.Close())
	waitFor(t, 10*testReaper, "c reaps after b closed", func() bool { return c.ReapRounds() > 0 })
}

func TestCloseGivesLeasesBack(t *testing.T) {
	const q = "queue://CLOSE"
	_, a, b, held := twoNodesHolding(t, q, 4)
	ctx := context.Background()
	_, err := a.Release(ctx, leases(held[2:]), false) // never delivered
	require.NoError(t, err)
	require.NoError(t, a.Close())
	got, err := b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"body 0", "body 1", "body 2", "body 3"}, bodies(got), "no wait for a reaper")
	require.Equal(t, []int{1, 1, 0, 0}, []int{got[0].Redeliveries, got[1].Redeliveries, got[2].Redeliveries, got[3].Redeliveries})
}

func TestRestartedNodeGetsNewEpoch(t *testing.T) {
	dsn := newDB(t)
	ctx := context.Background()
	a := openNode(t, testOptions(dsn, "a"))
	const q = "queue://RESTART"
	send(t, a, q, 0, 2)
	held, err := a.Claim(ctx, q, 2)
	require.NoError(t, err)
	a.Crash()

	again := openNode(t, testOptions(dsn, "a"))
	require.Greater(t, again.Epoch(), a.Epoch())
	lost, err := again.Ack(ctx, leases(held))
	require.NoError(t, err)
	require.Equal(t, leases(held), lost, "a new life never owns the old one's leases")
	got, err := again.Claim(ctx, q, 2)
	require.NoError(t, err)
	require.Len(t, got, 2, "the old life's leases came back when the node registered")
	require.Equal(t, 1, got[0].Redeliveries)

	// A second process with the same id deposes the first.
	twin := openNode(t, testOptions(dsn, "a"))
	requireLost(t, again, q)
	require.NotEqual(t, twin.Epoch(), again.Epoch())
}

func TestNotifyWakesIdleNode(t *testing.T) {
	dsn := newDB(t)
	a := openNode(t, testOptions(dsn, "a"))
	o := testOptions(dsn, "b")
	o.PollInterval = time.Hour // only LISTEN can wake it
	b := openNode(t, o)
	waitFor(t, 5*time.Second, "b listens", b.Listening)
	drain(b)
	send(t, a, "queue://WAKE", 0, 3)
	require.Equal(t, "queue://WAKE", next(t, b, 5*time.Second))
	// One notification for the three messages of the transaction.
	select {
	case d := <-b.Notifications():
		t.Fatalf("a second notification %q", d)
	default:
	}
	cs, err := b.Claim(context.Background(), "queue://WAKE", 10)
	require.NoError(t, err)
	require.Len(t, cs, 3)
	waitFor(t, 5*time.Second, "a listens", a.Listening)
	drain(a)
	_, err = b.Release(context.Background(), leases(cs), true)
	require.NoError(t, err)
	require.Equal(t, "queue://WAKE", nextDest(t, a, 5*time.Second), "a release notifies too")
}

func TestPollingWhenListenIsOff(t *testing.T) {
	dsn := newDB(t)
	a := openNode(t, testOptions(dsn, "a"))
	o := testOptions(dsn, "b")
	o.DisableListen = true
	b := openNode(t, o)
	send(t, a, "queue://POLL", 0, 1)
	drain(b)
	start := time.Now()
	require.Equal(t, "", next(t, b, 5*time.Second), "a poll tick")
	require.Less(t, time.Since(start), testPoll+margin)
	require.False(t, b.Listening())
	cs, err := b.Claim(context.Background(), "queue://POLL", 10)
	require.NoError(t, err)
	require.Len(t, cs, 1)
}

// TestClaimNeverWaitsOnANotification: b's claim comes back empty because another
// transaction holds the rows (SKIP LOCKED), as a claim that is then rolled back does;
// the rows come back without a notification. With LISTEN up, b is still told to try
// again ("") within PollInterval, and its claim then takes them.
func TestClaimNeverWaitsOnANotification(t *testing.T) {
	dsn, nodes := openNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	waitFor(t, 5*time.Second, "b listens", b.Listening)
	const q = "queue://HELD"
	ctx := context.Background()
	send(t, a, q, 0, 3)
	require.Equal(t, q, nextDest(t, b, 5*time.Second))

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	msgs, _ := a.Tables()
	_, err = tx.Exec(ctx, "SELECT ID FROM "+msgs+" WHERE CONTAINER = $1 FOR UPDATE", q)
	require.NoError(t, err)
	cs, err := b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Empty(t, cs, "the rows are held by another transaction")
	drain(b)
	require.NoError(t, tx.Rollback(ctx)) // no NOTIFY

	// The wait is bounded by PollInterval; the deadline gives a busy machine 10 of them.
	require.Equal(t, "", next(t, b, 10*testPoll), "a poll comes although LISTEN is up")
	cs, err = b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Len(t, cs, 3)
	require.True(t, b.Listening())
}

func drain(n *pgshared.Node) {
	for {
		select {
		case <-n.Notifications():
		default:
			return
		}
	}
}

// next returns the next notification, "" (a poll) included, failing the test after
// within.
func next(t *testing.T, n *pgshared.Node, within time.Duration) string {
	t.Helper()
	select {
	case d := <-n.Notifications():
		return d
	case <-time.After(within):
		t.Fatal("no notification")
		return ""
	}
}

// nextDest returns the next notification that names a destination, passing the polls
// (""), failing the test after within.
func nextDest(t *testing.T, n *pgshared.Node, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if d := next(t, n, time.Until(deadline)); d != "" {
			return d
		}
	}
}

func TestListenerReconnects(t *testing.T) {
	dsn := newDB(t)
	a := openNode(t, testOptions(dsn, "a"))
	waitFor(t, 5*time.Second, "a listens", a.Listening)
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	listener := func() (pid int) {
		err := conn.QueryRow(context.Background(),
			`SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND datname = current_database()`).Scan(&pid)
		assert.NoError(t, err)
		return pid
	}
	old := listener()
	require.NotZero(t, old)
	_, err = conn.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, old)
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "a listens again", func() bool {
		pid := listener()
		return pid != 0 && pid != old && a.Listening()
	})
	drain(a)
	send(t, a, "queue://AGAIN", 0, 1)
	require.Equal(t, "queue://AGAIN", nextDest(t, a, 5*time.Second))
}

func TestNodeLostWhileDatabaseDown(t *testing.T) {
	srv := pgtest.Start(t)
	n := openNode(t, testOptions(srv.DSN("postgres"), "a"))
	require.NoError(t, srv.Down())
	down := time.Now()
	requireLost(t, n, "queue://DOWN")
	// Lost by the node's own clock: at most LeaseTimeout after the last successful
	// heartbeat, so before the others could have taken its leases.
	require.Less(t, time.Since(down), testLease+2*testHeartbeat+margin)
	require.NoError(t, srv.Up())
}

func TestNotificationsOverflowOwesAPoll(t *testing.T) {
	o := testOptions(newDB(t), "a")
	o.PollInterval = time.Hour // only the debt sends ""
	a := openNode(t, o)
	waitFor(t, 5*time.Second, "a listens", a.Listening)
	const sends = 1100 // more than the channel holds
	for i := range sends {
		send(t, a, "queue://O"+strconv.Itoa(i), i, 1)
	}
	// Nobody reads until a notification was dropped: the channel is full and owes a "".
	waitFor(t, 10*time.Second, "a notification dropped", a.Owes)
	var got []string
	for len(a.Notifications()) > 0 {
		got = append(got, next(t, a, time.Second))
	}
	require.GreaterOrEqual(t, len(got), cap(a.Notifications()))
	// The next notification pays the debt first: "" (look at every queue), then its own.
	send(t, a, "queue://LAST", sends, 1)
	var rest []string
	for len(rest) == 0 || rest[len(rest)-1] != "queue://LAST" {
		rest = append(rest, next(t, a, 5*time.Second))
	}
	require.Contains(t, append(got, rest...)[1:], "", "the dropped notifications were owed a poll")
	require.False(t, a.Owes())
}
