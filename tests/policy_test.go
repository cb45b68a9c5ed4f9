package tests

// Destination policy keys that apply to destinations beyond plain queues: tempQueue and
// tempTopic entries, defaultTimeToLive and expiry on topics, per-destination
// expireMessagesPeriod.

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTempQueuePolicyEntry: a tempQueue entry is what applies to temporary queues (not
// the queue ">" entry): its deadLetterStrategy keeps a NACKed non-persistent message of
// a temporary queue, which the queue ">" entry would drop.
func TestTempQueuePolicyEntry(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - queue: ">"
    deadLetterStrategy: {processNonPersistent: false}
  - tempQueue: true
    deadLetterStrategy: {processNonPersistent: true}
`})
	c := jmsDial(t, b.Addr)
	dlq := c.subscribe("/queue/ActiveMQ.DLQ")
	sub := c.subscribe("/temp-queue/replies", "ack", "client-individual")
	c.send("/temp-queue/replies", "answer")
	c.nack(c.next(sub))
	m := c.next(dlq)
	assert.Equal(t, "answer", string(m.Body))
	assert.Equal(t, "/temp-queue/replies", m.Header.Get("original-destination"))

	// A plain queue keeps the queue ">" entry: its NACKed non-persistent message is dropped.
	q := c.subscribe("/queue/plain", "ack", "client-individual")
	c.send("/queue/plain", "dropped")
	c.nack(c.next(q))
	c.sync()
	c.expectNone(dlq, 200*time.Millisecond)
}

// TestTopicDefaultTimeToLive: a topic entry's defaultTimeToLive gives the topic's
// messages an expires header, and a topic message that has expired is not delivered.
func TestTopicDefaultTimeToLive(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - topic: "prices.>"
    defaultTimeToLive: 1h
`})
	c := jmsDial(t, b.Addr)
	sub := c.subscribe("/topic/prices.eur")
	before := time.Now()
	c.send("/topic/prices.eur", "1.08")
	m := c.next(sub)
	expires, err := strconv.ParseInt(m.Header.Get("expires"), 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, expires, before.Add(time.Hour).UnixMilli(), "expires header %q", m.Header.Get("expires"))

	c.send("/topic/prices.eur", "stale", "expires", strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10))
	c.send("/topic/prices.eur", "1.09")
	assert.Equal(t, "1.09", string(c.next(sub).Body), "an expired topic message was delivered")
}
