package pgshared_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

func TestClaimOrderPriorityThenFIFO(t *testing.T) {
	dsn := newDB(t)
	n := openNode(t, testOptions(dsn, "a"))
	ctx := context.Background()
	const q = "queue://ORDERS"
	msgs := []*persistence.Message{msg(q, 0, 4), msg(q, 1, 9), msg(q, 2, 4), msg(q, 3, 0), msg(q, 4, 9)}
	require.NoError(t, n.Send(ctx, msgs[:3]))
	require.NoError(t, n.Send(ctx, msgs[3:]))
	for i := 1; i < len(msgs); i++ {
		require.Greater(t, msgs[i].Seq, msgs[i-1].Seq, "ids follow the order of the sends")
	}
	require.NoError(t, n.Send(ctx, []*persistence.Message{msg("queue://OTHER", 9, 4)}))

	first, err := n.Claim(ctx, q, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"body 1", "body 4"}, bodies(first))
	rest := claimAll(t, n, q)
	require.Equal(t, []string{"body 0", "body 2", "body 3"}, bodies(rest))
	c := first[0]
	require.Equal(t, q, c.Message.Dest)
	require.Equal(t, msgs[1].Seq, c.Message.Seq)
	require.Equal(t, uint64(c.Lease.ID), c.Message.Seq)
	require.Equal(t, n.Epoch(), c.Lease.Epoch)
	require.Equal(t, "ID:test-1", c.Message.ID)
	require.Equal(t, uint8(9), c.Message.Priority)
	require.True(t, c.Message.Persistent)

	stats, err := n.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, []pgshared.DestStats{{Dest: q, Leased: 5}, {Dest: "queue://OTHER", Available: 1}}, stats)

	lost, err := n.Ack(ctx, leases(append(first, rest...)))
	require.NoError(t, err)
	require.Empty(t, lost)
	lost, err = n.Ack(ctx, leases(first))
	require.NoError(t, err)
	require.Equal(t, leases(first), lost, "a second ack of a lease finds nothing")
}

func TestConcurrentClaimsAreDisjointAndComplete(t *testing.T) {
	const q, total = "queue://WORK", 3000
	_, nodes := openNodes(t, "a", "b", "c")
	for i := 0; i < total; i += 500 {
		send(t, nodes[0], q, i, 500)
	}
	var (
		mu    sync.Mutex
		seen  = map[int64]string{}
		dupes []int64
	)
	consumers(t, nodes, 4, func(n *pgshared.Node) error {
		return drainQueue(n, q, 16, func(cs []pgshared.Claimed) {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range cs {
				if _, ok := seen[c.Lease.ID]; ok {
					dupes = append(dupes, c.Lease.ID)
				}
				seen[c.Lease.ID] = n.NodeID()
			}
		})
	})
	require.Empty(t, dupes, "two claims got the same message")
	require.Len(t, seen, total)
	per := map[string]int{}
	for _, node := range seen {
		per[node]++
	}
	require.Len(t, per, 3, "every node claimed some: %v", per)
	stats, err := nodes[0].Stats(context.Background())
	require.NoError(t, err)
	require.Empty(t, stats)
}

func TestAckOfStaleLeaseIsLost(t *testing.T) {
	const q = "queue://Q"
	dsn, a, b, held := twoNodesHolding(t, q, 3)
	ctx := context.Background()

	// Node a is declared dead: its row goes, as the reaper does to a silent node.
	_, nodesTable := a.Tables()
	execSQL(t, dsn, "DELETE FROM "+nodesTable+" WHERE NODE_ID = 'a'")
	var again []pgshared.Claimed
	waitFor(t, 5*time.Second, "b claims the returned messages", func() bool {
		cs, err := b.Claim(ctx, q, 3)
		again = append(again, cs...)
		return assert.NoError(t, err) && len(again) == 3
	})
	for _, c := range again {
		require.Equal(t, 1, c.Redeliveries)
		require.Equal(t, uint32(1), c.Message.RedeliveryCount)
	}
	lost, err := a.Ack(ctx, leases(held))
	require.NoError(t, err)
	require.Equal(t, leases(held), lost)
	stats, err := b.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, []pgshared.DestStats{{Dest: q, Leased: 3}}, stats, "the stale ack deleted nothing")
	lost, err = b.Ack(ctx, leases(again))
	require.NoError(t, err)
	require.Empty(t, lost)

	// a's heartbeat finds its row gone: it stops claiming.
	requireLost(t, a, q)
}

func TestReleaseCountsRedeliveries(t *testing.T) {
	dsn := newDB(t)
	n := openNode(t, testOptions(dsn, "a"))
	ctx := context.Background()
	const q = "queue://R"
	send(t, n, q, 0, 2)
	cs, err := n.Claim(ctx, q, 2)
	require.NoError(t, err)
	lost, err := n.Release(ctx, leases(cs[:1]), true)
	require.NoError(t, err)
	require.Empty(t, lost)
	lost, err = n.Release(ctx, leases(cs[1:]), false)
	require.NoError(t, err)
	require.Empty(t, lost)
	lost, err = n.Release(ctx, leases(cs[1:]), false)
	require.NoError(t, err)
	require.Equal(t, leases(cs[1:]), lost, "a lease released twice")

	again, err := n.Claim(ctx, q, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"body 0", "body 1"}, bodies(again), "released messages keep their place")
	require.Equal(t, 1, again[0].Redeliveries)
	require.Equal(t, uint32(1), again[0].Message.RedeliveryCount)
	require.Equal(t, 0, again[1].Redeliveries)
	_, err = n.Release(ctx, leases(again[:1]), true)
	require.NoError(t, err)
	third, err := n.Claim(ctx, q, 1)
	require.NoError(t, err)
	require.Equal(t, 2, third[0].Redeliveries)
}

func TestGroupsStickToOneNode(t *testing.T) {
	_, nodes := openNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	const q = "queue://G"
	g := func(i int, group string) *persistence.Message { return msg(q, i, 4, pgshared.GroupHeader, group) }
	require.NoError(t, a.Send(ctx, []*persistence.Message{g(0, "G1"), g(1, "G1"), msg(q, 2, 4), g(3, "G1"), g(4, "G2")}))

	got, err := a.Claim(ctx, q, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"body 0"}, bodies(got))
	require.Equal(t, "G1", got[0].Group)

	other := claimAll(t, b, q)
	require.Equal(t, []string{"body 2", "body 4"}, bodies(other), "b skips a's group G1 and takes G2")
	_, err = a.Ack(ctx, leases(got))
	require.NoError(t, err)
	none, err := b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Empty(t, none, "G1 stays a's after its message was acknowledged")
	more, err := a.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"body 1", "body 3"}, bodies(more))
	_, err = a.Release(ctx, leases(more), true)
	require.NoError(t, err)
	none, err = b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Empty(t, none, "releasing messages keeps the group")

	require.NoError(t, a.ReleaseGroups(ctx, q, []string{"G1"}))
	taken, err := b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"body 1", "body 3"}, bodies(taken))
	require.Equal(t, 1, taken[0].Redeliveries)

	// Closing b gives G1 and G2 up: a gets them back.
	require.NoError(t, b.Close())
	back := claimAll(t, a, q)
	require.Equal(t, []string{"body 1", "body 2", "body 3", "body 4"}, bodies(back))
}

func TestConcurrentClaimsOfGroupsPickOneOwner(t *testing.T) {
	const q = "queue://GROUPS"
	_, nodes := openNodes(t, "a", "b", "c")
	ctx := context.Background()
	var msgs []*persistence.Message
	for i := range 400 {
		msgs = append(msgs, msg(q, i, 4, pgshared.GroupHeader, []string{"g0", "g1", "g2", "g3", "g4"}[i%5]))
	}
	require.NoError(t, nodes[0].Send(ctx, msgs))
	var (
		mu     sync.Mutex
		owners = map[string]map[string]bool{}
		order  = map[string][]int64{} // group -> IDs in the order claimed
		count  int
	)
	// One claimer per node, as the broker's queue does: a group's messages are
	// claimed in order. A fixed number of rounds, not until a claim comes back empty,
	// which it does on a node while the others hold every group.
	consumers(t, nodes, 1, func(n *pgshared.Node) error {
		for range 150 {
			cs, err := n.Claim(ctx, q, 3)
			if err != nil {
				return err
			}
			mu.Lock()
			for _, c := range cs {
				if owners[c.Group] == nil {
					owners[c.Group] = map[string]bool{}
				}
				owners[c.Group][n.NodeID()] = true
				order[c.Group] = append(order[c.Group], c.Lease.ID)
				count++
			}
			mu.Unlock()
			if _, err := n.Ack(ctx, leases(cs)); err != nil {
				return err
			}
		}
		return nil
	})
	require.Equal(t, 400, count, "every message claimed once (the group owners kept claiming)")
	for g, who := range owners {
		require.Len(t, who, 1, "group %s claimed by several nodes: %v", g, who)
		require.IsIncreasing(t, order[g], "group %s claimed out of order", g)
	}
}

func TestExpiredMessagesAreSkippedThenDeleted(t *testing.T) {
	dsn := newDB(t)
	n := openNode(t, testOptions(dsn, "a"))
	ctx := context.Background()
	const q = "queue://EXP"
	old := msg(q, 0, 4)
	old.Expires = time.Now().Add(-time.Minute).UnixMilli()
	future := msg(q, 1, 4)
	future.Expires = time.Now().Add(time.Hour).UnixMilli()
	require.NoError(t, n.Send(ctx, []*persistence.Message{old, future, msg(q, 2, 4)}))
	got := claimAll(t, n, q)
	require.Equal(t, []string{"body 1", "body 2"}, bodies(got))
	require.Equal(t, future.Expires, got[0].Message.Expires)
	_, err := n.Ack(ctx, leases(got))
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "the reaper deletes the expired message", func() bool {
		stats, err := n.Stats(ctx)
		return assert.NoError(t, err) && len(stats) == 0
	})
}

func TestSendRejectsInvalidMessages(t *testing.T) {
	dsn := newDB(t)
	n := openNode(t, testOptions(dsn, "a"))
	ctx := context.Background()
	long := make([]byte, 251)
	for i := range long {
		long[i] = 'x'
	}
	for _, m := range []*persistence.Message{
		msg("", 0, 4),
		msg("queue://"+string(long), 0, 4),
		msg("queue://Q", 0, 4, pgshared.GroupHeader, "a\x00b"),
	} {
		err := n.Send(ctx, []*persistence.Message{msg("queue://Q", 1, 4), m})
		require.ErrorIs(t, err, pgshared.ErrInvalid)
	}
	stats, err := n.Stats(ctx)
	require.NoError(t, err)
	require.Empty(t, stats, "nothing of a refused call is stored")
}

func TestOpenOptions(t *testing.T) {
	ctx := context.Background()
	for _, o := range []pgshared.Options{
		{},
		{URL: "postgres://x/y", TablePrefix: "1bad"},
		{URL: "postgres://x/y", LeaseTimeout: time.Second, HeartbeatPeriod: 2 * time.Second},
		{URL: "mysql://x/y"},
		{URL: "postgres://x/y", NodeID: "a\x00"},
	} {
		_, err := pgshared.Open(ctx, o)
		require.ErrorIs(t, err, pgshared.ErrOption, "%+v", o)
	}
	dsn := newDB(t)
	o := testOptions(dsn, "a")
	o.SkipCreateTables = true
	_, err := pgshared.Open(ctx, o)
	require.ErrorIs(t, err, pgshared.ErrNoSchema)

	n := openNode(t, testOptions(dsn, "a"))
	require.NoError(t, n.Close())
	require.NoError(t, n.Close(), "Close twice")
	_, err = n.Claim(ctx, "queue://Q", 1)
	require.ErrorIs(t, err, pgshared.ErrClosed)
	require.ErrorIs(t, n.Send(ctx, []*persistence.Message{msg("queue://Q", 0, 4)}), pgshared.ErrClosed)
	_, ok := <-n.Notifications()
	for ok {
		_, ok = <-n.Notifications()
	}

	execSQL(t, dsn, "UPDATE activemq_sq_version SET VERSION = 2")
	_, err = pgshared.Open(ctx, testOptions(dsn, "a"))
	require.ErrorIs(t, err, pgshared.ErrSchemaVersion)
}

func TestCorruptMessageIsReportedAndKeptAside(t *testing.T) {
	dsn, nodes := openNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	const q = "queue://BAD"
	sent := send(t, a, q, 0, 3)
	msgsTable, _ := a.Tables()
	execSQL(t, dsn, "UPDATE "+msgsTable+" SET MSG = '\\x09'::bytea WHERE ID = $1", int64(sent[1].Seq))
	got, err := a.Claim(ctx, q, 10)
	require.ErrorIs(t, err, pgstore.ErrCorrupt)
	require.Equal(t, []string{"body 0", "body 2"}, bodies(got))
	none, err := b.Claim(ctx, q, 10)
	require.NoError(t, err)
	require.Empty(t, none, "the corrupt message stays leased to the node that found it")
}
