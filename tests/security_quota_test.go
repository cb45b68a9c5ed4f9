package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The per-user and per-connection quotas (issue 24, "a fair share for each user"): what
// one user (or connection) may make the broker hold, below the broker-wide caps of
// systemUsage, so that one tenant cannot lock the others out. Each quota met is an
// ERROR naming its key; the connection goes on and nothing it had is lost.

// quotaBroker starts a broker with two users, app1 and app2 (no authorization map: each
// may do anything), the plugins: keys of plugins and the systemUsage: keys of usage.
func quotaBroker(t *testing.T, plugins, usage string) (*brokerProc, map[string]string) {
	t.Helper()
	pw := map[string]string{"app1": "pw1-" + randomHex(4), "app2": "pw2-" + randomHex(4)}
	var y strings.Builder
	y.WriteString("plugins:\n  simpleAuthentication:\n    users:\n")
	for _, u := range []string{"app1", "app2"} {
		fmt.Fprintf(&y, "      - {username: %s, password: %q, groups: users}\n", u, pw[u])
	}
	if plugins != "" {
		y.WriteString("  " + plugins + "\n")
	}
	extra := ""
	if usage != "" {
		extra = "systemUsage: {" + usage + "}\n"
	}
	return startSecBroker(t, secBroker{Plugins: y.String(), Extra: extra,
		Connectors: []string{"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0"}}), pw
}

// quotaDial connects as user.
func quotaDial(t *testing.T, b *brokerProc, pw map[string]string, user string, headers ...string) *jmsClient {
	t.Helper()
	return jmsDial(t, b.Addr, append([]string{"login", user, "passcode", pw[user]}, headers...)...)
}

// TestQuotaDestinationsPerUser: with systemUsage maxDestinations 20, user app1 creating
// new queues meets its own quota (plugins.maxDestinationsPerUser 8) with an ERROR
// naming it, long before the broker's cap: app2 can still send to a new destination and
// make a temporary queue. app1's connection goes on, its messages are all there, and
// its existing destinations still serve it.
func TestQuotaDestinationsPerUser(t *testing.T) {
	b, pw := quotaBroker(t, "maxDestinationsPerUser: 8", "maxDestinations: 20")
	a := quotaDial(t, b, pw, "app1")
	var refusal *frame.Frame
	created := 0
	for i := 0; i < 25 && refusal == nil; i++ {
		f := frame.New("SEND", "destination", "/queue/a."+strconv.Itoa(i))
		f.Body = []byte("m" + strconv.Itoa(i))
		if got := a.exchange(f); got.Command == "ERROR" {
			refusal = got
		} else {
			created++
		}
	}
	require.NotNil(t, refusal, "app1 created %d queues without an ERROR", created)
	assert.Equal(t, "user app1 reached its quota of 8 destinations created (plugins.maxDestinationsPerUser): /queue/a.8 not created",
		refusal.Header.Get("message"))
	assert.Equal(t, 8, created)
	e := a.refused("SUBSCRIBE", "id", "x", "destination", "/topic/new")
	assert.Contains(t, e.Header.Get("message"), "plugins.maxDestinationsPerUser")
	awaitLogLine(t, b, 10*time.Second, "destination quota reached", "user=app1", "maxDestinationsPerUser=8")

	// The other user is not locked out of new destinations nor of temporary queues.
	o := quotaDial(t, b, pw, "app2")
	o.send("/queue/b.0", "b0")
	reply := o.subscribe("/temp-queue/replies")
	o.send("/temp-queue/replies", "r")
	assert.Equal(t, "r", string(o.next(reply).Body))

	// app1 goes on: its destinations serve it and hold what it sent.
	a.send("/queue/a.0", "again")
	sub := a.subscribe("/queue/a.0")
	assert.Equal(t, []string{"m0", "again"}, []string{string(a.next(sub).Body), string(a.next(sub).Body)})
	last := a.subscribe("/queue/a.7")
	assert.Equal(t, "m7", string(a.next(last).Body))
}

// TestQuotaTemporaryDestinationsPerConnection: a connection may make at most
// systemUsage.maxTemporaryDestinationsPerConnection temporary destinations; one more is
// an ERROR naming the key, the connection goes on with the ones it has, deleting none
// of them; another connection has its own count. It holds on a broker without
// authentication too.
func TestQuotaTemporaryDestinationsPerConnection(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxTemporaryDestinationsPerConnection: 3}\n"})
	c := jmsDial(t, b.Addr)
	subs := []string{c.subscribe("/temp-queue/t0"), c.subscribe("/temp-topic/t1"), c.subscribe("/temp-queue/t2")}
	e := c.refused("SUBSCRIBE", "id", "x", "destination", "/temp-queue/t3")
	assert.Equal(t, "this connection reached its quota of 3 temporary destinations (systemUsage maxTemporaryDestinationsPerConnection): /temp-queue/t3 not created",
		e.Header.Get("message"))
	f := frame.New("SEND", "destination", "/queue/requests", "reply-to", "/temp-queue/t4")
	e = c.exchange(f)
	require.Equal(t, "ERROR", e.Command, "a reply-to naming a new temporary queue makes it")
	assert.Contains(t, e.Header.Get("message"), "maxTemporaryDestinationsPerConnection")

	// The ones it has still work.
	c.send("/temp-queue/t0", "q")
	assert.Equal(t, "q", string(c.next(subs[0]).Body))
	c.send("/queue/requests", "ask", "reply-to", "/temp-queue/t2")
	c.send("/temp-queue/t2", "answer")
	assert.Equal(t, "answer", string(c.next(subs[2]).Body))

	other := jmsDial(t, b.Addr)
	for i := range 3 {
		other.subscribe("/temp-queue/o" + strconv.Itoa(i))
	}
}

// TestQuotaDurableSubscriptionsPerUser: a user may have at most
// plugins.maxDurableSubscriptionsPerUser durable subscriptions: one more is an ERROR
// naming the key (the connection goes on); reattaching one it has is never refused,
// another user has its own count, and deleting one makes room.
func TestQuotaDurableSubscriptionsPerUser(t *testing.T) {
	b, pw := quotaBroker(t, "maxDurableSubscriptionsPerUser: 2", "")
	a := quotaDial(t, b, pw, "app1", "client-id", "a1")
	durAttach(a, "/topic/prices", "s1")
	durAttach(a, "/topic/prices", "s2")
	e := a.refused("SUBSCRIBE", "id", "d3", "destination", "/topic/prices", "activemq.subscriptionName", "s3")
	assert.Equal(t, "user app1 reached its quota of 2 durable subscriptions (plugins.maxDurableSubscriptionsPerUser): a1:s3 not created",
		e.Header.Get("message"))
	// Another connection of app1 counts against the same quota.
	a2 := quotaDial(t, b, pw, "app1", "client-id", "a2")
	e = a2.refused("SUBSCRIBE", "id", "d1", "destination", "/topic/prices", "activemq.subscriptionName", "s1")
	assert.Contains(t, e.Header.Get("message"), "plugins.maxDurableSubscriptionsPerUser")

	o := quotaDial(t, b, pw, "app2", "client-id", "o1")
	durAttach(o, "/topic/prices", "s1")
	durAttach(o, "/topic/prices", "s2")

	// Reattaching is not creating, and the offline ones kept their messages; deleting
	// one makes room for another.
	a.leave()
	durPublish(o, "/topic/prices", true, []string{"p1"})
	a = quotaDial(t, b, pw, "app1", "client-id", "a1")
	s1 := durAttach(a, "/topic/prices", "s1")
	durExpect(a, s1, "p1")
	a.do("UNSUBSCRIBE", "id", s1)
	a.do("UNSUBSCRIBE", "id", s1, "activemq.subscriptionName", "s1")
	durAttach(a, "/topic/prices", "s3")
}

// TestQuotaConnectionsPerUserDefault: plugins.maxConnectionsPerUser defaults to 100, a
// number one application does not reach: the 101st connection of a user is refused
// with an ERROR naming the key, another user still connects. A broker without
// authentication counts no user: there any number of connections share a login.
func TestQuotaConnectionsPerUserDefault(t *testing.T) {
	b, pw := quotaBroker(t, "", "")
	for range 100 {
		quotaDial(t, b, pw, "app1")
	}
	c := dialRaw(t, b.Addr)
	f := c.connect("login", "app1", "passcode", pw["app1"])
	require.Equal(t, "ERROR", f.Command, "the 101st connection of app1")
	assert.Equal(t, "user app1 reached its quota of 100 connections (plugins.maxConnectionsPerUser or its own maxConnections): close one of its connections first", f.Header.Get("message"))
	c.expectClosed(10 * time.Second)
	quotaDial(t, b, pw, "app2")

	open := startBroker(t, brokerConfig{})
	for range 101 {
		jmsDial(t, open.Addr, "login", "app1", "passcode", "any")
	}
}

// TestQuotaOpenWire: ActiveMQ's Java client meets the same per-user quota, across
// protocols: app1 created its one destination over STOMP, so its OpenWire send to a new
// queue throws a ResourceAllocationException naming the quota, while the queue it has
// (with the message STOMP sent), a temporary queue (counted per connection) and the
// connection still serve it.
func TestQuotaOpenWire(t *testing.T) {
	b, pw := quotaBroker(t, "maxDestinationsPerUser: 1", "")
	have, fresh := owName(t, "have"), owName(t, "new")
	quotaDial(t, b, pw, "app1").send("/queue/"+have, "over STOMP")
	r := runOW(t, "tcp://"+b.connectorAddr("openwire"), "secure", "user=app1", "password="+pw["app1"],
		"allowed="+have, "denied="+fresh)
	assert.Equal(t, "ok", r.get("connect"))
	assert.Equal(t, "over STOMP/app1", r.get("received"), "the queue, FIFO, gives what STOMP sent first")
	assert.Equal(t, "ResourceAllocationException: user app1 reached its quota of 1 destinations created (plugins.maxDestinationsPerUser): /queue/"+
		fresh+" not created", r.get("denied"))
	assert.Equal(t, "ok", r.get("denied_producer"), "a producer creates nothing")
	assert.Equal(t, "allowed/app1", r.get("after_denied"), "the connection goes on")
	assert.Equal(t, "ok", r.get("temp"))
}

// TestQuotaUnackedBytesPerUser: the queue messages dispatched to a user's consumers and
// not yet acknowledged may hold at most plugins.maxUnackedBytesPerUser bytes, across its
// connections, whatever their prefetch: past it the broker dispatches no more to that
// user (no ERROR: delivery pauses, as a full prefetch window pauses it) and logs it;
// another user's consumers are served; the connection stays usable; once it
// acknowledges, delivery resumes, and every message arrives once.
func TestQuotaUnackedBytesPerUser(t *testing.T) {
	b, pw := quotaBroker(t, "maxUnackedBytesPerUser: 64kb", "")
	body := strings.Repeat("u", 8<<10)
	a := quotaDial(t, b, pw, "app1")
	held := a.subscribe("/queue/big", "ack", "client-individual", "activemq.prefetchSize", "1000")
	p := quotaDial(t, b, pw, "app2")
	for i := range 20 {
		p.send("/queue/big", body, "n", strconv.Itoa(i))
	}
	var got []*frame.Frame
	for range 8 { // 8 messages of a little more than 8 KiB each reach 64 KiB
		got = append(got, a.next(held))
	}
	awaitLogLine(t, b, 10*time.Second, "unacknowledged-bytes quota reached", "user=app1", "maxUnackedBytesPerUser=65536")
	a.sync()
	a.expectNone(held, 300*time.Millisecond)
	// Another connection of app1 shares the quota.
	a2 := quotaDial(t, b, pw, "app1")
	auto := a2.subscribe("/queue/big")
	a2.expectNone(auto, 300*time.Millisecond)
	// app1's connection goes on; app2 is served.
	a.send("/queue/app1.other", "still usable")
	mine := p.subscribe("/queue/app2.own", "ack", "client-individual")
	p.send("/queue/app2.own", body)
	p.ack(p.next(mine))

	// Acknowledging makes room: the other 12 arrive, between app1's two consumers.
	for _, m := range got {
		a.ack(m)
	}
	seen := map[string]bool{}
	for _, m := range got {
		seen[m.Header.Get("n")] = true
	}
	eventually(t, 10*time.Second, "the 12 other messages", func() bool {
		for {
			m := a.nextWithin(held, 10*time.Millisecond)
			if m == nil {
				m = a2.nextWithin(auto, 10*time.Millisecond)
			} else {
				a.ack(m)
			}
			if m == nil {
				return len(seen) == 20
			}
			require.False(t, seen[m.Header.Get("n")], "message %s twice", m.Header.Get("n"))
			seen[m.Header.Get("n")] = true
		}
	})
}
