package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// fill sends n persistent messages "<prefix><i>" to the queue, each with the header
// n=<i> and color red (even) or blue (odd).
func fill(c *client, queue, prefix string, n int) {
	for i := 0; i < n; i++ {
		color := "red"
		if i%2 == 1 {
			color = "blue"
		}
		m := hdrMsg(prefix+strconv.Itoa(i), "n", strconv.Itoa(i), "color", color)
		m.Persistent = true
		c.sendMsg("/queue/"+queue, m)
	}
}

func queueStats(t *testing.T, b *Broker, name string) DestinationStats {
	t.Helper()
	st, ok := b.QueueStats(name)
	require.True(t, ok, "queue %s", name)
	return st
}

// storedOf counts the store's messages of a queue.
func storedOf(b *Broker, name string) int64 {
	n, _ := b.store.Stats(persistence.QueueName(name))
	return n
}

// TestPurgeKeepsDispatched: a purge removes every waiting message, in memory and paged
// out to the store, but not those a consumer holds unacknowledged, which it may still
// acknowledge; the queue works on afterwards.
func TestPurgeKeepsDispatched(t *testing.T) {
	b := newSmallBroker(t, 16<<10, 1<<30) // ~100 messages in memory, the rest paged
	p := newClient(t, b, "")
	fill(p, "work", "m", 400)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/work", AckClientIndividual, 5)
	held := make([]*Delivery, 5)
	for i := range held {
		held[i] = c.recv()
	}
	eventually(t, func() bool { return queueStats(t, b, "work").Dispatched == 5 })
	st := queueStats(t, b, "work")
	assert.Equal(t, 395, st.Pending)
	assert.NotZero(t, st.OldestTimestamp)

	n, err := b.Management().PurgeQueue(context.Background(), "tester", "work")
	require.NoError(t, err)
	assert.Equal(t, 395, n)
	st = queueStats(t, b, "work")
	assert.Zero(t, st.Pending)
	assert.EqualValues(t, 5, st.Dispatched)
	assert.EqualValues(t, 5, storedOf(b, "work"), "the dispatched messages stay in the store")
	for _, d := range held {
		require.NoError(t, c.ack(d))
	}
	assert.Zero(t, storedOf(b, "work"))
	c.expectNone(50 * time.Millisecond)
	p.send("/queue/work", "after", true)
	assert.Equal(t, "after", string(c.recv().Msg.Body))
	assert.EqualValues(t, 1, b.Management().Stats().Operations["purge"])
	assert.EqualValues(t, 395, b.Management().Stats().Messages["purge"])

	_, err = b.Management().PurgeQueue(context.Background(), "tester", "nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestMoveWithSelectorAndLimit moves the messages a selector picks, up to a limit, in
// chunks; a moved message keeps its id, a copied one gets a new one and the original
// stays.
func TestMoveWithSelectorAndLimit(t *testing.T) {
	b := newSmallBroker(t, 16<<10, 1<<30)
	p := newClient(t, b, "")
	fill(p, "src", "m", 2500) // more than one chunk, most of it paged out
	ctx := context.Background()
	first, _, err := b.Management().BrowseQueue(ctx, "src", "", 2)
	require.NoError(t, err)

	res, err := b.Management().MoveMessages(ctx, "tester", "src", management.MoveRequest{To: q("red"), Selector: "color = 'red'"})
	require.NoError(t, err)
	assert.Equal(t, 1250, res.Moved)
	assert.Equal(t, 1250, queueStats(t, b, "src").Pending)
	assert.Equal(t, 1250, queueStats(t, b, "red").Pending)
	assert.EqualValues(t, 1250, storedOf(b, "src"))
	assert.EqualValues(t, 1250, storedOf(b, "red"))

	res, err = b.Management().MoveMessages(ctx, "tester", "src", management.MoveRequest{To: q("some"), Limit: 30})
	require.NoError(t, err)
	assert.Equal(t, 30, res.Moved)
	assert.Equal(t, 1220, queueStats(t, b, "src").Pending)

	res, err = b.Management().MoveMessages(ctx, "tester", "red", management.MoveRequest{To: q("copies"), Copy: true})
	require.NoError(t, err)
	assert.Equal(t, 1250, res.Moved)
	assert.Equal(t, 1250, queueStats(t, b, "red").Pending, "a copy leaves the messages")
	assert.Equal(t, 1250, queueStats(t, b, "copies").Pending)

	// In order, ids kept by the move, new ids for the copies.
	c := newClient(t, b, "")
	c.subscribe("r", "/queue/red", AckAuto, 100)
	d := c.recv()
	assert.Equal(t, "m0", string(d.Msg.Body))
	assert.Equal(t, first[0].ID, d.Msg.ID, "a moved message keeps its id")
	for i := 1; i < 1250; i++ {
		assert.Equal(t, "m"+strconv.Itoa(2*i), string(c.recv().Msg.Body))
	}
	c.subscribe("c", "/queue/copies", AckAuto, 100)
	d = c.recv()
	assert.Equal(t, "m0", string(d.Msg.Body))
	assert.NotEqual(t, first[0].ID, d.Msg.ID, "a copy has an id of its own")

	_, err = b.Management().MoveMessages(ctx, "tester", "src", management.MoveRequest{To: q("src")})
	assert.ErrorIs(t, err, ErrInvalidDestination)
	_, err = b.Management().MoveMessages(ctx, "tester", "src", management.MoveRequest{To: q("x"), Selector: "color = "})
	assert.ErrorIs(t, err, ErrInvalidSelector)
	ops := b.Management().Stats()
	assert.EqualValues(t, 2, ops.Operations["move"])
	assert.EqualValues(t, 1, ops.Operations["copy"])
}

// TestMoveToOriginal retries a dead-letter queue: each message goes back to the
// destination its original-destination header names, without the dead-letter headers;
// messages without one stay.
func TestMoveToOriginal(t *testing.T) {
	b := newBroker(t)
	p := newClient(t, b, "")
	for i := 0; i < 6; i++ {
		orig := "/queue/a"
		if i%2 == 1 {
			orig = "/queue/b"
		}
		m := hdrMsg("d"+strconv.Itoa(i), "original-destination", orig, "dlqDeliveryFailureCause", "poison ack", "k", "v")
		m.Persistent = true
		p.sendMsg("/queue/"+DLQName, m)
	}
	p.send("/queue/"+DLQName, "no header", true)
	res, err := b.Management().MoveMessages(context.Background(), "tester", DLQName, management.MoveRequest{Original: true})
	require.NoError(t, err)
	assert.Equal(t, management.MoveResult{Moved: 6}, res)
	assert.Equal(t, 1, queueStats(t, b, DLQName).Pending)
	c := newClient(t, b, "")
	c.subscribe("a", "/queue/a", AckAuto, 10)
	for i := 0; i < 3; i++ {
		d := c.recv()
		assert.Equal(t, "d"+strconv.Itoa(2*i), string(d.Msg.Body))
		_, has := d.Msg.Headers.Get("original-destination")
		assert.False(t, has)
		_, has = d.Msg.Headers.Get("dlqDeliveryFailureCause")
		assert.False(t, has)
		v, _ := d.Msg.Headers.Get("k")
		assert.Equal(t, "v", v)
	}
	assert.Equal(t, 3, queueStats(t, b, "b").Pending)
	var dlq management.ManagedDestination
	for _, d := range b.Management().ManagedDestinations() {
		if d.Name == "/queue/"+DLQName {
			dlq = d
		}
	}
	assert.True(t, dlq.DLQ)
}

// TestBrowsePagesAndDelete pages through a queue held partly in memory and partly in
// the store, reads and deletes single messages.
func TestBrowsePagesAndDelete(t *testing.T) {
	b := newSmallBroker(t, 16<<10, 1<<30)
	p := newClient(t, b, "")
	fill(p, "pages", "m", 300)
	ctx := context.Background()
	var all []string
	after := ""
	for {
		page, next, err := b.Management().BrowseQueue(ctx, "pages", after, 70)
		require.NoError(t, err)
		for _, m := range page {
			all = append(all, string(m.Body))
		}
		if next == "" {
			break
		}
		after = next
	}
	require.Len(t, all, 300)
	for i, body := range all {
		require.Equal(t, "m"+strconv.Itoa(i), body)
	}
	page, _, err := b.Management().BrowseQueue(ctx, "pages", "", 300)
	require.NoError(t, err)
	deep := page[250] // in the store only
	m, err := b.Management().QueueMessage(ctx, "pages", deep.ID)
	require.NoError(t, err)
	assert.Equal(t, "m250", string(m.Body))
	require.NoError(t, b.Management().DeleteMessage(ctx, "tester", "pages", deep.ID))
	require.NoError(t, b.Management().DeleteMessage(ctx, "tester", "pages", page[3].ID))
	assert.ErrorIs(t, b.Management().DeleteMessage(ctx, "tester", "pages", deep.ID), ErrNotFound)
	_, err = b.Management().QueueMessage(ctx, "pages", deep.ID)
	assert.ErrorIs(t, err, ErrNotFound)
	_, _, err = b.Management().BrowseQueue(ctx, "pages", deep.ID, 10)
	assert.ErrorIs(t, err, ErrNoCursor)
	assert.Equal(t, 298, queueStats(t, b, "pages").Pending)
	assert.EqualValues(t, 298, storedOf(b, "pages"))

	c := newClient(t, b, "")
	c.subscribe("s", "/queue/pages", AckAuto, 50)
	for i := 0; i < 300; i++ {
		if i == 3 || i == 250 {
			continue
		}
		require.Equal(t, "m"+strconv.Itoa(i), string(c.recv().Msg.Body))
	}
	c.expectNone(50 * time.Millisecond)
}

// TestRemoveDestination: a queue with a consumer is not removed; without, it goes with
// its messages, and a queue of the same name used afterwards is a new one whose
// messages the removal leaves alone.
func TestRemoveDestination(t *testing.T) {
	b := newSmallBroker(t, 16<<10, 1<<30)
	p := newClient(t, b, "")
	fill(p, "gone", "m", 200)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/gone", AckClientIndividual, 1)
	c.recv()
	ctx := context.Background()
	err := b.Management().RemoveDestination(ctx, "tester", q("gone"))
	assert.ErrorIs(t, err, ErrDestinationInUse)
	c.close()
	require.NoError(t, b.Management().RemoveDestination(ctx, "tester", q("gone")))
	_, ok := b.QueueStats("gone")
	assert.False(t, ok)
	assert.Zero(t, storedOf(b, "gone"))
	assert.ErrorIs(t, b.Management().RemoveDestination(ctx, "tester", q("gone")), ErrNotFound)

	p.send("/queue/gone", "new", true)
	assert.EqualValues(t, 1, storedOf(b, "gone"))
	c2 := newClient(t, b, "")
	c2.subscribe("s", "/queue/gone", AckAuto, 10)
	assert.Equal(t, "new", string(c2.recv().Msg.Body))

	topic := destinations.Name{Kind: destinations.Topic, Name: "t"}
	c2.subscribe("t", "/topic/t", AckAuto, 10)
	assert.ErrorIs(t, b.Management().RemoveDestination(ctx, "tester", topic), ErrDestinationInUse)
	c2.close()
	require.NoError(t, b.Management().RemoveDestination(ctx, "tester", topic))
}

// TestConnectionsAndClose lists client connections with what operators see, and closes
// one: its transport is told why.
func TestConnectionsAndClose(t *testing.T) {
	b := newBroker(t)
	conn, err := b.Connect(context.Background(), ConnectInfo{ClientID: "app", RemoteAddr: "10.0.0.1:5000", Connector: "stomp", Version: "1.2"})
	require.NoError(t, err)
	var list []management.ConnectionInfo
	for _, ci := range b.Management().Connections() {
		if ci.ID == conn.ID {
			list = append(list, ci)
		}
	}
	require.Len(t, list, 1)
	assert.Equal(t, "app", list[0].ClientID)
	assert.Equal(t, "stomp", list[0].Connector)
	assert.Equal(t, "1.2", list[0].Version)
	assert.Equal(t, "10.0.0.1:5000", list[0].RemoteAddr)
	go func() { <-conn.Kicked(); conn.Close() }()
	require.NoError(t, b.Management().CloseConnection(context.Background(), "tester", conn.ID, "maintenance"))
	assert.Equal(t, "maintenance", conn.KickReason())
	assert.Empty(t, b.Management().Connections())
	assert.ErrorIs(t, b.Management().CloseConnection(context.Background(), "tester", "nope", ""), ErrNotFound)
}

// TestSendAsAndTotals: a message sent by the admin listener reaches consumers and counts
// among the messages received; the broker's own connection is never listed.
func TestSendAsAndTotals(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/in", AckAuto, 10)
	id, err := b.Management().SendAs(context.Background(), nil, "tester", q("in"), hdrMsg("hello", "k", "v"))
	require.NoError(t, err)
	d := c.recv()
	assert.Equal(t, id, d.Msg.ID)
	assert.Equal(t, "hello", string(d.Msg.Body))
	eventually(t, func() bool { r, dl := b.Management().MessageTotals(); return r == 1 && dl == 1 })
	assert.Len(t, b.Management().Connections(), 1)
}
