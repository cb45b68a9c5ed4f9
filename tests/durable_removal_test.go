package tests

import (
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/stompcodec"
)

// ---- 5: removal, and what is refused --------------------------------------------------

// TestDurableRemoval: ActiveMQ's two steps (UNSUBSCRIBE id detaches, the subscription
// keeps messages; UNSUBSCRIBE id + activemq.subscriptionName deletes it), which
// ActiveMQ clients rely on: the name while attached, also on this connection, is
// refused with ActiveMQ's "Durable consumer is in use" and the subscription stays
// attached; Artemis' one-frame form (durable-subscription-name while attached on this
// connection) detaches and deletes; and the refusals, each an ERROR with the receipt-id
// that leaves the connection open.
func TestDurableRemoval(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	p := jmsDial(t, b.Addr)

	t.Run("two-step", func(t *testing.T) {
		const topic = "/topic/removal.two"
		c := durConnect(t, b.Addr, "app-two")
		id := durAttach(c, topic, "sub", "ack", "client-individual")
		c.do("UNSUBSCRIBE", "id", id) // detached, not deleted
		durPublish(p, topic, true, numbered("kept", 0, 3))
		id = durAttach(c, topic, "sub", "ack", "client-individual")
		for _, m := range durExpect(c, id, numbered("kept", 0, 3)...) {
			c.ack(m)
		}
		durQuiet(c, id)
		c.do("UNSUBSCRIBE", "id", id)
		durPublish(p, topic, true, []string{"kept-while-detached"})
		c.do("UNSUBSCRIBE", "id", id, "activemq.subscriptionName", "sub") // deleted, backlog and all
		durPublish(p, topic, true, []string{"after-delete"})
		id = durAttach(c, topic, "sub", "ack", "client-individual")
		durQuiet(c, id)
		// Deleted for good: a second delete finds nothing.
		c.do("UNSUBSCRIBE", "id", id)
		c.do("UNSUBSCRIBE", "id", id, "activemq.subscriptionName", "sub")
		e := c.refused("UNSUBSCRIBE", "id", id, "activemq.subscriptionName", "sub")
		assert.Contains(t, e.Header.Get("message"), "No durable subscription")
		c.sync()
	})

	t.Run("name-while-attached-is-refused", func(t *testing.T) {
		const topic = "/topic/removal.attached"
		c := durConnect(t, b.Addr, "app-attached")
		id := durAttach(c, topic, "sub", "ack", "client-individual")
		durPublish(p, topic, true, []string{"live"})
		c.ack(durExpect(c, id, "live")[0])
		e := c.refused("UNSUBSCRIBE", "id", id, "activemq.subscriptionName", "sub")
		assert.Equal(t, "Durable consumer is in use", e.Header.Get("message"))
		// Still attached, still receiving, the connection open.
		durPublish(p, topic, true, []string{"still-attached"})
		c.ack(durExpect(c, id, "still-attached")[0])
		durQuiet(c, id)
		// Still there after the consumer left: it kept what came meanwhile.
		c.leave()
		durPublish(p, topic, true, []string{"kept"})
		c = durConnect(t, b.Addr, "app-attached")
		id = durAttach(c, topic, "sub", "ack", "client-individual")
		c.ack(durExpect(c, id, "kept")[0])
		// The two steps delete it.
		c.do("UNSUBSCRIBE", "id", id)
		c.do("UNSUBSCRIBE", "id", id, "activemq.subscriptionName", "sub")
		durPublish(p, topic, true, []string{"after-delete"})
		c.leave()
		c = durConnect(t, b.Addr, "app-attached")
		durQuiet(c, durAttach(c, topic, "sub"))
	})

	t.Run("artemis-one-frame-while-attached", func(t *testing.T) {
		const topic = "/topic/removal.one"
		c := durConnect(t, b.Addr, "app-one")
		id := c.subscribe(topic, "durable-subscription-name", "sub")
		durPublish(p, topic, true, []string{"live"})
		durExpect(c, id, "live")
		c.do("UNSUBSCRIBE", "id", id, "durable-subscription-name", "sub")
		durPublish(p, topic, true, []string{"after-delete"})
		c.expectNone(id, 200*time.Millisecond) // detached: nothing more on the old id
		c.leave()
		c = durConnect(t, b.Addr, "app-one")
		id = c.subscribe(topic, "durable-subscription-name", "sub")
		durQuiet(c, id) // nothing was kept
	})

	t.Run("refusals-keep-the-connection", func(t *testing.T) {
		anon := jmsDial(t, b.Addr)
		e := anon.refused("SUBSCRIBE", "id", "d1", "destination", "/topic/refused", "activemq.subscriptionName", "sub")
		assert.Contains(t, e.Header.Get("message"), "client-id")
		anon.sync()

		c := durConnect(t, b.Addr, "app-refused")
		e = c.refused("SUBSCRIBE", "id", "q1", "destination", "/queue/refused", "activemq.subscriptionName", "sub")
		assert.Contains(t, e.Header.Get("message"), "Queue")
		e = c.refused("UNSUBSCRIBE", "id", "nope", "activemq.subscriptionName", "never-created")
		assert.Contains(t, e.Header.Get("message"), "No durable subscription")

		// One active consumer per (client-id, name): a second one is refused, the first
		// keeps receiving.
		id := durAttach(c, "/topic/refused", "sub")
		e = c.refused("SUBSCRIBE", "id", "second", "destination", "/topic/refused", "activemq.subscriptionName", "sub")
		assert.Contains(t, e.Header.Get("message"), "in use")
		durPublish(p, "/topic/refused", true, []string{"still-here"})
		durExpect(c, id, "still-here")
		durQuiet(c, id)
	})
}

// TestDurableDeleteRefusedWhileAttachedElsewhere: deleting a subscription that another
// connection holds attached is an ERROR carrying the receipt-id, and the connection stays
// open. Client-ids are exclusive, so the only way to a second connection with the same
// client-id is link stealing from an old connection that cannot be stopped: a client that
// stopped reading while the broker was writing it a message larger than the socket
// buffers. The broker waits 10 s for the old connection to go, then lets the new one in;
// once the old one is closed, the delete goes through.
func TestDurableDeleteRefusedWhileAttachedElsewhere(t *testing.T) {
	b := startBrokerKeys(t, brokerConfig{}, "allowLinkStealing: true")
	const topic = "/topic/hung"

	// The hung client: a receive buffer of a few KiB, and it stops reading.
	dialer := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	nc, err := dialer.Dial("tcp", b.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	hung := &rawConn{t: t, nc: nc, r: stompcodec.NewReader(nc, stompcodec.DefaultLimits()), w: stompcodec.NewWriter(nc, 0)}
	require.Equal(t, "CONNECTED", hung.connect("client-id", "app-hung").Command)
	hung.send(frame.New("SUBSCRIBE", "id", "s1", "destination", topic, "activemq.subscriptionName", "sub", "receipt", "attached"))
	require.Equal(t, "RECEIPT", hung.read().Command)

	p := jmsDial(t, b.Addr)
	p.send(topic, strings.Repeat("x", 8<<20)) // 8 MiB: more than both socket buffers hold
	// The first bytes of the MESSAGE prove the broker is writing it, and it cannot finish.
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadFull(nc, make([]byte, 1))
	require.NoError(t, err)

	start := time.Now()
	nw := dialRaw(t, b.Addr)
	nw.send(frame.New("CONNECT", "accept-version", "1.2", "host", "localhost", "client-id", "app-hung"))
	f, err := nw.readWithin(20 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "CONNECTED", f.Command, "link stealing: %s", f.Header.Get("message"))
	nw.r.SetVersion("1.2")
	nw.w.SetVersion("1.2")
	t.Logf("the new connection got in after %v", time.Since(start).Round(time.Millisecond))

	nw.send(frame.New("UNSUBSCRIBE", "id", "s1", "activemq.subscriptionName", "sub", "receipt", "delete-1"))
	f = nw.read()
	require.Equal(t, "ERROR", f.Command, "deleting a subscription attached on another connection")
	assert.Equal(t, "delete-1", f.Header.Get("receipt-id"))
	assert.Contains(t, f.Header.Get("message"), "in use")
	nw.send(frame.New("SUBSCRIBE", "id", "s2", "destination", topic, "activemq.subscriptionName", "sub", "receipt", "attach-1"))
	f = nw.read()
	require.Equal(t, "ERROR", f.Command, "attaching a subscription attached on another connection")
	assert.Equal(t, "attach-1", f.Header.Get("receipt-id"))
	assert.Contains(t, f.Header.Get("message"), "in use")
	nw.send(frame.New("SEND", "destination", "/queue/alive", "receipt", "alive"))
	f = nw.read()
	require.Equal(t, "RECEIPT", f.Command, "the connection stays open after the refusals: %v", f.Header)

	// The hung client goes away: its subscription is detached and can be deleted.
	require.NoError(t, nc.Close())
	tries := 0
	eventually(t, 10*time.Second, "the delete to be accepted once the hung connection is gone", func() bool {
		tries++
		r := "delete-again-" + strconv.Itoa(tries)
		nw.send(frame.New("UNSUBSCRIBE", "id", "s1", "activemq.subscriptionName", "sub", "receipt", r))
		f := nw.read()
		require.Equal(t, r, f.Header.Get("receipt-id"), "%s %v", f.Command, f.Header)
		if f.Command == "RECEIPT" {
			return true
		}
		require.Contains(t, f.Header.Get("message"), "in use")
		return false
	})
}

// ---- 6: one connection per client-id --------------------------------------------------

// TestDurableClientIDInUse: a second connection with the client-id of a live one is
// refused by default, with an ERROR that says why and what to do, and the first keeps
// working; with allowLinkStealing the newcomer replaces it (the old one gets an ERROR and
// is closed) and takes its durable subscription over, unacknowledged messages included;
// a silent connection that negotiated heart-beats is dropped after its heart-beat
// timeout, and the client-id is free again.
func TestDurableClientIDInUse(t *testing.T) {
	t.Run("refused-by-default", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		const topic = "/topic/owner"
		c := durConnect(t, b.Addr, "app-owner")
		id := durAttach(c, topic, "sub")

		rc := dialRaw(t, b.Addr)
		f := rc.connect("client-id", "app-owner")
		require.Equal(t, "ERROR", f.Command)
		msg := f.Header.Get("message")
		assert.Contains(t, msg, "already connected")
		assert.Contains(t, msg, "heart-beat")
		assert.Contains(t, msg, "allowLinkStealing")
		rc.expectClosed(5 * time.Second)

		p := jmsDial(t, b.Addr)
		durPublish(p, topic, true, []string{"still-mine"})
		durExpect(c, id, "still-mine")
		durQuiet(c, id)
	})

	// A DISCONNECT's RECEIPT means the broker is done with the connection (ActiveMQ sends
	// it once the connection, its client-id and its consumers are removed), so a client
	// that reconnects at once with the same client-id must get in. go-stomp's Disconnect
	// returns at the RECEIPT.
	t.Run("reconnect-right-after-DISCONNECT-receipt", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		for i := 0; i < 100; i++ {
			c, err := stomp.Dial("tcp", b.Addr, stomp.ConnOpt.Logger(quietLogger{}), stomp.ConnOpt.Header("client-id", "app-quick"))
			require.NoError(t, err, "connection %d, right after the previous one's DISCONNECT receipt", i)
			goSubscribe(t, c, "/topic/quick", stomp.AckAuto, "activemq.subscriptionName", "sub")
			syncSubscriptions(t, c)
			require.NoError(t, c.Disconnect())
		}
	})

	t.Run("link-stealing", func(t *testing.T) {
		b := startBrokerKeys(t, brokerConfig{}, "allowLinkStealing: true")
		const topic = "/topic/stolen"
		old := durConnect(t, b.Addr, "app-stolen")
		id := durAttach(old, topic, "sub", "ack", "client-individual")
		p := jmsDial(t, b.Addr)
		durPublish(p, topic, true, numbered("m", 0, 2))
		durExpect(old, id, numbered("m", 0, 2)...) // held, never acknowledged

		nw := durConnect(t, b.Addr, "app-stolen")
		e := durClosed(old, 5*time.Second)
		require.NotNil(t, e, "the replaced connection gets an ERROR before it is closed")
		assert.Contains(t, e.Header.Get("message"), "taken over")
		awaitLogLine(t, b, 5*time.Second, "client-id taken over", "clientID=app-stolen")

		id = durAttach(nw, topic, "sub", "ack", "client-individual")
		for _, m := range durExpect(nw, id, numbered("m", 0, 2)...) {
			assert.Equal(t, "true", m.Header.Get("redelivered"), "%s", m.Body)
			nw.ack(m)
		}
		durPublish(p, topic, true, []string{"m-02"})
		nw.ack(durExpect(nw, id, "m-02")[0])
		durQuiet(nw, id)
	})

	t.Run("stale-connection-dropped-after-heart-beat-timeout", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		const topic = "/topic/stale"
		// It promises a heart-beat every second and then says nothing more.
		stale := durConnect(t, b.Addr, "app-stale", "heart-beat", "1000,0")
		id := durAttach(stale, topic, "sub", "ack", "client-individual")
		silentSince := time.Now()
		p := jmsDial(t, b.Addr)
		durPublish(p, topic, true, numbered("m", 0, 2))
		durExpect(stale, id, numbered("m", 0, 2)...)

		rc := dialRaw(t, b.Addr)
		f := rc.connect("client-id", "app-stale")
		require.Equal(t, "ERROR", f.Command, "the silent connection is still within its heart-beat timeout")
		assert.Contains(t, f.Header.Get("message"), "already connected")
		rc.expectClosed(5 * time.Second)

		e := durClosed(stale, 10*time.Second)
		silent := time.Since(silentSince)
		require.NotNil(t, e, "a dropped connection gets an ERROR")
		assert.Contains(t, e.Header.Get("message"), "heart-beat")
		assert.GreaterOrEqual(t, silent, time.Second, "dropped before its heart-beat interval passed")

		c := durConnect(t, b.Addr, "app-stale")
		id = durAttach(c, topic, "sub", "ack", "client-individual")
		for _, m := range durExpect(c, id, numbered("m", 0, 2)...) {
			assert.Equal(t, "true", m.Header.Get("redelivered"), "%s", m.Body)
			c.ack(m)
		}
		durQuiet(c, id)
	})
}
