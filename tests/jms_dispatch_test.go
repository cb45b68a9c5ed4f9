package tests

// JMS dispatch features over STOMP, as ActiveMQ gives them: message groups, exclusive and
// prioritised consumers, scheduled delivery, queue browsing, temporary destinations,
// wildcard and composite destinations, and virtual topics.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJMSMessageGroups(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c1, c2 := jmsDial(t, b.Addr), jmsDial(t, b.Addr)
	subs := []jmsSub{{c1, c1.subscribe("/queue/groups")}, {c2, c2.subscribe("/queue/groups")}}
	prod := jmsDial(t, b.Addr)
	for seq := 1; seq <= 4; seq++ {
		for _, g := range []string{"A", "B"} {
			prod.send("/queue/groups", g+strconv.Itoa(seq), "JMSXGroupID", g, "JMSXGroupSeq", strconv.Itoa(seq))
		}
	}
	got := jmsCollect(t, 8, subs...)
	owner := map[string]int{}
	inOrder := map[string][]string{}
	for i, ms := range got {
		for _, m := range ms {
			g := m.Header.Get("JMSXGroupID")
			first, seen := owner[g]
			if seen {
				assert.Equal(t, first, i, "group %s went to both consumers", g)
			} else {
				owner[g] = i
			}
			assert.Equal(t, string(m.Body[1:]), m.Header.Get("JMSXGroupSeq"), "JMSXGroupSeq of %s", m.Body)
			isFirst := m.Header.Get("JMSXGroupFirstForConsumer") == "true"
			assert.Equal(t, !seen, isFirst, "JMSXGroupFirstForConsumer on %s", m.Body)
			inOrder[g] = append(inOrder[g], string(m.Body))
		}
	}
	require.Len(t, owner, 2)
	for _, g := range []string{"A", "B"} {
		assert.Equal(t, []string{g + "1", g + "2", g + "3", g + "4"}, inOrder[g], "group %s", g)
	}

	// The owner of group A leaves: the group moves to the other consumer, whose first
	// message of it is flagged again.
	a := owner["A"]
	subs[a].c.leave()
	other := subs[1-a]
	prod.send("/queue/groups", "A5", "JMSXGroupID", "A", "JMSXGroupSeq", "5")
	prod.send("/queue/groups", "A6", "JMSXGroupID", "A", "JMSXGroupSeq", "6")
	m := other.c.next(other.id)
	assert.Equal(t, "A5", string(m.Body))
	assert.Equal(t, "true", m.Header.Get("JMSXGroupFirstForConsumer"))
	assert.Equal(t, "5", m.Header.Get("JMSXGroupSeq"))
	m = other.c.next(other.id)
	assert.Equal(t, "A6", string(m.Body))
	_, flagged := m.Header.Contains("JMSXGroupFirstForConsumer")
	assert.False(t, flagged, "JMSXGroupFirstForConsumer on the second message")
}

func TestJMSExclusiveConsumer(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	// The shared consumer comes first; the exclusive one still takes everything.
	shared := jmsDial(t, b.Addr)
	ss := shared.subscribe("/queue/excl")
	excl := jmsDial(t, b.Addr)
	xs := excl.subscribe("/queue/excl", "activemq.exclusive", "true")
	prod := jmsDial(t, b.Addr)
	for i := 0; i < 10; i++ {
		prod.send("/queue/excl", strconv.Itoa(i))
	}
	got := jmsCollect(t, 10, jmsSub{excl, xs}, jmsSub{shared, ss})
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, jmsBodies(got[0]))
	shared.sync()
	shared.expectNone(ss, 100*time.Millisecond)

	// Once it has gone, the other consumer takes over.
	excl.leave()
	for i := 10; i < 15; i++ {
		prod.send("/queue/excl", strconv.Itoa(i))
	}
	for i := 10; i < 15; i++ {
		assert.Equal(t, strconv.Itoa(i), string(shared.next(ss).Body))
	}
}

func TestJMSConsumerPriority(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	low := jmsDial(t, b.Addr)
	ls := low.subscribe("/queue/cprio", "ack", "client-individual", "activemq.prefetchSize", "3", "activemq.priority", "1")
	high := jmsDial(t, b.Addr)
	hs := high.subscribe("/queue/cprio", "ack", "client-individual", "activemq.prefetchSize", "3", "activemq.priority", "10")
	prod := jmsDial(t, b.Addr)
	for i := 0; i < 5; i++ {
		prod.send("/queue/cprio", strconv.Itoa(i))
	}
	got := jmsCollect(t, 5, jmsSub{high, hs}, jmsSub{low, ls})
	assert.Equal(t, []string{"0", "1", "2"}, jmsBodies(got[0]), "the higher-priority consumer fills its prefetch first")
	assert.Equal(t, []string{"3", "4"}, jmsBodies(got[1]))
	// An ACK gives the high-priority consumer room again: the next message is its.
	high.ack(got[0][0])
	prod.send("/queue/cprio", "5")
	assert.Equal(t, "5", string(high.next(hs).Body))
	low.sync()
	low.expectNone(ls, 100*time.Millisecond)
}

// msSlack allows for times the broker keeps in whole milliseconds (a due time, an
// expiry): truncated, they may fall up to a millisecond before the exact instant.
const msSlack = 2 * time.Millisecond

func TestJMSScheduledDelivery(t *testing.T) {
	t.Run("delay", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		c := jmsDial(t, b.Addr)
		sub := c.subscribe("/queue/sched")
		start := time.Now()
		c.send("/queue/sched", "later", "AMQ_SCHEDULED_DELAY", "300", "persistent", "true")
		c.send("/queue/sched", "now")
		assert.Equal(t, "now", string(c.next(sub).Body))
		m := c.next(sub)
		assert.Equal(t, "later", string(m.Body))
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond-msSlack, "delivered before AMQ_SCHEDULED_DELAY")
		assert.NotEmpty(t, m.Header.Get("scheduledJobId"))
	})

	t.Run("period and repeat", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		c := jmsDial(t, b.Addr)
		sub := c.subscribe("/queue/sched")
		start := time.Now()
		c.send("/queue/sched", "tick", "AMQ_SCHEDULED_PERIOD", "50", "AMQ_SCHEDULED_REPEAT", "3")
		ids := map[string]bool{}
		for i := 0; i < 4; i++ { // the first delivery and 3 repeats
			m := c.next(sub)
			assert.Equal(t, "tick", string(m.Body))
			ids[m.Header.Get("message-id")] = true
		}
		assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond-msSlack, "3 repeats 50ms apart")
		assert.Len(t, ids, 4, "each delivery has its own message-id")
		// Nothing more for six periods: the repeats are used up.
		c.expectNone(sub, 300*time.Millisecond)
	})

	t.Run("cron is refused", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		c := jmsDial(t, b.Addr)
		sub := c.subscribe("/queue/sched")
		e := c.refused("SEND", "destination", "/queue/sched", "AMQ_SCHEDULED_CRON", "* * * * *")
		assert.Contains(t, e.Header.Get("message"), "AMQ_SCHEDULED_CRON")
		c.send("/queue/sched", "still connected")
		assert.Equal(t, "still connected", string(c.next(sub).Body))
		c.sync()
		c.expectNone(sub, 100*time.Millisecond)
	})

	downs := []struct {
		name string
		down func(*brokerProc)
	}{{"sigterm", (*brokerProc).Stop}, {"kill-9", (*brokerProc).Kill}}
	for _, a := range durableAdapters {
		for _, d := range downs {
			t.Run("persistent survives a restart/"+a.name+"/"+d.name, func(t *testing.T) {
				cfg := brokerConfig{Adapter: a.store(t), DataDir: t.TempDir()}
				first := startBroker(t, cfg)
				c := jmsDial(t, first.Addr)
				start := time.Now()
				c.send("/queue/sched", "after restart", "persistent", "true", "AMQ_SCHEDULED_DELAY", "1000")
				d.down(first)

				second := startBroker(t, cfg)
				c2 := jmsDial(t, second.Addr)
				sub := c2.subscribe("/queue/sched")
				m := c2.next(sub)
				assert.Equal(t, "after restart", string(m.Body))
				assert.Equal(t, "true", m.Header.Get("persistent"))
				assert.GreaterOrEqual(t, time.Since(start), time.Second-msSlack, "delivered before AMQ_SCHEDULED_DELAY")
				c2.sync()
				c2.expectNone(sub, 200*time.Millisecond)
			})
		}
	}
}

func TestJMSQueueBrowser(t *testing.T) {
	t.Run("in memory", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		c := jmsDial(t, b.Addr)
		var want []string
		for i := 0; i < 10; i++ {
			body := "m" + strconv.Itoa(i)
			want = append(want, body)
			c.send("/queue/browse", body, "persistent", strconv.FormatBool(i%2 == 0), "n", strconv.Itoa(i))
		}
		got := c.browse("/queue/browse")
		assert.Equal(t, want, jmsBodies(got))
		for i, m := range got {
			assert.Equal(t, "/queue/browse", m.Header.Get("destination"))
			assert.NotEmpty(t, m.Header.Get("message-id"))
			assert.Equal(t, strconv.Itoa(i), m.Header.Get("n"))
		}
		assert.Equal(t, want, jmsBodies(c.browse("/queue/browse")), "browsing consumed messages")
		assert.Equal(t, want[5:], jmsBodies(c.browse("/queue/browse", "selector", "n >= 5")), "browser with a selector")

		sub := c.subscribe("/queue/browse")
		for _, w := range want {
			assert.Equal(t, w, string(c.next(sub).Body))
		}
		assert.Empty(t, c.browse("/queue/browse"))
	})

	t.Run("paged out to the store", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: `
destinationPolicy:
  - queue: "paged.>"
    memoryLimit: 4kb
`})
		c := jmsDial(t, b.Addr)
		var want []string
		for i := 0; i < 50; i++ {
			body := fmt.Sprintf("%04d", i) + strings.Repeat("x", 1020)
			want = append(want, body)
			c.send("/queue/paged.q", body, "persistent", "true")
		}
		eventually(t, 5*time.Second, "the broker to log that the queue pages to the store", func() bool {
			return strings.Contains(b.Log(), "paging new messages to the store")
		})
		assert.Equal(t, want, jmsBodies(c.browse("/queue/paged.q")))
		sub := c.subscribe("/queue/paged.q")
		for _, w := range want {
			assert.Equal(t, w[:4], string(c.next(sub).Body[:4]))
		}
		c.sync()
		c.expectNone(sub, 100*time.Millisecond)
	})
}

func TestJMSTemporaryQueueRequestReply(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	server := jmsDial(t, b.Addr)
	ss := server.subscribe("/queue/service")
	req := jmsDial(t, b.Addr)
	rs := req.subscribe("/temp-queue/replies")
	// Another client's /temp-queue/replies is a queue of its own.
	bystander := jmsDial(t, b.Addr)
	bs := bystander.subscribe("/temp-queue/replies")

	req.send("/queue/service", "ping", "reply-to", "/temp-queue/replies", "correlation-id", "42")
	m := server.next(ss)
	assert.Equal(t, "ping", string(m.Body))
	replyTo := m.Header.Get("reply-to")
	require.True(t, strings.HasPrefix(replyTo, "/remote-temp-queue/"), "reply-to %q", replyTo)
	server.send(replyTo, "pong", "correlation-id", m.Header.Get("correlation-id"))
	r := req.next(rs)
	assert.Equal(t, "pong", string(r.Body))
	assert.Equal(t, "/temp-queue/replies", r.Header.Get("destination"))
	assert.Equal(t, "42", r.Header.Get("correlation-id"))
	bystander.sync()
	bystander.expectNone(bs, 100*time.Millisecond)

	// Only the creator consumes from a temporary queue.
	thief := jmsDial(t, b.Addr)
	thief.refused("SUBSCRIBE", "id", "steal", "destination", replyTo)
	thief.sync()

	// Once the creator has gone, so has its temporary queue.
	req.leave()
	e := server.refused("SEND", "destination", replyTo)
	assert.NotEmpty(t, e.Header.Get("message"))
	server.sync()
}

func TestJMSWildcardsAndComposites(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := jmsDial(t, b.Addr)
	subs := map[string]string{}
	for _, pattern := range []string{"PRICE.>", "PRICE.*.IBM", "PRICE.STOCK.*"} {
		subs[pattern] = c.subscribe("/topic/" + pattern)
	}
	prod := jmsDial(t, b.Addr)
	for _, d := range []string{"PRICE.STOCK.IBM", "PRICE.STOCK.MSFT", "PRICE.BOND.IBM", "PRICE.STOCK.NYSE.IBM", "PRICES.STOCK.IBM"} {
		prod.send("/topic/"+d, d)
	}
	c.sync()
	want := map[string][]string{
		"PRICE.>":       {"PRICE.STOCK.IBM", "PRICE.STOCK.MSFT", "PRICE.BOND.IBM", "PRICE.STOCK.NYSE.IBM"},
		"PRICE.*.IBM":   {"PRICE.STOCK.IBM", "PRICE.BOND.IBM"},
		"PRICE.STOCK.*": {"PRICE.STOCK.IBM", "PRICE.STOCK.MSFT"},
	}
	for pattern, w := range want {
		got := c.drain(subs[pattern], 100*time.Millisecond)
		assert.Equal(t, w, jmsBodies(got), "/topic/%s", pattern)
		for _, m := range got {
			assert.Equal(t, "/topic/"+string(m.Body), m.Header.Get("destination"))
		}
	}

	// A composite destination delivers one copy to each of its parts.
	parts := []string{"/queue/A", "/topic/B", "/queue/C"}
	psubs := make([]string, len(parts))
	for i, p := range parts {
		psubs[i] = c.subscribe(p)
	}
	prod.send(strings.Join(parts, ","), "everywhere", "persistent", "true")
	c.sync()
	for i, p := range parts {
		got := c.drain(psubs[i], 100*time.Millisecond)
		require.Len(t, got, 1, "copies on %s", p)
		assert.Equal(t, "everywhere", string(got[0].Body))
		assert.Equal(t, p, got[0].Header.Get("destination"))
	}
}

func TestJMSVirtualTopics(t *testing.T) {
	t.Run("default prefix", func(t *testing.T) {
		b := startBroker(t, brokerConfig{})
		a1, a2, bc := jmsDial(t, b.Addr), jmsDial(t, b.Addr), jmsDial(t, b.Addr)
		as := []jmsSub{
			{a1, a1.subscribe("/queue/Consumer.A.VirtualTopic.Orders")},
			{a2, a2.subscribe("/queue/Consumer.A.VirtualTopic.Orders")},
		}
		bs := bc.subscribe("/queue/Consumer.B.VirtualTopic.Orders")
		plain := jmsDial(t, b.Addr)
		ts := plain.subscribe("/topic/VirtualTopic.Orders")
		prod := jmsDial(t, b.Addr)
		var want []string
		for i := 0; i < 10; i++ {
			want = append(want, "o"+strconv.Itoa(i))
			prod.send("/topic/VirtualTopic.Orders", want[i], "persistent", strconv.FormatBool(i%2 == 0))
		}
		got := jmsCollect(t, 10, as...)
		assert.ElementsMatch(t, want, append(jmsBodies(got[0]), jmsBodies(got[1])...), "group A gets each message once")
		assert.NotEmpty(t, got[0], "group A is load-balanced")
		assert.NotEmpty(t, got[1], "group A is load-balanced")
		for _, w := range want {
			assert.Equal(t, w, string(bc.next(bs).Body), "group B gets every message")
			assert.Equal(t, w, string(plain.next(ts).Body), "the topic still is a topic")
		}
		for _, s := range as {
			s.c.sync()
			s.c.expectNone(s.id, 50*time.Millisecond)
		}
		bc.sync()
		bc.expectNone(bs, 50*time.Millisecond)

		// A consumer queue made after the sends gets only what is sent afterwards.
		late := jmsDial(t, b.Addr)
		ls := late.subscribe("/queue/Consumer.C.VirtualTopic.Orders")
		late.sync()
		late.expectNone(ls, 100*time.Millisecond)
		prod.send("/topic/VirtualTopic.Orders", "after")
		assert.Equal(t, "after", string(late.next(ls).Body))
		assert.Equal(t, "after", string(bc.next(bs).Body))
	})

	t.Run("configured prefix", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: `
virtualTopics: {prefix: "VQ.*."}
`})
		c := jmsDial(t, b.Addr)
		vq := c.subscribe("/queue/VQ.A.VirtualTopic.Orders")
		old := c.subscribe("/queue/Consumer.A.VirtualTopic.Orders")
		c.send("/topic/VirtualTopic.Orders", "x")
		assert.Equal(t, "x", string(c.next(vq).Body))
		c.sync()
		c.expectNone(old, 100*time.Millisecond)
	})
}
