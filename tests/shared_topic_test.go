package tests

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// Topics and durable subscriptions across shared-mode nodes (jdbc mode: shared): a
// message published on one node reaches the subscribers of every node, and a durable
// subscription lives in the database, served on whichever node its consumer attaches to.

// durableHeaders are the CONNECT and SUBSCRIBE headers of ActiveMQ-style durable
// subscription name of client-id clientID on topic.
func durableHeaders(clientID, name, topic, ack string, extra ...string) (connect, sub []string) {
	return []string{"client-id", clientID},
		append([]string{"id", "d", "destination", topic, "ack", ack, "activemq.subscriptionName", name}, extra...)
}

// subscribeWhenFree is subscribeShared that tries again, until within, while the
// client-id or the durable subscription is still in use (a connection or node that
// went, whose departure the broker has not yet seen or whose lease has not lapsed).
func subscribeWhenFree(t *testing.T, addr string, connect, sub []string, within time.Duration) *sharedConsumer {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		require.True(t, time.Now().Before(deadline), "the durable subscription stayed in use")
		c := dialRaw(t, addr)
		f := c.connect(connect...)
		if f.Command == "CONNECTED" {
			c.send(frame.New("SUBSCRIBE", append(sub, "receipt", "sub")...))
			if f = c.read(); f.Command == "RECEIPT" {
				return startReading(c)
			}
		}
		require.Equal(t, "ERROR", f.Command)
		msg := f.Header.Get("message")
		require.True(t, strings.Contains(msg, "in use") || strings.Contains(msg, "already connected"), msg)
		_ = c.nc.Close()
		time.Sleep(100 * time.Millisecond) // polling: what frees it is on the broker's clock
	}
}

// bodiesOf reads n MESSAGEs of s, acknowledging each if ack, and returns their bodies.
func bodiesOf(t *testing.T, s *sharedConsumer, n int, ack bool) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		f := s.take(t, 10*time.Second)
		require.NotNil(t, f, "only %d of %d messages", len(got), n)
		got = append(got, string(f.Body))
		if ack {
			s.ack(t, f)
		}
	}
	return got
}

// TestSharedTopicReachesSubscribersOnEveryNode: a SEND to a topic on node 1 reaches a
// non-durable subscriber on node 1 and one on node 2, in order; a SEND on node 2 too.
func TestSharedTopicReachesSubscribersOnEveryNode(t *testing.T) {
	n1, n2 := startSharedPair(t)
	s1 := newSharedSubscriber(t, n1.Addr, "/topic/prices", "auto", 1000)
	s2 := newSharedSubscriber(t, n2.Addr, "/topic/prices", "auto", 1000)
	want := sharedSend(t, n1.Addr, "/topic/prices", "p1", 50)
	require.Equal(t, want, bodiesOf(t, s2, 50, false))
	require.Equal(t, want, bodiesOf(t, s1, 50, false))
	// A large one (past NOTIFY's payload limit) and from the other node.
	c := dialRaw(t, n2.Addr)
	require.Equal(t, "CONNECTED", c.connect().Command)
	big := frame.New("SEND", "destination", "/topic/prices", "receipt", "big")
	big.Body = make([]byte, 64<<10)
	for i := range big.Body {
		big.Body[i] = byte('a' + i%26)
	}
	c.send(big)
	require.Equal(t, "RECEIPT", c.read().Command)
	for _, s := range []*sharedConsumer{s1, s2} {
		f := s.take(t, 10*time.Second)
		require.NotNil(t, f)
		require.Equal(t, big.Body, f.Body)
		require.Equal(t, "/topic/prices", f.Header.Get("destination"))
	}
}

// TestSharedDurableSubscriptionMovesBetweenNodes: a durable subscription made on node
// 1 keeps what is published on node 2 while its client is away, and the client gets it
// on node 2; while attached on one node it is in use on the other.
func TestSharedDurableSubscriptionMovesBetweenNodes(t *testing.T) {
	nodes := startSharedNodes(t, 2, adminEnv)
	n1, n2 := nodes[0], nodes[1]
	admin := newAPI(t, "http://"+statsAddr(t, n1))
	type durable = durableRow
	var ds []durable
	connect, sub := durableHeaders("app-1", "audit", "/topic/orders", "client-individual")
	d := subscribeShared(t, n1.Addr, connect, sub...)

	// In use: the same client-id and name on node 2 is refused.
	c := dialRaw(t, n2.Addr)
	require.Equal(t, "CONNECTED", c.connect(connect...).Command)
	c.send(frame.New("SUBSCRIBE", append(sub, "receipt", "x")...))
	f := c.read()
	require.Equal(t, "ERROR", f.Command)
	require.Contains(t, f.Header.Get("message"), "in use")
	_ = c.nc.Close()

	first := sharedSend(t, n2.Addr, "/topic/orders", "a", 20)
	require.Equal(t, first, bodiesOf(t, d, 20, true))
	d.c.send(frame.New("DISCONNECT", "receipt", "bye"))
	d.waitReceipt(t, "bye")

	// Away: published on both nodes, kept in the database.
	second := append(sharedSend(t, n2.Addr, "/topic/orders", "b", 30), sharedSend(t, n1.Addr, "/topic/orders", "c", 30)...)
	// The operator sees the database's subscription from any node.
	admin.get("/api/durable-subscriptions", &ds)
	require.Equal(t, []durable{{ClientID: "app-1", Name: "audit", Topic: "/topic/orders", Pending: 60}}, ds)
	d2 := subscribeWhenFree(t, n2.Addr, connect, sub, 10*time.Second)
	admin.get("/api/durable-subscriptions", &ds)
	require.True(t, ds[0].Active, "attached on node 2")
	admin.expect(http.StatusConflict, "DELETE", "/api/durable-subscriptions/app-1/audit", "", nil)
	got := bodiesOf(t, d2, 60, true)
	require.ElementsMatch(t, second, got)
	require.Equal(t, second[:30], filterPrefix(got, "b-"))
	require.Equal(t, second[30:], filterPrefix(got, "c-"))
	require.Nil(t, d2.take(t, 300*time.Millisecond), "nothing more")
	d2.c.send(frame.New("DISCONNECT", "receipt", "bye"))
	d2.waitReceipt(t, "bye")
	for deadline := time.Now().Add(10 * time.Second); ; {
		status, body, _ := admin.call("DELETE", "/api/durable-subscriptions/app-1/audit", "")
		if status == http.StatusNoContent {
			break
		}
		require.Equal(t, http.StatusConflict, status, "%s", body) // node 2 has not yet seen the DISCONNECT's end
		require.True(t, time.Now().Before(deadline), "still in use")
		time.Sleep(50 * time.Millisecond) // polling the broker
	}
	admin.get("/api/durable-subscriptions", &ds)
	require.Empty(t, ds)
}

func filterPrefix(bodies []string, prefix string) []string {
	var out []string
	for _, b := range bodies {
		if len(b) >= len(prefix) && b[:len(prefix)] == prefix {
			out = append(out, b)
		}
	}
	return out
}

// TestSharedDurableSelectorAndUnsubscribe: a durable subscription with a selector
// keeps only what matches; deleting it (UNSUBSCRIBE with its name) on the other node
// drops its messages.
func TestSharedDurableSelectorAndUnsubscribe(t *testing.T) {
	n1, n2 := startSharedPair(t)
	connect, sub := durableHeaders("app-2", "red", "/topic/cars", "auto", "selector", "color = 'red'")
	d := subscribeShared(t, n1.Addr, connect, sub...)
	c := dialRaw(t, n2.Addr)
	require.Equal(t, "CONNECTED", c.connect().Command)
	for i := range 10 {
		color := "blue"
		if i%2 == 0 {
			color = "red"
		}
		c.send(frame.New("SEND", "destination", "/topic/cars", "color", color, "persistent", "true", "receipt", strconv.Itoa(i)))
		require.Equal(t, "RECEIPT", c.read().Command)
	}
	for i := 0; i < 10; i += 2 {
		f := d.take(t, 10*time.Second)
		require.NotNil(t, f)
		require.Equal(t, "red", f.Header.Get("color"))
	}
	require.Nil(t, d.take(t, 300*time.Millisecond))
	d.c.send(frame.New("UNSUBSCRIBE", "id", "d", "receipt", "u"))
	d.waitReceipt(t, "u")

	// Deleted from node 2 (the consumer detached on node 1 first).
	u := dialRaw(t, n2.Addr)
	require.Equal(t, "CONNECTED", u.connect(connect...).Command)
	u.send(frame.New("UNSUBSCRIBE", "id", "d", "activemq.subscriptionName", "red", "receipt", "del"))
	f := u.read()
	require.Equal(t, "RECEIPT", f.Command, "%s %s", f.Header.Get("message"), f.Body)
	u.send(frame.New("UNSUBSCRIBE", "id", "d", "activemq.subscriptionName", "red", "receipt", "del2"))
	f = u.read()
	require.Equal(t, "ERROR", f.Command)
	require.Contains(t, f.Header.Get("message"), "No durable subscription")
}

// TestSharedDurableSurvivesNodeKill9: node 1 is killed -9 while its durable subscriber
// holds unacknowledged messages; the client reattaches on node 2 once node 1's lease
// lapses and gets every message it had not acknowledged, flagged redelivered, and the
// rest.
func TestSharedDurableSurvivesNodeKill9(t *testing.T) {
	n1, n2 := startSharedPair(t)
	connect, sub := durableHeaders("app-3", "ledger", "/topic/ledger", "client-individual", "activemq.prefetchSize", "10")
	d := subscribeShared(t, n1.Addr, connect, sub...)
	sent := sharedSend(t, n2.Addr, "/topic/ledger", "l", 40)
	bodiesOf(t, d, 10, false) // its prefetch, unacknowledged
	n1.Kill()
	start := time.Now()
	d2 := subscribeWhenFree(t, n2.Addr, connect, sub, 15*time.Second)
	after := time.Since(start)
	redelivered := 0
	var bodies []string
	for len(bodies) < 40 {
		f := d2.take(t, 10*time.Second)
		require.NotNil(t, f, "only %d of 40", len(bodies))
		if f.Header.Get("redelivered") == "true" {
			redelivered++
		}
		bodies = append(bodies, string(f.Body))
		d2.ack(t, f)
	}
	require.ElementsMatch(t, sent, bodies)
	require.Equal(t, 10, redelivered, "the 10 node 1 had delivered (its prefetch) come again flagged")
	t.Logf("durable subscription served on node 2 %v after node 1 was killed", after)
	require.Nil(t, d2.take(t, 300*time.Millisecond), "nothing more")
}
