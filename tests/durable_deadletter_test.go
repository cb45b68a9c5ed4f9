package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDurableIndividualDeadLetter: the dead messages of a durable topic subscription go
// where ActiveMQ's individualDeadLetterStrategy sends a topic's: the queue topicPrefix +
// the topic's name (never a name made from the broker's internals), with
// destinationPerDurableSubscriber one per subscription, topicPrefix + topic + "." +
// client-id + ":" + subscription name (+ topicSuffix), and with
// useQueueForTopicMessages: false a topic of that name. Both ways a message dies count:
// a NACK (ActiveMQ's poison ack) and too many redeliveries.
func TestDurableIndividualDeadLetter(t *testing.T) {
	const topic = "/topic/orders"

	// nackOnce attaches (clientID, name), NACKs the one message it gets, and leaves.
	nackOnce := func(t *testing.T, b *brokerProc, clientID, name, body string) {
		t.Helper()
		c := durConnect(t, b.Addr, clientID)
		id := durAttach(c, topic, name, "ack", "client-individual")
		durPublish(jmsDial(t, b.Addr), topic, true, []string{body})
		m := durExpect(c, id, body)[0]
		c.nack(m)
		c.leave()
	}
	// dead requires exactly the bodies on the dead-letter queue dlq, from the topic.
	dead := func(t *testing.T, b *brokerProc, dlq string, bodies ...string) {
		t.Helper()
		c := jmsDial(t, b.Addr)
		var got []string
		eventually(t, 5*time.Second, "the dead-letter queue "+dlq, func() bool {
			ms := c.browse("/queue/" + dlq)
			got = jmsBodies(ms)
			for _, m := range ms {
				assert.Equal(t, topic, m.Header.Get("original-destination"), "%s", m.Body)
			}
			return len(got) >= len(bodies)
		})
		assert.Equal(t, bodies, got, "on %s", dlq)
	}
	// noQueue requires that no queue whose name contains part exists.
	noQueue := func(t *testing.T, b *brokerProc, part string) {
		t.Helper()
		for _, q := range statsQueues(t, b) {
			assert.NotContains(t, q, part, "a dead-letter queue named after the broker's internals")
		}
	}

	t.Run("per-topic", func(t *testing.T) {
		b := startBroker(t, brokerConfig{
			Env:   []string{"BROKER_BROKER_STATSADDRESS=127.0.0.1:0"},
			Extra: "destinationPolicy:\n  - topic: \">\"\n    deadLetterStrategy: {individual: true}\n"})
		nackOnce(t, b, "app1", "s1", "poison-1")
		nackOnce(t, b, "app2", "s2", "poison-2")
		dead(t, b, "ActiveMQ.DLQ.Topic.orders", "poison-1", "poison-2")
		noQueue(t, b, "durable")
	})

	t.Run("per-durable-subscriber", func(t *testing.T) {
		b := startBroker(t, brokerConfig{
			Env: []string{"BROKER_BROKER_STATSADDRESS=127.0.0.1:0"},
			Extra: "destinationPolicy:\n  - topic: \">\"\n    deadLetterStrategy: {individual: true, destinationPerDurableSubscriber: true}\n" +
				"    nackPolicy: redeliver\n    redeliveryPolicy: {maximumRedeliveries: 1, initialRedeliveryDelay: 0, redeliveryDelay: 0}\n"})
		// app1 gives its message up by NACKing it past maximumRedeliveries.
		c := durConnect(t, b.Addr, "app1")
		id := durAttach(c, topic, "s1", "ack", "client-individual")
		durPublish(jmsDial(t, b.Addr), topic, true, []string{"retried"})
		c.nack(durExpect(c, id, "retried")[0])
		m := durExpect(c, id, "retried")[0]
		assert.Equal(t, "true", m.Header.Get("redelivered"))
		c.nack(m)
		c.leave()
		// app2 never got to see it: it was offline. It gets the message once, leaves
		// without acknowledging it twice: the second redelivery is one too many.
		c = durConnect(t, b.Addr, "app2")
		durAttach(c, topic, "s2")
		c.leave()
		durPublish(jmsDial(t, b.Addr), topic, true, []string{"abandoned"})
		for i := 0; i < 2; i++ {
			c = durConnect(t, b.Addr, "app2")
			id = durAttach(c, topic, "s2", "ack", "client-individual")
			durExpect(c, id, "abandoned")
			c.leave()
		}
		dead(t, b, "ActiveMQ.DLQ.Topic.orders.app1:s1", "retried")
		dead(t, b, "ActiveMQ.DLQ.Topic.orders.app2:s2", "abandoned")
		c = durConnect(t, b.Addr, "app2")
		id = durAttach(c, topic, "s2", "ack", "client-individual")
		durQuiet(c, id) // dead-lettered, not kept
		noQueue(t, b, "durable")
	})

	t.Run("suffix-and-topic", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    deadLetterStrategy: " +
			"{individual: true, topicPrefix: DEAD., topicSuffix: .X, useQueueForTopicMessages: false, destinationPerDurableSubscriber: true}\n"})
		watcher := jmsDial(t, b.Addr)
		wid := watcher.subscribe("/topic/DEAD.orders.app1:s1.X")
		nackOnce(t, b, "app1", "s1", "poison")
		d := durExpect(watcher, wid, "poison")[0]
		assert.Equal(t, "/topic/DEAD.orders.app1:s1.X", d.Header.Get("destination"))
		assert.Equal(t, topic, d.Header.Get("original-destination"))
		assert.True(t, strings.Contains(d.Header.Get("dlqDeliveryFailureCause"), "NACK"), "%v", d.Header)
	})
}

// statsQueues returns the names of the queues GET /stats lists (the broker must have
// BROKER_BROKER_STATSADDRESS set).
func statsQueues(t testing.TB, b *brokerProc) []string {
	t.Helper()
	var st struct {
		Destinations []struct{ Name string } `json:"destinations"`
	}
	getStats(t, statsAddr(t, b), &st)
	var out []string
	for _, d := range st.Destinations {
		if strings.HasPrefix(d.Name, "/queue/") {
			out = append(out, d.Name)
		}
	}
	require.NotEmpty(t, out, "no queue at all: the stats are not what the test expects")
	return out
}
