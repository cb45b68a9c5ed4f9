package broker

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

func topicName(n string) destinations.Name {
	return destinations.Name{Kind: destinations.Topic, Name: n}
}

func (c *client) unsubscribe(id, durable string) error {
	var err error
	c.do(func() {
		err = c.conn.Unsubscribe(context.Background(), UnsubscribeRequest{ID: id, DurableName: durable})
	})
	return err
}

// TestDurableOneStoredCopy: two offline durable subscriptions keep the topic's messages
// as one stored copy each message; each gets them all in order on return, then live
// ones; the copy is deleted once both acknowledged.
func TestDurableOneStoredCopy(t *testing.T) {
	st := memstore.New()
	b, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	defer b.Close()
	for _, id := range []string{"app1", "app2"} {
		c := newClient(t, b, id)
		c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("orders"), DurableName: "sub", Mode: AckClientIndividual})
		c.close()
	}
	p := newClient(t, b, "")
	for i := 0; i < 50; i++ {
		p.send("/topic/orders", strconv.Itoa(i), true)
	}
	p.send("/topic/orders", "not kept", false)
	n, _ := st.Stats("topic://orders")
	assert.EqualValues(t, 50, n, "one stored copy per message")
	stats := b.DurableSubscriptions()
	require.Len(t, stats, 2)
	assert.False(t, stats[0].Active)
	assert.Equal(t, 50, stats[0].Backlog)

	for _, id := range []string{"app1", "app2"} {
		c := newClient(t, b, id)
		c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("orders"), DurableName: "sub", Mode: AckClientIndividual})
		for i := 0; i < 50; i++ {
			d := c.recv()
			require.Equal(t, strconv.Itoa(i), string(d.Msg.Body))
			require.NoError(t, c.ack(d))
		}
		p.send("/topic/orders", "live", true)
		d := c.recv()
		assert.Equal(t, "live", string(d.Msg.Body))
		require.NoError(t, c.ack(d))
		c.close()
	}
	eventually(t, func() bool { n, _ := st.Stats("topic://orders"); return n == 1 }) // "live" #2 is owed by app1
}

func TestDurableSelectorAndRedeliveryAndRemoval(t *testing.T) {
	b := newBroker(t)
	sel := "kind = 'a'"
	c := newClient(t, b, "cid")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("t"), DurableName: "n", Selector: sel, Mode: AckClientIndividual})
	c.close()
	p := newClient(t, b, "")
	p.sendMsg("/topic/t", &persistence.Message{Body: []byte("a1"), Persistent: true, Priority: 4, Headers: persistence.Headers{"kind", "a"}})
	p.sendMsg("/topic/t", &persistence.Message{Body: []byte("b1"), Persistent: true, Priority: 4, Headers: persistence.Headers{"kind", "b"}})
	n, _ := b.store.Stats("topic://t")
	assert.EqualValues(t, 1, n, "no copy kept for a subscription whose selector does not match")

	c = newClient(t, b, "cid")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("t"), DurableName: "n", Selector: sel, Mode: AckClientIndividual})
	d := c.recv()
	assert.Equal(t, "a1", string(d.Msg.Body))
	c.close() // unacknowledged: redelivered on return
	c = newClient(t, b, "cid")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("t"), DurableName: "n", Selector: sel, Mode: AckClientIndividual})
	d = c.recv()
	assert.Equal(t, "a1", string(d.Msg.Body))
	assert.True(t, d.Redelivered)

	// Deleting while attached is refused, also on the owning connection (ActiveMQ's
	// rule): it detaches first, then deletes.
	err := c.unsubscribe("s", "n")
	require.ErrorIs(t, err, ErrDurableInUse)
	assert.Equal(t, "Durable consumer is in use", err.Error())
	require.Len(t, b.DurableSubscriptions(), 1)
	require.NoError(t, c.unsubscribe("s", ""))
	require.NoError(t, c.unsubscribe("s", "n"))
	assert.Empty(t, b.DurableSubscriptions())
	eventually(t, func() bool { n, _ := b.store.Stats("topic://t"); return n == 0 })
}

func TestDurableSurvivesRestartOnStore(t *testing.T) {
	st := memstore.New()
	b, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	c := newClient(t, b, "cid")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("t"), DurableName: "n", Mode: AckClientIndividual})
	c.close()
	p := newClient(t, b, "")
	for i := 0; i < 5; i++ {
		p.send("/topic/t", strconv.Itoa(i), true)
	}
	p.close()
	require.NoError(t, b.closeForTest())

	b2, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	defer b2.Close()
	require.Len(t, b2.DurableSubscriptions(), 1)
	p2 := newClient(t, b2, "")
	p2.send("/topic/t", "5", true)
	c2 := newClient(t, b2, "cid")
	c2.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("t"), DurableName: "n", Mode: AckClientIndividual})
	for i := 0; i < 6; i++ {
		d := c2.recv()
		require.Equal(t, strconv.Itoa(i), string(d.Msg.Body))
		require.NoError(t, c2.ack(d))
	}
}

// TestDurableLegacyDispatchMarkers: a store written before durable subscriptions had
// markers of their own (subMarkerPrefix) holds them as "meta://dispatched/durable:" +
// client-id + ":" + name, one shared by (a:b, c) and (a, b:c). At recovery such a marker
// gives its mark to every subscription it may be the marker of, each then gets its own
// marker, and the legacy one is deleted, unless a queue whose name starts with
// "durable:" may own it. A second restart reads the new markers only.
func TestDurableLegacyDispatchMarkers(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	x := persistence.SubKey{ClientID: "a:b", Name: "c"}
	y := persistence.SubKey{ClientID: "a", Name: "b:c"}
	solo := persistence.SubKey{ClientID: "solo", Name: "s"}
	batch := st.Begin()
	for _, k := range []persistence.SubKey{x, y, solo} {
		batch.AddSub(persistence.SubInfo{Key: k, Dest: "topic://t", Created: 1})
	}
	for seq := uint64(1); seq <= 5; seq++ {
		batch.Add(&persistence.Message{Dest: "topic://t", Seq: seq, ID: "m" + strconv.Itoa(int(seq)), Persistent: true, Priority: 4,
			Subs: []persistence.SubKey{x, y, solo}})
	}
	for seq := uint64(1); seq <= 2; seq++ {
		batch.Add(&persistence.Message{Dest: "queue://durable:q", Seq: seq, ID: "q" + strconv.Itoa(int(seq)), Persistent: true, Priority: 4})
	}
	batch.Add(destinations.MarkerMessage("meta://dispatched/durable:a:b:c", 4))
	batch.Add(destinations.MarkerMessage("meta://dispatched/durable:solo:s", 3))
	batch.Add(destinations.MarkerMessage("meta://dispatched/durable:q", 2))
	require.NoError(t, batch.Commit(ctx, persistence.Sync))

	hwms := func(b *Broker) map[string]uint64 {
		out := map[string]uint64{}
		for _, d := range b.durables.All() {
			out[d.Key().String()] = d.View().DispatchHWM()
		}
		out["queue durable:q"] = b.dests.FindQueue("durable:q").DispatchHWM()
		return out
	}
	markers := func() map[string]uint64 {
		rec, err := st.Recover(ctx)
		require.NoError(t, err)
		out := map[string]uint64{}
		for _, d := range rec.Destinations {
			if (strings.HasPrefix(d.Name, destinations.MarkerPrefix) || strings.HasPrefix(d.Name, destinations.SubMarkerPrefix)) && d.Msgs > 0 {
				hwm, err := durable.ReadMarker(ctx, st, d.Name)
				require.NoError(t, err)
				out[d.Name] = hwm
			}
		}
		return out
	}
	want := map[string]uint64{`a\cb:c`: 4, "a:b:c": 4, "solo:s": 3, "queue durable:q": 2}

	b, err := New(ctx, Options{Name: "t", Store: st})
	require.NoError(t, err)
	assert.Equal(t, want, hwms(b))
	assert.Equal(t, map[string]uint64{
		`meta://dispatched-sub/a\cb:c`: 4,
		"meta://dispatched-sub/a:b:c":  4,
		"meta://dispatched-sub/solo:s": 3,
		"meta://dispatched/durable:q":  2, // the queue's own, kept
	}, markers(), "legacy markers rewritten, and deleted unless a queue may own them")
	require.NoError(t, b.closeForTest())

	b, err = New(ctx, Options{Name: "t", Store: st})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, want, hwms(b))
}
