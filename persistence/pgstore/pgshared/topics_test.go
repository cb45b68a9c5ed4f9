package pgshared_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

// topicInbox collects the topic messages a node hears from the others.
func topicInbox(n *pgshared.Node) chan *persistence.Message {
	ch := make(chan *persistence.Message, 100)
	n.OnTopic(func(m *persistence.Message) { ch <- m })
	return ch
}

func receive(t *testing.T, ch chan *persistence.Message) *persistence.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no topic message within 5s")
		return nil
	}
}

func TestTopicMessagesReachTheOtherNodesOnly(t *testing.T) {
	_, nodes := openNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	inA, inB := topicInbox(a), topicInbox(b)
	ctx := context.Background()
	// At most once: a node hears what is published while it listens.
	require.Eventually(t, func() bool { return a.Listening() && b.Listening() }, 5*time.Second, 10*time.Millisecond)
	small := msg("topic://prices", 1, 4)
	big := msg("topic://prices", 2, 4)
	big.Body = bytes.Repeat([]byte("x"), 20000) // past NOTIFY's 8000 bytes: through SQ_TRANSIT
	q := msg("queue://orders", 3, 4)
	require.NoError(t, a.Send(ctx, []*persistence.Message{small, q, big}))
	require.NotZero(t, q.Seq)

	got := receive(t, inB)
	require.Equal(t, "topic://prices", got.Dest)
	require.Equal(t, small.ID, got.ID)
	require.Equal(t, small.Body, got.Body)
	got = receive(t, inB)
	require.Equal(t, big.ID, got.ID)
	require.Equal(t, big.Body, got.Body)
	// The sender's own are not handed back to it.
	require.NoError(t, b.Send(ctx, []*persistence.Message{msg("topic://prices", 4, 4)}))
	require.Equal(t, "ID:test-4", receive(t, inA).ID)
	select {
	case m := <-inA:
		t.Fatalf("node a heard %s again", m.ID)
	case m := <-inB:
		t.Fatalf("node b heard its own %s", m.ID)
	default:
	}
}

func TestDurableSubscriptionStoresAcrossNodes(t *testing.T) {
	_, nodes := openNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	sub := pgshared.Subscription{Container: pgshared.DurableContainer("c1:s1"), ClientID: "c1", Name: "s1", Topic: "topic://prices"}
	created, replaced, err := a.Subscribe(ctx, sub)
	require.NoError(t, err)
	require.True(t, created)
	require.False(t, replaced)
	// In use on a: b may not attach nor delete it.
	_, _, err = b.Subscribe(ctx, sub)
	require.ErrorIs(t, err, pgshared.ErrInUse)
	require.ErrorIs(t, b.Unsubscribe(ctx, sub.Container), pgshared.ErrInUse)

	send(t, b, "topic://prices", 0, 3)
	send(t, b, "topic://other", 10, 1)
	cs, err := a.Claim(ctx, sub.Container, 10)
	require.NoError(t, err)
	require.Len(t, cs, 3)
	for i, c := range cs {
		require.Equal(t, msg("", i, 4).ID, c.Message.ID)
	}
	lost, err := a.Ack(ctx, leases(cs))
	require.NoError(t, err)
	require.Empty(t, lost)

	// Detached, the messages wait; b attaches and gets them.
	require.NoError(t, a.Detach(ctx, sub.Container))
	send(t, a, "topic://prices", 20, 2)
	_, _, err = b.Subscribe(ctx, sub)
	require.NoError(t, err)
	list, err := b.Subscriptions(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "b", list[0].ActiveNode)
	require.EqualValues(t, 2, list[0].Pending)
	cs, err = b.Claim(ctx, sub.Container, 10)
	require.NoError(t, err)
	require.Len(t, cs, 2)

	// A new selector replaces it: its messages go.
	sub.Selector = "x = 1"
	_, replaced, err = b.Subscribe(ctx, sub)
	require.NoError(t, err)
	require.True(t, replaced)
	list, err = b.Subscriptions(ctx)
	require.NoError(t, err)
	require.Zero(t, list[0].Pending)

	require.NoError(t, b.Unsubscribe(ctx, sub.Container))
	require.ErrorIs(t, b.Unsubscribe(ctx, sub.Container), pgshared.ErrNotFound)
	send(t, a, "topic://prices", 30, 1)
	cs, err = b.Claim(ctx, sub.Container, 10)
	require.NoError(t, err)
	require.Empty(t, cs)
}

func TestDurableSelectorsAreMatchedAtPublish(t *testing.T) {
	dsn := newDB(t)
	o := testOptions(dsn, "a")
	o.MatchSelector = func(sel string, m *persistence.Message) bool {
		v, _ := m.Headers.Get("color")
		return sel == "color = '"+v+"'"
	}
	a := openNode(t, o)
	ctx := context.Background()
	red := pgshared.Subscription{Container: pgshared.DurableContainer("c:red"), ClientID: "c", Name: "red", Topic: "topic://t", Selector: "color = 'red'"}
	all := pgshared.Subscription{Container: pgshared.DurableContainer("c:all"), ClientID: "c", Name: "all", Topic: "topic://t"}
	for _, s := range []pgshared.Subscription{red, all} {
		_, _, err := a.Subscribe(ctx, s)
		require.NoError(t, err)
	}
	require.NoError(t, a.Send(ctx, []*persistence.Message{
		msg("topic://t", 1, 4, "color", "red"), msg("topic://t", 2, 4, "color", "blue")}))
	cs, err := a.Claim(ctx, red.Container, 10)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.Equal(t, "ID:test-1", cs[0].Message.ID)
	cs, err = a.Claim(ctx, all.Container, 10)
	require.NoError(t, err)
	require.Len(t, cs, 2)
}

func TestDeadNodesSubscriptionIsFree(t *testing.T) {
	dsn := newDB(t)
	a, err := pgshared.Open(context.Background(), testOptions(dsn, "a"))
	require.NoError(t, err)
	b := openNode(t, testOptions(dsn, "b"))
	sub := pgshared.Subscription{Container: pgshared.DurableContainer("c:s"), ClientID: "c", Name: "s", Topic: "topic://t"}
	_, _, err = a.Subscribe(context.Background(), sub)
	require.NoError(t, err)
	a.Crash() // no goodbye: its heartbeat stops
	require.Eventually(t, func() bool {
		_, _, err := b.Subscribe(context.Background(), sub)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	// A node that closes detaches at once.
	require.NoError(t, b.Close())
	c := openNode(t, testOptions(dsn, "c"))
	_, _, err = c.Subscribe(context.Background(), sub)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sub.Container, "durable://"))
}
