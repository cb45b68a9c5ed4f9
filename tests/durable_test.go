package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Durable topic subscriptions, end to end: a subscription is (client-id on CONNECT,
// subscription name on SUBSCRIBE); while its consumer is away it keeps every matching
// persistent message (never the non-persistent ones), one stored copy per message
// however many subscriptions owe it. The tests drive the real broker binary with
// go-stomp, with the raw STOMP 1.2 client of jms_client_test.go (which sees ERROR frames
// and receipt-ids), and with stomp.py (durable_py_test.go). Their helpers are in
// durable_helpers_test.go; removal and client-ids, acknowledgement modes, restarts and
// offline limits each have a durable_*_test.go of their own.

// ---- 1, 2: what an offline subscription keeps, under every client's header names -------

// TestDurableKeepsPersistentMessagesWhileAway: CONNECT client-id + SUBSCRIBE with
// activemq.subscriptionName (go-stomp). While the consumer is away the persistent
// messages are kept and come back in publish order when the same client-id and name
// return, followed by live ones; the non-persistent messages sent meanwhile are not kept
// (ActiveMQ's rule), while both kinds reach an attached consumer.
func TestDurableKeepsPersistentMessagesWhileAway(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	const topic = "/topic/orders"
	p := dial(t, b.Addr)

	c := durDial(t, b.Addr, "app1")
	sub := goSubscribe(t, c, topic, stomp.AckAuto, "activemq.subscriptionName", "orders-sub")
	syncSubscriptions(t, c)
	goPublish(t, p, topic, true, "attached")
	goExpect(t, sub, "attached")
	require.NoError(t, c.Disconnect())

	for i := 0; i < 10; i++ {
		goPublish(t, p, topic, true, numbered("kept", i, i+1)...)
		goPublish(t, p, topic, false, numbered("not-kept", i, i+1)...)
	}

	c2 := durDial(t, b.Addr, "app1")
	sub2 := goSubscribe(t, c2, topic, stomp.AckAuto, "activemq.subscriptionName", "orders-sub")
	for _, m := range goExpect(t, sub2, numbered("kept", 0, 10)...) {
		assert.Equal(t, "true", m.Header.Get("persistent"), "%s", m.Body)
		assert.Equal(t, topic, m.Destination)
		assert.Equal(t, sub2.Id(), m.Header.Get("subscription"))
		assert.Empty(t, m.Header.Get("redelivered"), "%s was never delivered before", m.Body)
	}
	goPublish(t, p, topic, true, "live-persistent")
	goPublish(t, p, topic, false, "live-non-persistent")
	goExpect(t, sub2, "live-persistent", "live-non-persistent")
	syncSubscriptions(t, c2)
	expectNone(t, sub2, 300*time.Millisecond)
}

// TestDurableHeaderForms: the durable subscription names of ActiveMQ
// (activemq.subscriptionName), Artemis (durable-subscription-name and the older
// durable-subscriber-name) and RabbitMQ (durable:true + auto-delete:false, the id being
// the name) each keep messages while away and are deleted by an UNSUBSCRIBE carrying
// the same headers: in one frame while attached for Artemis and RabbitMQ, as their
// brokers do; in ActiveMQ's two steps for ActiveMQ (detach, then delete). RabbitMQ's
// auto-delete:true is not durable.
func TestDurableHeaderForms(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	p := dial(t, b.Addr)
	cases := []struct {
		name    string
		sub     []string // SUBSCRIBE headers
		unsub   []string // UNSUBSCRIBE headers that delete it
		durable bool
		twoStep bool // the UNSUBSCRIBE that deletes it is refused while attached
	}{
		{"activemq.subscriptionName", []string{"activemq.subscriptionName", "sub"}, []string{"activemq.subscriptionName", "sub"}, true, true},
		{"durable-subscription-name", []string{"durable-subscription-name", "sub"}, []string{"durable-subscription-name", "sub"}, true, false},
		{"durable-subscriber-name", []string{"durable-subscriber-name", "sub"}, []string{"durable-subscriber-name", "sub"}, true, false},
		{"rabbitmq-durable", []string{"id", "sub", "durable", "true", "auto-delete", "false"}, []string{"durable", "true", "auto-delete", "false"}, true, false},
		{"rabbitmq-auto-delete-is-not-durable", []string{"id", "sub", "durable", "true", "auto-delete", "true"}, nil, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clientID, topic := "app-"+tc.name, "/topic/forms."+tc.name
			c := durDial(t, b.Addr, clientID)
			goSubscribe(t, c, topic, stomp.AckClientIndividual, tc.sub...)
			syncSubscriptions(t, c)
			require.NoError(t, c.Disconnect())
			goPublish(t, p, topic, true, numbered("m", 0, 5)...)

			c2 := durDial(t, b.Addr, clientID)
			sub := goSubscribe(t, c2, topic, stomp.AckClientIndividual, tc.sub...)
			if !tc.durable {
				syncSubscriptions(t, c2)
				expectNone(t, sub, 300*time.Millisecond)
				return
			}
			for _, m := range goExpect(t, sub, numbered("m", 0, 5)...) {
				require.NoError(t, c2.Ack(m))
			}
			// Deleted with the same headers (go-stomp waits for the UNSUBSCRIBE's receipt):
			// a message sent now is kept for nobody, and the next SUBSCRIBE starts afresh.
			if tc.twoStep {
				// go-stomp sends one UNSUBSCRIBE per subscription: the delete goes on a raw
				// connection once this one has detached and left.
				unsubscribe(t, sub)
				require.NoError(t, c2.Disconnect())
				r := durConnect(t, b.Addr, clientID)
				r.do("UNSUBSCRIBE", append([]string{"id", "gone"}, tc.unsub...)...)
				r.leave()
				c2 = durDial(t, b.Addr, clientID)
			} else {
				unsubscribe(t, sub, headerOpts(tc.unsub)...)
			}
			goPublish(t, p, topic, true, "after-delete")
			again := goSubscribe(t, c2, topic, stomp.AckClientIndividual, tc.sub...)
			syncSubscriptions(t, c2)
			expectNone(t, again, 300*time.Millisecond)
		})
	}
}

// ---- 3: several subscriptions, one stored copy -----------------------------------------

// TestDurableSeveralSubscriptionsShareOneStoredCopy (kahadb): four durable subscriptions
// of one topic (two names under one client-id, two other client-ids), all offline. 20
// persistent messages of 64 KiB grow the journal by about one copy, not four. Each
// subscription gets the full stream in order. After three of them acknowledged
// everything, a restarted broker still serves the fourth from that one copy and nothing
// to the others; once the fourth acknowledged too, nothing comes back to anyone after
// another restart, and a subscription created then gets nothing old.
func TestDurableSeveralSubscriptionsShareOneStoredCopy(t *testing.T) {
	const topic, n = "/topic/fanout", 20
	bc := brokerConfig{Adapter: "kahaDB: {}", DataDir: t.TempDir()}
	b := startBroker(t, bc)
	type durable struct{ clientID, name string }
	all := []durable{{"app-a", "s1"}, {"app-a", "s2"}, {"app-b", "s1"}, {"app-c", "s1"}}
	// attach attaches each of which (one connection per client-id), in order.
	attach := func(b *brokerProc, which []durable) []jmsSub {
		conns := map[string]*jmsClient{}
		var out []jmsSub
		for _, d := range which {
			c := conns[d.clientID]
			if c == nil {
				c = durConnect(t, b.Addr, d.clientID)
				conns[d.clientID] = c
			}
			out = append(out, jmsSub{c, durAttach(c, topic, d.name, "ack", "client-individual")})
		}
		return out
	}
	leave := func(subs []jmsSub) {
		left := map[*jmsClient]bool{}
		for _, s := range subs {
			if !left[s.c] {
				left[s.c] = true
				s.c.leave()
			}
		}
	}
	takeAll := func(s jmsSub, bodies []string) {
		for _, m := range durExpect(s.c, s.id, bodies...) {
			s.c.ack(m) // with a receipt: durable once it returns
		}
	}
	leave(attach(b, all))

	before := dirSize(t, bc.DataDir)
	pad := strings.Repeat("x", 64<<10)
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("f-%02d:%s", i, pad)
	}
	durPublish(jmsDial(t, b.Addr), topic, true, bodies)
	grown, payload := dirSize(t, bc.DataDir)-before, int64(n*len(bodies[0]))
	t.Logf("%d bytes of messages for %d subscriptions: the data directory grew by %d bytes", payload, len(all), grown)
	assert.GreaterOrEqual(t, grown, payload, "the messages are in the journal")
	assert.Less(t, grown, 2*payload, "one stored copy expected, not one per subscription")

	// The first three take everything.
	subs := attach(b, all[:3])
	for _, s := range subs {
		takeAll(s, bodies)
	}
	durQuietAll(subs...)
	leave(subs)

	b.Stop()
	b = startBroker(t, bc)
	subs = attach(b, all)
	takeAll(subs[3], bodies)
	durQuietAll(subs...) // the first three get nothing: they acknowledged it all
	leave(subs)

	b.Stop()
	b = startBroker(t, bc)
	durQuietAll(attach(b, append(all, durable{"app-late", "late"}))...)
}

// ---- 4: selectors, and replacing a subscription ----------------------------------------

// TestDurableSelectorAndReplacement: the selector of a durable SUBSCRIBE decides what is
// kept while away; coming back with another selector, or to another topic, under the same
// name replaces the subscription: its backlog is gone and it follows the new definition.
func TestDurableSelectorAndReplacement(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	const topic, other = "/topic/paint", "/topic/paint.other"
	p := jmsDial(t, b.Addr)
	red := []string{"color", "red"}
	blue := []string{"color", "blue"}
	redSel := []string{"selector", "color = 'red'"}

	c := durConnect(t, b.Addr, "painter")
	durAttach(c, topic, "s", redSel...)
	c.leave()
	for i := 0; i < 4; i++ {
		durPublish(p, topic, true, numbered("red", i, i+1), red...)
		durPublish(p, topic, true, numbered("blue", i, i+1), blue...)
	}
	c = durConnect(t, b.Addr, "painter")
	id := durAttach(c, topic, "s", redSel...)
	durExpect(c, id, numbered("red", 0, 4)...)
	durQuiet(c, id)
	c.leave()

	t.Run("new-selector", func(t *testing.T) {
		durPublish(p, topic, true, []string{"red-backlog-0", "red-backlog-1"}, red...)
		c := durConnect(t, b.Addr, "painter")
		id := durAttach(c, topic, "s", "selector", "color = 'blue'")
		durQuiet(c, id) // the red backlog went with the old subscription
		durPublish(p, topic, true, []string{"red-live"}, red...)
		durPublish(p, topic, true, []string{"blue-live"}, blue...)
		durExpect(c, id, "blue-live")
		durQuiet(c, id)
		c.leave()
		// The replacement is what is kept while away now.
		durPublish(p, topic, true, []string{"red-away"}, red...)
		durPublish(p, topic, true, []string{"blue-away"}, blue...)
		c = durConnect(t, b.Addr, "painter")
		id = durAttach(c, topic, "s", "selector", "color = 'blue'")
		durExpect(c, id, "blue-away")
		durQuiet(c, id)
		c.leave()
	})

	// What is kept for an offline subscription is what its selector matches: under a
	// limit of 3 pending messages, 6 non-matching ones take no room from 3 matching ones.
	t.Run("non-matching-not-kept", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    maxPendingMessages: 3\n"})
		p := jmsDial(t, b.Addr)
		c := durConnect(t, b.Addr, "painter")
		durAttach(c, topic, "s", redSel...)
		c.leave()
		durPublish(p, topic, true, numbered("blue", 0, 6), blue...)
		durPublish(p, topic, true, numbered("red", 0, 3), red...)
		c = durConnect(t, b.Addr, "painter")
		id := durAttach(c, topic, "s", redSel...)
		durExpect(c, id, numbered("red", 0, 3)...)
		durQuiet(c, id)
		assert.Empty(t, logLine(b, "over its pending limit"), "the non-matching messages counted against the limit")
	})

	t.Run("new-topic", func(t *testing.T) {
		durPublish(p, topic, true, []string{"blue-backlog"}, blue...)
		c := durConnect(t, b.Addr, "painter")
		id := durAttach(c, other, "s", "selector", "color = 'blue'")
		durQuiet(c, id) // the backlog on the old topic is gone
		durPublish(p, topic, true, []string{"blue-old-topic"}, blue...)
		durPublish(p, other, true, []string{"blue-new-topic"}, blue...)
		durExpect(c, id, "blue-new-topic")
		durQuiet(c, id)
		c.leave()
	})
}
