package tests

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Wildcard queue subscriptions, as ActiveMQ has them: /queue/wq.> consumes from every
// matching queue, those existing when it subscribes and those created later; each ACK
// settles the message in the queue it came from.

func TestWildcardQueueSubscription(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	p := jmsDial(t, b.Addr)
	p.send("/queue/wq.a", "a1") // wq.a exists before the subscription

	c := jmsDial(t, b.Addr)
	sub := c.subscribe("/queue/wq.>", "ack", "client-individual")
	p.send("/queue/wq.b", "b1") // wq.b is created after it
	p.send("/queue/other", "o1")
	p.send("/queue/wq.b.deeper", "d1")

	got := map[string]string{}
	for range 3 {
		m := c.next(sub)
		got[m.Header.Get("destination")] = string(m.Body)
		c.ack(m)
	}
	assert.Equal(t, map[string]string{"/queue/wq.a": "a1", "/queue/wq.b": "b1", "/queue/wq.b.deeper": "d1"}, got)
	c.sync()
	c.expectNone(sub, 100*time.Millisecond)

	// The ACKs went to the right queues: nothing comes back to a new consumer.
	c.leave()
	d := jmsDial(t, b.Addr)
	for _, q := range []string{"/queue/wq.a", "/queue/wq.b", "/queue/wq.b.deeper"} {
		s := d.subscribe(q)
		d.sync()
		d.expectNone(s, 100*time.Millisecond)
	}
	o := d.subscribe("/queue/other")
	assert.Equal(t, "o1", string(d.next(o).Body), "a queue the wildcard does not match keeps its message")
}

func TestWildcardQueueUnackedGoBack(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := jmsDial(t, b.Addr)
	sub := c.subscribe("/queue/wb.*", "ack", "client-individual")
	p := jmsDial(t, b.Addr)
	p.send("/queue/wb.x", "x1")
	p.send("/queue/wb.y", "y1")
	p.send("/queue/wb.x", "x2")
	var bodies []string
	for range 3 {
		bodies = append(bodies, string(c.next(sub).Body))
	}
	sort.Strings(bodies)
	require.Equal(t, []string{"x1", "x2", "y1"}, bodies)
	c.leave() // unacknowledged: each goes back to its own queue

	d := jmsDial(t, b.Addr)
	sx := d.subscribe("/queue/wb.x")
	for _, want := range []string{"x1", "x2"} {
		m := d.next(sx)
		assert.Equal(t, want, string(m.Body))
		assert.Equal(t, "true", m.Header.Get("redelivered"))
	}
	sy := d.subscribe("/queue/wb.y")
	assert.Equal(t, "y1", string(d.next(sy).Body))
}

// A wildcard consumer and a plain consumer of the same queue share its messages, each
// message going to one of them.
func TestWildcardQueueSharesWithPlainConsumer(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	w := jmsDial(t, b.Addr)
	ws := w.subscribe("/queue/ws.>")
	pc := jmsDial(t, b.Addr)
	ps := pc.subscribe("/queue/ws.q")
	p := jmsDial(t, b.Addr)
	const n = 40
	for range n {
		p.send("/queue/ws.q", "m")
	}
	w.sync()
	pc.sync()
	gotW := len(w.drain(ws, 200*time.Millisecond))
	gotP := len(pc.drain(ps, 200*time.Millisecond))
	assert.Equal(t, n, gotW+gotP, "every message once")
	assert.Positive(t, gotW)
	assert.Positive(t, gotP)
}
