package tests

import (
	"bytes"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreUsageLimit: with sendFailIfNoSpace: true, past systemUsage.storeUsage
// persistent SENDs get an ERROR (with the receipt-id), the broker logs it, the
// connection stays open, non-persistent messages still flow, and everything accepted
// before is still delivered. Every adapter reports its size: the journal and the log
// their files, bbolt the pages of its file in use, jdbc its rows, memory the messages
// it holds.
func TestStoreUsageLimit(t *testing.T) {
	adapters := append([]struct {
		name  string
		store func(t testing.TB) string
	}{{"memory", func(testing.TB) string { return "memory: {}" }}}, durableAdapters...)
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			adapter := a.store(t)
			if a.name == "kahadb" {
				adapter = "kahaDB: {journalMaxFileLength: 256kb}"
			}
			storeUsageRun(t, adapter)
		})
	}
}

func storeUsageRun(t *testing.T, adapter string) {
	b := startBroker(t, brokerConfig{
		Adapter: adapter,
		Extra:   "systemUsage: {storeUsage: 1mb, sendFailIfNoSpace: true}\n",
	})
	rc := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", rc.connect().Command)
	body := bytes.Repeat([]byte("x"), 8<<10)
	accepted := 0
	var refusal *frame.Frame
	// The broker reads the store's size a few times a second: a fast store takes many
	// messages past the limit before the first refusal.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; refusal == nil && time.Now().Before(deadline); i++ {
		f := frame.New("SEND", "destination", "/queue/full", "persistent", "true", "receipt", strconv.Itoa(i))
		f.Body = body
		rc.send(f)
		got := rc.read()
		switch got.Command {
		case "RECEIPT":
			accepted++
		case "ERROR":
			refusal = got
		}
	}
	require.NotNil(t, refusal, "no ERROR after %d × 8 KiB persistent messages with storeUsage 1mb", accepted)
	t.Logf("%d messages accepted", accepted)
	assert.Contains(t, refusal.Header.Get("message"), "store is full")
	assert.NotEmpty(t, refusal.Header.Get("receipt-id"))
	eventually(t, 5*time.Second, "the log line", func() bool { return bytes.Contains([]byte(b.Log()), []byte("persistent store is full")) })

	rc.send(frame.New("SEND", "destination", "/queue/full", "receipt", "np"))
	require.Equal(t, "RECEIPT", rc.read().Command, "non-persistent messages still flow")
	rc.send(frame.New("SUBSCRIBE", "id", "s", "destination", "/queue/full"))
	for i := 0; i <= accepted; i++ {
		m := rc.read()
		require.Equal(t, "MESSAGE", m.Command)
	}
}

// TestTransactionSizeLimit: a transaction may hold at most systemUsage.maxTransactionSize
// bytes until COMMIT; past it the SEND gets an ERROR, the transaction stays usable.
func TestTransactionSizeLimit(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxTransactionSize: 64kb}\n"})
	rc := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", rc.connect().Command)
	rc.send(frame.New("BEGIN", "transaction", "t", "receipt", "b"))
	require.Equal(t, "RECEIPT", rc.read().Command)
	body := bytes.Repeat([]byte("y"), 10<<10)
	sent := 0
	var refusal *frame.Frame
	for i := 0; i < 20 && refusal == nil; i++ {
		f := frame.New("SEND", "destination", "/queue/tx", "transaction", "t", "receipt", strconv.Itoa(i))
		f.Body = body
		rc.send(f)
		if got := rc.read(); got.Command == "ERROR" {
			refusal = got
		} else {
			sent++
		}
	}
	require.NotNil(t, refusal)
	assert.Contains(t, refusal.Header.Get("message"), "maxTransactionSize")
	assert.Equal(t, 6, sent, "6 × 10 KiB fit in 64 KiB")
	rc.send(frame.New("COMMIT", "transaction", "t", "receipt", "c"))
	require.Equal(t, "RECEIPT", rc.read().Command)
	rc.send(frame.New("SUBSCRIBE", "id", "s", "destination", "/queue/tx"))
	for i := 0; i < sent; i++ {
		require.Equal(t, "MESSAGE", rc.read().Command)
	}
}

// TestMaxTransactionsPerConnection: a connection may have at most
// systemUsage.maxTransactionsPerConnection transactions open; a BEGIN past it gets an
// ERROR (the connection stays open), and once one ends another may begin.
func TestMaxTransactionsPerConnection(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxTransactionsPerConnection: 2}\n"})
	c := jmsDial(t, b.Addr)
	c.do("BEGIN", "transaction", "a")
	c.do("BEGIN", "transaction", "b")
	e := c.refused("BEGIN", "transaction", "c")
	assert.Contains(t, e.Header.Get("message"), "maxTransactionsPerConnection")
	c.do("COMMIT", "transaction", "a")
	c.do("BEGIN", "transaction", "c")
	// Another connection has its own count.
	c2 := jmsDial(t, b.Addr)
	c2.do("BEGIN", "transaction", "a")
}

// TestMaxDestinations: clients may create at most systemUsage.maxDestinations queues
// and topics; a SEND or SUBSCRIBE that would create one more gets an ERROR (with the
// receipt-id), the connection stays open and existing destinations still work.
func TestMaxDestinations(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxDestinations: 2}\n"})
	c := jmsDial(t, b.Addr)
	c.send("/queue/a", "1")
	c.send("/topic/b", "1")
	f := frame.New("SEND", "destination", "/queue/c")
	f.Body = []byte("refused")
	e := c.exchange(f)
	require.Equal(t, "ERROR", e.Command)
	assert.Contains(t, e.Header.Get("message"), "maxDestinations 2")
	e = c.refused("SUBSCRIBE", "id", "s", "destination", "/topic/x")
	assert.Contains(t, e.Header.Get("message"), "maxDestinations")
	e = c.refused("SUBSCRIBE", "id", "s", "destination", "/temp-queue/replies")
	assert.Contains(t, e.Header.Get("message"), "maxDestinations")
	sub := c.subscribe("/queue/a")
	assert.Equal(t, "1", string(c.next(sub).Body))
	eventually(t, 5*time.Second, "the log line", func() bool { return strings.Contains(b.Log(), "destination limit reached") })
}

// TestMaxDestinationsLeavesAdvisoryTopicsOut: advisory topics are the broker's and do
// not count against maxDestinations. A monitor watching each queue's consumers
// (ActiveMQ.Advisory.Consumer.Queue.X) makes an advisory topic per queue: with
// maxDestinations 3, three client queues still fit beside their three advisory topics,
// a fourth client destination is refused (SEND and SUBSCRIBE), and the monitor's
// advisory subscriptions are not.
func TestMaxDestinationsLeavesAdvisoryTopicsOut(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxDestinations: 3}\n"})
	mon := jmsDial(t, b.Addr)
	c := jmsDial(t, b.Addr)
	for _, q := range []string{"a", "b", "c"} {
		mon.subscribe("/topic/ActiveMQ.Advisory.Consumer.Queue." + q)
		c.send("/queue/"+q, "in "+q)
	}
	e := c.refused("SEND", "destination", "/queue/d")
	assert.Contains(t, e.Header.Get("message"), "maxDestinations 3")
	e = c.refused("SUBSCRIBE", "id", "x", "destination", "/topic/d")
	assert.Contains(t, e.Header.Get("message"), "maxDestinations 3")
	mon.subscribe("/topic/ActiveMQ.Advisory.Consumer.Queue.d")
	mon.subscribe("/topic/ActiveMQ.Advisory.Producer.Queue.d")
	for _, q := range []string{"a", "b", "c"} {
		sub := c.subscribe("/queue/" + q)
		assert.Equal(t, "in "+q, string(c.next(sub).Body))
	}
	eventually(t, 5*time.Second, "the log line", func() bool { return strings.Contains(b.Log(), "destination limit reached") })
}

// TestManyQueuesWithAdvisories: with the default limits and an advisory subscriber
// present, a client creates more queues than the old default (10,000) allowed, and
// SEND and SUBSCRIBE to new destinations still work.
func TestManyQueuesWithAdvisories(t *testing.T) {
	const queues = 10_050
	b := startBroker(t, brokerConfig{})
	mon := dial(t, b.Addr)
	adv, err := mon.Subscribe("/topic/ActiveMQ.Advisory.Queue", stomp.AckAuto)
	require.NoError(t, err)
	var heard atomic.Int64
	go func() {
		for m := range adv.C {
			if m.Err == nil {
				heard.Add(1)
			}
		}
	}()
	c := jmsDial(t, b.Addr)
	for i := range queues {
		f := frame.New("SEND", "destination", "/queue/many."+strconv.Itoa(i))
		if i%500 == 499 {
			c.send("/queue/many."+strconv.Itoa(i), "x") // with a receipt: paces the client
			continue
		}
		f.Body = []byte("x")
		c.raw.send(f)
	}
	sub := c.subscribe("/queue/many.after")
	c.send("/queue/many.after", "still served")
	assert.Equal(t, "still served", string(c.next(sub).Body))
	tsub := c.subscribe("/topic/many.after")
	c.send("/topic/many.after", "topic too")
	assert.Equal(t, "topic too", string(c.next(tsub).Body))
	eventually(t, 30*time.Second, "an advisory per queue", func() bool { return heard.Load() >= queues })
	assert.NotContains(t, b.Log(), "destination limit reached")
}

// TestGCInactiveDestinations: with gcInactiveDestinations, a destination that has had no
// messages, subscribers or sends for inactiveTimeoutBeforeGC is removed (with a log
// line), which makes room under maxDestinations; one that still holds a message stays.
func TestGCInactiveDestinations(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `systemUsage: {maxDestinations: 2}
destinationPolicy:
  - queue: ">"
    gcInactiveDestinations: true
    inactiveTimeoutBeforeGC: 300ms
  - topic: ">"
    gcInactiveDestinations: true
    inactiveTimeoutBeforeGC: 300ms
`})
	c := jmsDial(t, b.Addr)
	c.send("/queue/kept", "waiting", "persistent", "true")
	sub := c.subscribe("/queue/used")
	c.send("/queue/used", "x")
	c.next(sub)
	c.do("UNSUBSCRIBE", "id", sub)
	e := c.refused("SUBSCRIBE", "id", "t", "destination", "/topic/full")
	assert.Contains(t, e.Header.Get("message"), "maxDestinations")

	eventually(t, 10*time.Second, "the inactive queue removed", func() bool {
		return strings.Contains(b.Log(), "inactive destinations removed")
	})
	// /queue/used is gone, so a new destination fits; /queue/kept stayed with its message.
	tsub := c.subscribe("/topic/new")
	c.send("/topic/new", "hello")
	assert.Equal(t, "hello", string(c.next(tsub).Body))
	e = c.refused("SUBSCRIBE", "id", "t2", "destination", "/topic/another")
	assert.Contains(t, e.Header.Get("message"), "maxDestinations")
	kept := c.subscribe("/queue/kept")
	assert.Equal(t, "waiting", string(c.next(kept).Body))
}

// TestPrefetchSizeValidated: activemq.prefetchSize must be a whole number from 0 (the
// default) to the destination policy's maxPrefetch (default 32767); anything else gets
// an ERROR instead of being truncated or ignored, and the connection stays open.
func TestPrefetchSizeValidated(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := jmsDial(t, b.Addr)
	for _, bad := range []struct{ prefetch, want string }{
		{"4294967297", "maxPrefetch 32767"}, // 2^32+1: 1 once truncated to 32 bits
		{"100000", "maxPrefetch 32767"},
		{"-1", "activemq.prefetchSize"},
		{"lots", "activemq.prefetchSize"},
		{"99999999999999999999999", "activemq.prefetchSize"},
	} {
		e := c.refused("SUBSCRIBE", "id", "s", "destination", "/queue/a", "activemq.prefetchSize", bad.prefetch)
		assert.Contains(t, e.Header.Get("message"), bad.want, "prefetch %s", bad.prefetch)
	}
	c.subscribe("/queue/a", "activemq.prefetchSize", "32767")
}

// TestMaxPrefetchPolicy: a destination policy's maxPrefetch caps activemq.prefetchSize
// on its destinations.
func TestMaxPrefetchPolicy(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - queue: "small.>"
    maxPrefetch: 10
`})
	c := jmsDial(t, b.Addr)
	e := c.refused("SUBSCRIBE", "id", "s", "destination", "/queue/small.x", "activemq.prefetchSize", "11")
	assert.Contains(t, e.Header.Get("message"), "maxPrefetch 10")
	sub := c.subscribe("/queue/small.x", "activemq.prefetchSize", "10", "ack", "client-individual")
	for i := 0; i < 11; i++ {
		c.send("/queue/small.x", strconv.Itoa(i))
	}
	for i := 0; i < 10; i++ {
		c.next(sub)
	}
	c.sync()
	c.expectNone(sub, 100*time.Millisecond)
	c.subscribe("/queue/other", "activemq.prefetchSize", "1000")
}

// TestMaxSubscriptionsPerConnection: a connection may have at most
// systemUsage.maxSubscriptionsPerConnection subscriptions, queue browsers included; a
// SUBSCRIBE past it gets an ERROR and the connection stays open.
// TestMaxDurableSubscriptions: systemUsage.maxDurableSubscriptions bounds the durable
// subscriptions clients create, broker-wide: past it a SUBSCRIBE that would create one
// gets an ERROR (the connection goes on, with a log line), reattaching an existing one
// is never refused, and deleting one makes room.
func TestMaxDurableSubscriptions(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxDurableSubscriptions: 2}\n"})
	one := durConnect(t, b.Addr, "app-1")
	durAttach(one, "/topic/prices", "s1")
	two := durConnect(t, b.Addr, "app-2")
	durAttach(two, "/topic/prices", "s2")
	three := durConnect(t, b.Addr, "app-3")
	e := three.refused("SUBSCRIBE", "id", "d3", "destination", "/topic/prices", "activemq.subscriptionName", "s3")
	assert.Contains(t, e.Header.Get("message"), "maximum number of durable subscriptions reached (systemUsage maxDurableSubscriptions 2)")
	awaitLogLine(t, b, 5*time.Second, "durable subscription limit reached")
	three.do("SEND", "destination", "/queue/still-served")

	// The existing ones keep their messages and can be reattached.
	one.leave()
	durPublish(three, "/topic/prices", true, []string{"p1"})
	again := durConnect(t, b.Addr, "app-1")
	sub := durAttach(again, "/topic/prices", "s1")
	durExpect(again, sub, "p1")

	// Deleting one makes room for a new one.
	two.do("UNSUBSCRIBE", "id", "s1")
	two.do("UNSUBSCRIBE", "id", "s1", "activemq.subscriptionName", "s2")
	durAttach(three, "/topic/prices", "s3")
}

func TestMaxSubscriptionsPerConnection(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxSubscriptionsPerConnection: 2}\n"})
	c := jmsDial(t, b.Addr)
	first := c.subscribe("/queue/a")
	c.subscribe("/topic/b")
	e := c.refused("SUBSCRIBE", "id", "x", "destination", "/queue/c")
	assert.Contains(t, e.Header.Get("message"), "maxSubscriptionsPerConnection")
	e = c.refused("SUBSCRIBE", "id", "y", "destination", "/queue/a", "browser", "true")
	assert.Contains(t, e.Header.Get("message"), "maxSubscriptionsPerConnection")
	c.do("UNSUBSCRIBE", "id", first)
	c.browse("/queue/a")
	sub := c.subscribe("/queue/c")
	c.send("/queue/c", "ok")
	assert.Equal(t, "ok", string(c.next(sub).Body))
}
