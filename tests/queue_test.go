package tests

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recv reads one message from sub within 10 s.
func recv(t testing.TB, sub *stomp.Subscription) *stomp.Message {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		require.True(t, ok, "subscription closed")
		require.NoError(t, m.Err)
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	return nil
}

// expectNone requires that sub receives nothing for d. It is only used after a RECEIPT
// proved that the broker processed everything that could have produced a message.
func expectNone(t testing.TB, sub *stomp.Subscription, d time.Duration) {
	t.Helper()
	select {
	case m := <-sub.C:
		t.Fatalf("unexpected message: %v %q", m.Header, m.Body)
	case <-time.After(d):
	}
}

func TestQueueFIFOAndHeaders(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	prod := dial(t, b.Addr)
	cons := dial(t, b.Addr)
	sub, err := cons.Subscribe("/queue/orders", stomp.AckAuto)
	require.NoError(t, err)

	body := []byte("a\x00b") // a NUL in the body needs content-length
	for i := 0; i < 100; i++ {
		require.NoError(t, prod.Send("/queue/orders", "application/octet-stream", append(body, byte(i)),
			stomp.SendOpt.Header("seq", strconv.Itoa(i)),
			stomp.SendOpt.Header("custom-header", "value:with colon"),
			stomp.SendOpt.Header("seq", "ignored, the first occurrence wins"),
			stomp.SendOpt.Receipt))
	}
	ids := map[string]bool{}
	for i := 0; i < 100; i++ {
		m := recv(t, sub)
		assert.Equal(t, strconv.Itoa(i), m.Header.Get("seq"))
		assert.Equal(t, "value:with colon", m.Header.Get("custom-header"))
		assert.Equal(t, "application/octet-stream", m.ContentType)
		assert.Equal(t, "/queue/orders", m.Destination)
		assert.Equal(t, append(body, byte(i)), m.Body)
		assert.Equal(t, strconv.Itoa(len(body)+1), m.Header.Get("content-length"))
		id := m.Header.Get("message-id")
		assert.NotEmpty(t, id)
		assert.False(t, ids[id], "duplicate message-id %s", id)
		ids[id] = true
	}
}

func TestQueueEachMessageToOneConsumerRoundRobin(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	const n = 300
	c1, c2 := dial(t, b.Addr), dial(t, b.Addr)
	s1, err := c1.Subscribe("/queue/rr", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "10"))
	require.NoError(t, err)
	s2, err := c2.Subscribe("/queue/rr", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "10"))
	require.NoError(t, err)
	prod := dial(t, b.Addr)
	// A receipt on an unrelated frame after both SUBSCRIBEs proves they are registered.
	require.NoError(t, prod.Send("/queue/rr-sync", "", nil, stomp.SendOpt.Receipt))
	syncSubscriptions(t, c1, c2)
	for i := 0; i < n; i++ {
		require.NoError(t, prod.Send("/queue/rr", "", []byte(strconv.Itoa(i))))
	}
	// Before any ACK, round-robin fills both prefetch windows: exactly 10 each.
	seen := map[string]int{}
	var held []*stomp.Message
	counts := map[*stomp.Subscription]int{}
	recv := func() (*stomp.Message, *stomp.Subscription) {
		select {
		case m := <-s1.C:
			return m, s1
		case m := <-s2.C:
			return m, s2
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d messages arrived", len(seen), n)
		}
		return nil, nil
	}
	for len(held) < 20 {
		m, from := recv()
		require.NoError(t, m.Err)
		seen[string(m.Body)]++
		counts[from]++
		held = append(held, m)
	}
	assert.Equal(t, 10, counts[s1], "consumer 1's prefetch window")
	assert.Equal(t, 10, counts[s2], "consumer 2's prefetch window")
	for _, m := range held {
		require.NoError(t, m.Conn.Ack(m))
	}
	for len(seen) < n {
		m, from := recv()
		require.NoError(t, m.Err)
		seen[string(m.Body)]++
		counts[from]++
		require.NoError(t, m.Conn.Ack(m))
	}
	for k, v := range seen {
		require.Equal(t, 1, v, "message %s delivered %d times", k, v)
	}
	// Afterwards each consumer gets what its acknowledgements make room for; both keep
	// getting messages.
	assert.Greater(t, counts[s1], 10, "consumer 1 got %d of %d", counts[s1], n)
	assert.Greater(t, counts[s2], 10, "consumer 2 got %d of %d", counts[s2], n)
}

// syncSubscriptions makes sure every SUBSCRIBE sent on these connections was processed:
// a frame with a receipt is answered only after everything before it on its connection.
func syncSubscriptions(t testing.TB, conns ...*stomp.Conn) {
	t.Helper()
	for _, c := range conns {
		require.NoError(t, c.Send("/queue/sync-"+strconv.FormatInt(time.Now().UnixNano(), 10), "", nil, stomp.SendOpt.Receipt))
	}
}

func TestUnackedMessagesAreRedeliveredToAnotherConsumer(t *testing.T) {
	for _, mode := range []stomp.AckMode{stomp.AckClient, stomp.AckClientIndividual} {
		t.Run(mode.String(), func(t *testing.T) {
			b := startBroker(t, brokerConfig{})
			prod := dial(t, b.Addr)
			for i := 0; i < 5; i++ {
				require.NoError(t, prod.Send("/queue/work", "", []byte(strconv.Itoa(i)), stomp.SendOpt.Receipt,
					stomp.SendOpt.Header("persistent", "true")))
			}
			first, err := stomp.Dial("tcp", b.Addr, stomp.ConnOpt.Logger(quietLogger{}))
			require.NoError(t, err)
			sub, err := first.Subscribe("/queue/work", mode)
			require.NoError(t, err)
			var got []*stomp.Message
			for i := 0; i < 5; i++ {
				got = append(got, recv(t, sub))
			}
			assert.Empty(t, got[0].Header.Get("redelivered"))
			// Acknowledge only message 1: in client mode that also covers message 0.
			require.NoError(t, first.Ack(got[1]))
			require.NoError(t, first.Disconnect())

			second := dial(t, b.Addr)
			sub2, err := second.Subscribe("/queue/work", stomp.AckAuto)
			require.NoError(t, err)
			want := []string{"2", "3", "4"}
			if mode == stomp.AckClientIndividual {
				want = []string{"0", "2", "3", "4"}
			}
			for _, w := range want {
				m := recv(t, sub2)
				assert.Equal(t, w, string(m.Body))
				assert.Equal(t, "true", m.Header.Get("redelivered"))
			}
			syncSubscriptions(t, second)
			expectNone(t, sub2, 200*time.Millisecond)
		})
	}
}

func TestAckReceiptMeansNeverSeenAgain(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	prod := dial(t, b.Addr)
	require.NoError(t, prod.Send("/queue/once", "", []byte("x"), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")))
	c := dial(t, b.Addr)
	sub, err := c.Subscribe("/queue/once", stomp.AckClientIndividual)
	require.NoError(t, err)
	m := recv(t, sub)
	require.NoError(t, c.Ack(m))
	unsubscribe(t, sub)
	sub2, err := c.Subscribe("/queue/once", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, c)
	expectNone(t, sub2, 200*time.Millisecond)
}

func TestNackSendsPersistentMessageToDLQ(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	prod := dial(t, b.Addr)
	require.NoError(t, prod.Send("/queue/poison", "text/plain", []byte("bad"), stomp.SendOpt.Receipt,
		stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("app", "1")))
	c := dial(t, b.Addr)
	sub, err := c.Subscribe("/queue/poison", stomp.AckClientIndividual)
	require.NoError(t, err)
	m := recv(t, sub)
	require.NoError(t, c.Nack(m))

	dlq, err := c.Subscribe("/queue/ActiveMQ.DLQ", stomp.AckAuto)
	require.NoError(t, err)
	d := recv(t, dlq)
	assert.Equal(t, "bad", string(d.Body))
	assert.Equal(t, "/queue/poison", d.Header.Get("original-destination"))
	assert.Equal(t, m.Header.Get("message-id"), d.Header.Get("message-id"))
	assert.Equal(t, "1", d.Header.Get("app"))
	syncSubscriptions(t, c)
	expectNone(t, sub, 100*time.Millisecond)
}

func TestTopicFanOutAndNothingKeptForAbsentSubscribers(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	var subs []*stomp.Subscription
	var conns []*stomp.Conn
	for i := 0; i < 3; i++ {
		c := dial(t, b.Addr)
		s, err := c.Subscribe("/topic/prices", stomp.AckAuto)
		require.NoError(t, err)
		subs, conns = append(subs, s), append(conns, c)
	}
	wild := dial(t, b.Addr)
	ws, err := wild.Subscribe("/topic/prices.>", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, append(conns, wild)...)
	prod := dial(t, b.Addr)
	for i := 0; i < 50; i++ {
		require.NoError(t, prod.Send("/topic/prices", "", []byte(strconv.Itoa(i))))
	}
	require.NoError(t, prod.Send("/topic/prices.ibm", "", []byte("ibm"), stomp.SendOpt.Receipt))
	for _, s := range subs {
		for i := 0; i < 50; i++ {
			assert.Equal(t, strconv.Itoa(i), string(recv(t, s).Body))
		}
	}
	m := recv(t, ws)
	assert.Equal(t, "ibm", string(m.Body))
	assert.Equal(t, "/topic/prices.ibm", m.Destination)

	late := dial(t, b.Addr)
	ls, err := late.Subscribe("/topic/prices", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, late)
	expectNone(t, ls, 100*time.Millisecond)
}

func TestCompositeDestination(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := dial(t, b.Addr)
	ts, err := c.Subscribe("/topic/audit", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, c)
	require.NoError(t, c.Send("/queue/a,/topic/audit", "", []byte("both"), stomp.SendOpt.Receipt))
	qs, err := c.Subscribe("/queue/a", stomp.AckAuto)
	require.NoError(t, err)
	assert.Equal(t, "both", string(recv(t, qs).Body))
	assert.Equal(t, "both", string(recv(t, ts).Body))
}

func TestTransactions(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	prod := dial(t, b.Addr)
	cons := dial(t, b.Addr)
	sub, err := cons.Subscribe("/queue/tx", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "1"))
	require.NoError(t, err)
	syncSubscriptions(t, cons)

	tx := prod.Begin()
	for i := 0; i < 3; i++ {
		require.NoError(t, tx.Send("/queue/tx", "", []byte(fmt.Sprint("c", i)), stomp.SendOpt.Header("persistent", "true")))
	}
	syncSubscriptions(t, prod)
	expectNone(t, sub, 100*time.Millisecond) // not visible before COMMIT

	aborted := prod.Begin()
	require.NoError(t, aborted.Send("/queue/tx", "", []byte("aborted")))
	require.NoError(t, aborted.AbortWithReceipt())
	require.NoError(t, tx.CommitWithReceipt())

	// Consume in a transaction with prefetch 1: the transactional ACK opens the window.
	ctx := cons.Begin()
	m0 := recv(t, sub)
	assert.Equal(t, "c0", string(m0.Body))
	require.NoError(t, ctx.Ack(m0))
	m1 := recv(t, sub)
	assert.Equal(t, "c1", string(m1.Body))
	require.NoError(t, ctx.Ack(m1))
	// ABORT un-acks: as in ActiveMQ the messages stay with this client and may be acked again.
	require.NoError(t, ctx.AbortWithReceipt())
	require.NoError(t, cons.Ack(m0))
	require.NoError(t, cons.Ack(m1))
	m2 := recv(t, sub)
	assert.Equal(t, "c2", string(m2.Body))
	require.NoError(t, cons.Ack(m2))
	syncSubscriptions(t, cons)
	expectNone(t, sub, 100*time.Millisecond)

	// A transaction left open at disconnect is aborted.
	leaver, err := stomp.Dial("tcp", b.Addr, stomp.ConnOpt.Logger(quietLogger{}))
	require.NoError(t, err)
	ltx := leaver.Begin()
	require.NoError(t, ltx.Send("/queue/tx", "", []byte("never")))
	require.NoError(t, leaver.Disconnect())
	syncSubscriptions(t, prod)
	expectNone(t, sub, 100*time.Millisecond)
}
