package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPullSubscription: a pull subscription is sent nothing until it is granted credit,
// one message per unit granted, and settling gives no credit back.
func TestPullSubscription(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	for i := range 3 {
		c.send("/queue/pull", fmt.Sprint("m", i), true)
	}
	var sub *Subscription
	c.do(func() {
		var err error
		sub, err = c.conn.Subscribe(context.Background(), SubscribeRequest{ID: "p", Dest: Destination{Kind: Queue, Name: "pull"},
			Mode: AckClientIndividual, Pull: true})
		require.NoError(t, err)
	})
	assertNothing := func() {
		t.Helper()
		c.do(func() {}) // the owner loop has taken and reported whatever was pushed
		select {
		case d := <-c.got:
			t.Fatalf("a pull subscription without credit was sent %s", d.Msg.Body)
		default:
		}
	}
	assertNothing()
	c.do(func() { sub.Grant(1) })
	d := c.recv()
	assert.Equal(t, "m0", string(d.Msg.Body))
	require.NoError(t, c.ack(d))
	assertNothing()
	c.do(func() { sub.Grant(2) })
	assert.Equal(t, []string{"m1", "m2"}, bodies(c.recvN(2)))
}

// TestClientNamedMessages: a connection whose client names its messages keeps the ids
// it sends; others get the broker's.
func TestClientNamedMessages(t *testing.T) {
	b := newBroker(t)
	own, err := b.Connect(context.Background(), ConnectInfo{MessageIDs: true})
	require.NoError(t, err)
	defer own.Close()
	plain, err := b.Connect(context.Background(), ConnectInfo{})
	require.NoError(t, err)
	defer plain.Close()
	q := []Destination{{Kind: Queue, Name: "ids"}}
	require.NoError(t, own.Send(context.Background(), q, &Message{ID: "ID:client-1:1:1:7", Body: []byte("a"), Priority: 4}, "", func(error) {}))
	require.NoError(t, plain.Send(context.Background(), q, &Message{ID: "ID:forged", Body: []byte("b"), Priority: 4}, "", func(error) {}))
	msgs, err := own.Browse(context.Background(), q[0], "", 0)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "ID:client-1:1:1:7", msgs[0].ID)
	assert.NotEqual(t, "ID:forged", msgs[1].ID)
}

// TestNamedTemporaryDestinations: a temporary queue created under its client's name is
// reached by that name from another connection, consumed only by its owner, refused for
// deletion while consumed, and gone once deleted.
func TestNamedTemporaryDestinations(t *testing.T) {
	b := newBroker(t)
	owner, other := newClient(t, b, ""), newClient(t, b, "")
	tq := Destination{Kind: TempQueue, Name: "ID:host-1-2-1:1:1"}
	remote := tq
	remote.Remote = true
	c := owner
	var err error
	c.do(func() { err = c.conn.CreateTemp(tq) })
	require.NoError(t, err)
	other.do(func() {
		_, err = other.conn.Subscribe(context.Background(), SubscribeRequest{ID: "x", Dest: remote})
	})
	assert.ErrorIs(t, err, ErrInvalidDestination, "only the owner consumes")
	owner.do(func() {
		_, err = owner.conn.Subscribe(context.Background(), SubscribeRequest{ID: "r", Dest: remote, Mode: AckAuto})
	})
	require.NoError(t, err)
	res := make(chan error, 1)
	other.do(func() {
		err = other.conn.Send(context.Background(), []Destination{remote}, &Message{Body: []byte("reply"), Priority: 4}, "", func(e error) { res <- e })
	})
	require.NoError(t, err)
	require.NoError(t, <-res)
	assert.Equal(t, "reply", string(owner.recv().Msg.Body))
	owner.do(func() { err = owner.conn.DeleteTemp(tq) })
	assert.ErrorIs(t, err, ErrDestinationInUse)
	owner.do(func() {
		require.NoError(t, owner.conn.Unsubscribe(context.Background(), UnsubscribeRequest{ID: "r"}))
		err = owner.conn.DeleteTemp(tq)
	})
	require.NoError(t, err)
	other.do(func() {
		err = other.conn.Send(context.Background(), []Destination{remote}, &Message{Body: []byte("late"), Priority: 4}, "", func(error) {})
	})
	assert.ErrorIs(t, err, ErrInvalidDestination, "deleted")
}

// TestResumedConnectionTakesClientID: a client that opens its own connection again
// (OpenWire's failover transport, same connection id) takes its client-id over from
// the connection the broker still holds; another connection with the client-id is
// refused as before.
func TestResumedConnectionTakesClientID(t *testing.T) {
	b := newBroker(t)
	old, err := b.Connect(context.Background(), ConnectInfo{ClientID: "app", Resumes: "ID:host-1-2-1:1"})
	require.NoError(t, err)
	_, err = b.Connect(context.Background(), ConnectInfo{ClientID: "app", Resumes: "ID:other-1"})
	require.ErrorIs(t, err, ErrClientIDInUse)
	closed := make(chan struct{})
	go func() {
		<-old.Kicked()
		old.Close() // what the old connection's transport does when kicked
		close(closed)
	}()
	again, err := b.Connect(context.Background(), ConnectInfo{ClientID: "app", Resumes: "ID:host-1-2-1:1"})
	require.NoError(t, err)
	defer again.Close()
	<-closed
}
