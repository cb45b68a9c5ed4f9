package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settleAs settles d in the form kind (cause for a poison ack) and returns the request's
// error or else the outcome's.
func (c *client) settleAs(d *Delivery, kind SettleKind, cause string) error {
	res := make(chan error, 1)
	var err error
	c.do(func() {
		err = c.conn.Settle(context.Background(), SettleRequest{Ref: AckRef{Tag: d.Tag, HasTag: true}, Kind: kind, Cause: cause},
			func(e error) { res <- e })
	})
	if err != nil {
		return err
	}
	return <-res
}

// sessionSubscribe subscribes id to a queue through session sid of c.
func (c *client) sessionSubscribe(sid, id, queue string, mode AckMode, prefetch int) {
	c.t.Helper()
	var err error
	c.do(func() {
		_, err = c.conn.Session(sid).Subscribe(context.Background(),
			SubscribeRequest{ID: id, Dest: Destination{Kind: Queue, Name: queue}, Mode: mode, Prefetch: prefetch})
	})
	require.NoError(c.t, err)
}

// TestSettleForms: the forms a transport settles in. Individual settles one delivery even
// on a client-mode subscription; cumulative settles every earlier one even on a
// client-individual one; standard follows the mode (STOMP's ACK).
func TestSettleForms(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.subscribe("cl", "/queue/cl", AckClient, 10)
	c.subscribe("ind", "/queue/ind", AckClientIndividual, 10)
	for i := range 4 {
		c.send("/queue/cl", fmt.Sprint("c", i), true)
	}
	cl := c.recvN(4)
	for i := range 4 {
		c.send("/queue/ind", fmt.Sprint("i", i), true)
	}
	ind := c.recvN(4)

	require.NoError(t, c.settleAs(cl[2], SettleIndividual, ""))
	assert.Equal(t, []string{"c0", "c1", "c3"}, c.unacked("cl"), "individual on a client-mode subscription")
	require.NoError(t, c.settleAs(cl[1], SettleStandard, ""))
	assert.Equal(t, []string{"c3"}, c.unacked("cl"), "standard on client mode is cumulative")

	require.NoError(t, c.settleAs(ind[2], SettleCumulative, ""))
	assert.Equal(t, []string{"i3"}, c.unacked("ind"), "cumulative on a client-individual subscription")
	require.NoError(t, c.settleAs(ind[3], SettleStandard, ""))
	assert.Empty(t, c.unacked("ind"))

	cs, _ := b.QueueStats("cl")
	is, _ := b.QueueStats("ind")
	assert.Equal(t, 1, cs.InFlight, "c3 awaits its acknowledgement")
	assert.Equal(t, 0, is.InFlight)
}

// TestSettlePoisonAndExpired: a poison ack dead-letters with the client's cause; an
// expired ack dead-letters with ActiveMQ's cause ("Message Expired. Expiration:<ms>")
// and counts as expired, whatever the NACK policy.
func TestSettlePoisonAndExpired(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/p", AckClientIndividual, 10)
	c.send("/queue/p", "poisoned", true)
	c.send("/queue/p", "stale", true)
	ds := c.recvN(2)
	require.NoError(t, c.settleAs(ds[0], SettlePoison, "java.lang.Throwable: listener threw"))
	require.NoError(t, c.settleAs(ds[1], SettleExpired, ""))

	dlq := newClient(t, b, "")
	dlq.subscribe("d", "/queue/ActiveMQ.DLQ", AckAuto, 10)
	got := dlq.recvN(2)
	causes := map[string]string{}
	for _, d := range got {
		v, _ := d.Msg.Headers.Get("dlqDeliveryFailureCause")
		causes[string(d.Msg.Body)] = v
	}
	assert.Equal(t, map[string]string{"poisoned": "java.lang.Throwable: listener threw",
		"stale": "java.lang.Throwable: Message Expired. Expiration:0"}, causes)
	st, _ := b.QueueStats("p")
	assert.Equal(t, 0, st.InFlight+st.Pending)
	assert.Equal(t, int64(1), st.Expired, "the expired ack counts as an expiry")
}

// TestSessionRecover: a session's recover gives back, redelivered and in order, what its
// consumers hold unsettled, and nothing of another session's; a transport's later
// deliveries carry the raised count.
func TestSessionRecover(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.sessionSubscribe("s1", "a", "rec", AckClientIndividual, 10)
	c.sessionSubscribe("s2", "b", "other", AckClientIndividual, 10)
	for i := range 3 {
		c.send("/queue/rec", fmt.Sprint("r", i), true)
	}
	c.send("/queue/other", "kept", true)
	first := c.recvN(4)
	var rec []*Delivery
	for _, d := range first {
		if d.Sub.ID == "a" {
			rec = append(rec, d)
		}
	}
	require.Len(t, rec, 3)
	require.NoError(t, c.settleAs(rec[0], SettleIndividual, ""))

	var n int
	c.do(func() { n = c.conn.Session("s1").Recover() })
	assert.Equal(t, 2, n)
	again := c.recvN(2)
	assert.Equal(t, []string{"r1", "r2"}, bodies(again))
	for _, d := range again {
		assert.True(t, d.Redelivered)
		assert.Equal(t, uint32(2), d.DeliveryCount)
	}
	assert.Equal(t, []string{"kept"}, c.unacked("b"), "another session's delivery is not recovered")
}

// TestSessionClose: closing a session removes its subscriptions (what they held goes
// back to the queue) and leaves the connection's others.
func TestSessionClose(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.sessionSubscribe("s1", "a", "closing", AckClientIndividual, 10)
	c.sessionSubscribe("s2", "b", "closing", AckClientIndividual, 10)
	c.send("/queue/closing", "m", true)
	d := c.recv()
	owner := d.Sub.ID
	c.do(func() { c.conn.Session(map[string]string{"a": "s1", "b": "s2"}[owner]).Close() })
	other := map[string]string{"a": "b", "b": "a"}[owner]
	back := c.recv()
	assert.Equal(t, other, back.Sub.ID, "the closed session's message goes to the other session's consumer")
	assert.True(t, back.Redelivered)
	c.do(func() {
		_, open := c.conn.subs[owner]
		assert.False(t, open, "the closed session's subscription is gone")
		assert.Len(t, c.conn.sessions, 1)
	})
}

// TestSurfaceParsesSelectorsAndDestinations: the selector and the destination reach the
// broker as text, and a bad one is a typed error the client can be told.
func TestSurfaceParsesSelectorsAndDestinations(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	var err error
	c.do(func() {
		_, err = c.conn.Subscribe(context.Background(), SubscribeRequest{ID: "x", Dest: Destination{Kind: Queue, Name: "q"}, Selector: "color = "})
	})
	var be *Error
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, ErrInvalidSelector)
	assert.Contains(t, be.Message, "invalid selector")
	assert.False(t, be.Fatal)

	_, err = ParseDestinations("/queue/a,/topic/")
	assert.ErrorIs(t, err, ErrInvalidDestination)
	ds, err := ParseDestinations("/queue/a,/topic/b,queue://c")
	require.NoError(t, err)
	assert.Equal(t, []Destination{{Kind: Queue, Name: "a"}, {Kind: Topic, Name: "b"}, {Kind: Queue, Name: "c"}}, ds)
}
