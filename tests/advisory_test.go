package tests

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The advisory topics (ActiveMQ.Advisory.*) against the real binary, through raw STOMP
// frames; advisory_activemq_test.go holds the same events side by side with ActiveMQ.

// advisory is one advisory MESSAGE as a subscriber gets it.
type advisory struct {
	f *frame.Frame
	// Command is the class of the command the JSON body carries (ConnectionInfo...),
	// Fields its fields.
	Command string
	Fields  map[string]any
}

// Header is the value of header k.
func (a advisory) Header(k string) string { return a.f.Header.Get(k) }

// Dest is the advisory topic it came on.
func (a advisory) Dest() string { return a.f.Header.Get("destination") }

// Field is the value at a path of dotted field names ("destination.string").
func (a advisory) Field(path string) any {
	var v any = a.Fields
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// String is the field at path as a string ("" when absent; numbers as written).
func (a advisory) String(path string) string {
	switch v := a.Field(path).(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// parseAdvisory reads an advisory MESSAGE frame.
func parseAdvisory(t testing.TB, f *frame.Frame) advisory {
	t.Helper()
	require.Equal(t, "MESSAGE", f.Command, "%v", f)
	require.Equal(t, "Advisory", f.Header.Get("type"), "not an advisory: %v", f)
	d := json.NewDecoder(strings.NewReader(string(f.Body)))
	d.UseNumber()
	var body map[string]map[string]any
	require.NoError(t, d.Decode(&body), "advisory body %q", f.Body)
	require.Len(t, body, 1, "advisory body %q", f.Body)
	for k, v := range body {
		return advisory{f: f, Command: k, Fields: v}
	}
	panic("unreachable")
}

// nextAdvisory returns the next MESSAGE of c, which must be an advisory, skipping
// RECEIPTs.
func nextAdvisory(t testing.TB, c *rawConn) advisory {
	t.Helper()
	for {
		f := c.read()
		if f.Command == "RECEIPT" {
			continue
		}
		return parseAdvisory(t, f)
	}
}

// advConnect connects a raw client to addr and returns it with its session (connection
// id: none of these clients sends a client-id unless headers do).
func advConnect(t testing.TB, addr string, headers ...string) (*rawConn, string) {
	t.Helper()
	c := dialRaw(t, addr)
	f := c.connect(headers...)
	require.Equal(t, "CONNECTED", f.Command, "%v", f)
	return c, f.Header.Get("session")
}

// subscribeReceipted subscribes c with a receipt (and the headers, ack auto unless
// they say) and waits for it; MESSAGEs that come first are returned.
func subscribeReceipted(t testing.TB, c *rawConn, id, dest string, headers ...string) []*frame.Frame {
	t.Helper()
	c.send(frame.New("SUBSCRIBE", append([]string{"id", id, "destination", dest, "receipt", "sub-" + id}, headers...)...))
	return untilReceipt(t, c, "sub-"+id)
}

// untilReceipt reads c up to the RECEIPT of receipt and returns the MESSAGEs before it.
func untilReceipt(t testing.TB, c *rawConn, receipt string) []*frame.Frame {
	t.Helper()
	var before []*frame.Frame
	for {
		f := c.read()
		if f.Command == "RECEIPT" && f.Header.Get("receipt-id") == receipt {
			return before
		}
		require.Equal(t, "MESSAGE", f.Command, "waiting for RECEIPT %s: %v", receipt, f)
		before = append(before, f)
	}
}

// fence sends a message to fenceTopic, which c subscribes to, and returns the advisories
// c gets before it: with every event's advisories sent before the fence is, what a
// subscriber hears of them all, and nothing later.
func fence(t testing.TB, c *rawConn, fenceTopic string, n int) []advisory {
	t.Helper()
	body := "fence-" + strconv.Itoa(n)
	c.send(sendFrame(fenceTopic, "", body))
	var got []advisory
	for {
		f := c.read()
		switch {
		case f.Command == "RECEIPT":
		case f.Command == "MESSAGE" && f.Header.Get("destination") == fenceTopic:
			require.Equal(t, body, string(f.Body))
			return got
		default:
			got = append(got, parseAdvisory(t, f))
		}
	}
}

// advisoryHeaders checks what every advisory carries.
func advisoryHeaders(t testing.TB, a advisory, brokerName string) {
	t.Helper()
	assert.Equal(t, "Advisory", a.Header("type"))
	assert.Equal(t, "jms-advisory-json", a.Header("transformation"))
	assert.Equal(t, brokerName, a.Header("originBrokerName"))
	assert.NotEmpty(t, a.Header("originBrokerId"))
	assert.True(t, strings.HasPrefix(a.Header("originBrokerURL"), "stomp://127.0.0.1:"), "originBrokerURL %q", a.Header("originBrokerURL"))
	assert.NotContains(t, a.f.Header.Get("persistent"), "true", "advisories are not persistent")
}

// TestAdvisoryConnection: ActiveMQ.Advisory.Connection replays the open connections to
// a new subscriber, then tells of each CONNECT (ConnectionInfo, never the password) and
// each end (RemoveInfo); the body is the same with and without
// transformation:jms-advisory-json.
func TestAdvisoryConnection(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	m, mID := advConnect(t, b.Addr)
	replay := subscribeReceipted(t, m, "plain", "/topic/ActiveMQ.Advisory.Connection")
	replay = append(replay, subscribeReceipted(t, m, "json", "/topic/ActiveMQ.Advisory.Connection", "transformation", "jms-advisory-json")...)
	for len(replay) < 2 {
		replay = append(replay, m.read())
	}
	require.Len(t, replay, 2, "one replay per subscription: the monitor's own connection")
	for _, f := range replay {
		a := parseAdvisory(t, f)
		advisoryHeaders(t, a, "e2e")
		assert.Equal(t, "ConnectionInfo", a.Command)
		assert.Equal(t, mID, a.String("connectionId.value"))
		assert.Equal(t, mID, a.String("clientId"), "without a client-id, ActiveMQ's is the connection id")
	}

	c, cID := advConnect(t, b.Addr, "client-id", "adv-client", "login", "alice", "passcode", "s3cret")
	bodies := map[string]string{}
	for range 2 {
		a := nextAdvisory(t, m)
		bodies[a.Header("subscription")] = string(a.f.Body)
		assert.Equal(t, "/topic/ActiveMQ.Advisory.Connection", a.Dest())
		assert.Equal(t, "ConnectionInfo", a.Command)
		assert.Equal(t, cID, a.String("connectionId.value"))
		assert.Equal(t, "adv-client", a.String("clientId"))
		assert.Equal(t, "alice", a.String("userName"))
		assert.Equal(t, "", a.String("password"), "the password is never told")
		assert.NotContains(t, string(a.f.Body), "s3cret")
		assert.Contains(t, a.String("clientIp"), "127.0.0.1")
	}
	assert.Equal(t, bodies["plain"], bodies["json"], "the same JSON with and without transformation:jms-advisory-json")

	c.send(frame.New("DISCONNECT", "receipt", "bye"))
	expectReceipt(t, c, "bye")
	for range 2 {
		a := nextAdvisory(t, m)
		assert.Equal(t, "RemoveInfo", a.Command)
		assert.Equal(t, "ConnectionId", a.String("objectId.@class"))
		assert.Equal(t, cID, a.String("objectId.value"))
	}
}

// TestAdvisoryConsumers: consumers added and removed on ActiveMQ.Advisory.Consumer.*,
// with ActiveMQ's consumerCount after each event, the replay of the consumers already
// there to a new subscriber, and the durable subscription's detach (still counted) and
// deletion (RemoveSubscriptionInfo).
func TestAdvisoryConsumers(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	m, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, m, "q", "/topic/ActiveMQ.Advisory.Consumer.Queue.ORDERS")
	subscribeReceipted(t, m, "t", "/topic/ActiveMQ.Advisory.Consumer.Topic.>")

	c, cID := advConnect(t, b.Addr, "client-id", "cons")
	subscribeReceipted(t, c, "s1", "/queue/ORDERS", "activemq.prefetchSize", "7", "selector", "region = 'eu'")
	a := nextAdvisory(t, m)
	advisoryHeaders(t, a, "e2e")
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Consumer.Queue.ORDERS", a.Dest())
	assert.Equal(t, "1", a.Header("consumerCount"))
	assert.Equal(t, "ConsumerInfo", a.Command)
	assert.Equal(t, cID, a.String("consumerId.connectionId"))
	assert.Equal(t, "-1", a.String("consumerId.sessionId"))
	assert.Equal(t, "1", a.String("consumerId.value"))
	assert.Equal(t, "ActiveMQQueue", a.String("destination.@class"))
	assert.Equal(t, "ORDERS", a.String("destination.string"))
	assert.Equal(t, "7", a.String("prefetchSize"))
	assert.Equal(t, "region = 'eu'", a.String("selector"))

	subscribeReceipted(t, c, "s2", "/queue/ORDERS")
	a = nextAdvisory(t, m)
	assert.Equal(t, "2", a.Header("consumerCount"))
	assert.Equal(t, "2", a.String("consumerId.value"))
	assert.Equal(t, "1000", a.String("prefetchSize"), "the queue's default prefetch")

	c.send(frame.New("UNSUBSCRIBE", "id", "s1", "receipt", "u1"))
	expectReceipt(t, c, "u1")
	a = nextAdvisory(t, m)
	assert.Equal(t, "RemoveInfo", a.Command)
	assert.Equal(t, "1", a.Header("consumerCount"))
	assert.Equal(t, "ConsumerId", a.String("objectId.@class"))
	assert.Equal(t, "1", a.String("objectId.value"))

	// A late subscriber hears of the consumer still there, and only of that one.
	late, _ := advConnect(t, b.Addr)
	replay := subscribeReceipted(t, late, "late", "/topic/ActiveMQ.Advisory.Consumer.Queue.>")
	if len(replay) == 0 {
		replay = append(replay, late.read())
	}
	require.Len(t, replay, 1)
	r := parseAdvisory(t, replay[0])
	assert.Equal(t, "ConsumerInfo", r.Command)
	assert.Equal(t, "2", r.String("consumerId.value"))
	assert.Equal(t, "1", r.Header("consumerCount"))

	// A durable subscription: offline it is still a consumer of its topic, as ActiveMQ
	// counts it; deleted, it is told with a RemoveSubscriptionInfo.
	subscribeReceipted(t, c, "d1", "/topic/PRICES", "activemq.subscriptionName", "prices", "activemq.noLocal", "true", "activemq.priority", "5")
	a = nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Consumer.Topic.PRICES", a.Dest())
	assert.Equal(t, "ConsumerInfo", a.Command)
	assert.Equal(t, "prices", a.String("subscriptionName"))
	assert.Equal(t, "true", a.String("noLocal"))
	assert.Equal(t, "5", a.String("priority"))
	assert.Equal(t, "100", a.String("prefetchSize"), "a durable subscription's default prefetch")
	assert.Equal(t, "ActiveMQTopic", a.String("destination.@class"))
	c.send(frame.New("UNSUBSCRIBE", "id", "d1", "receipt", "u2"))
	expectReceipt(t, c, "u2")
	a = nextAdvisory(t, m)
	assert.Equal(t, "RemoveInfo", a.Command)
	assert.Equal(t, "1", a.Header("consumerCount"), "an offline durable subscription is still counted")
	c.send(frame.New("UNSUBSCRIBE", "id", "d1", "activemq.subscriptionName", "prices", "receipt", "u3"))
	expectReceipt(t, c, "u3")
	a = nextAdvisory(t, m)
	assert.Equal(t, "RemoveSubscriptionInfo", a.Command)
	assert.Equal(t, "0", a.Header("consumerCount"))
	assert.Equal(t, "cons", a.String("clientId"))
	assert.Equal(t, "prices", a.String("subscriptionName"))
	assert.Equal(t, cID, a.String("connectionId.value"))

	// Consumers of advisory topics are not announced: the late monitor's own
	// subscription never showed up above, nor does one more.
	subscribeReceipted(t, late, "more", "/topic/ActiveMQ.Advisory.Consumer.Topic.PRICES")

	// The connection's end removes its consumers.
	c.send(frame.New("DISCONNECT", "receipt", "bye"))
	expectReceipt(t, c, "bye")
	a = nextAdvisory(t, m)
	assert.Equal(t, "RemoveInfo", a.Command)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Consumer.Queue.ORDERS", a.Dest())
	assert.Equal(t, "0", a.Header("consumerCount"))
	assert.Equal(t, "2", a.String("objectId.value"))
}

// TestAdvisoryDestinations: ActiveMQ.Advisory.Queue and .Topic replay the destinations
// that exist to a new subscriber and tell of those created after; .TempQueue tells of
// a connection's temporary queue and of its end with the connection; the collector of
// inactive destinations removes a queue with operationType 1.
func TestAdvisoryDestinations(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - queue: "GC.>"
    gcInactiveDestinations: true
    inactiveTimeoutBeforeGC: 100ms
`})
	p, pID := advConnect(t, b.Addr)
	p.send(sendFrame("/queue/EXISTING.Q", "s1", "x"))
	expectReceipt(t, p, "s1")
	p.send(sendFrame("/topic/EXISTING.T", "s2", "x"))
	expectReceipt(t, p, "s2")

	m, mID := advConnect(t, b.Addr)
	subscribeReceipted(t, m, "fence", "/topic/FENCE")
	var replay []advisory
	for _, d := range []string{"q ActiveMQ.Advisory.Queue", "t ActiveMQ.Advisory.Topic", "tq ActiveMQ.Advisory.TempQueue"} {
		id, topic, _ := strings.Cut(d, " ")
		for _, f := range subscribeReceipted(t, m, id, "/topic/"+topic) {
			replay = append(replay, parseAdvisory(t, f))
		}
	}
	replay = append(replay, fence(t, m, "/topic/FENCE", 0)...)
	got := map[string]advisory{}
	for _, a := range replay {
		assert.Equal(t, "DestinationInfo", a.Command)
		assert.Equal(t, "0", a.String("operationType"))
		got[a.Header("subscription")+" "+a.String("destination.@class")+" "+a.String("destination.string")] = a
	}
	require.Len(t, got, 3, "the existing queue and topics, each to its own subscription: %v", replay)
	assert.Equal(t, pID, got["q ActiveMQQueue EXISTING.Q"].String("connectionId.value"), "the connection that made it")
	assert.Equal(t, pID, got["t ActiveMQTopic EXISTING.T"].String("connectionId.value"))
	assert.Equal(t, mID, got["t ActiveMQTopic FENCE"].String("connectionId.value"))

	// Created by a SEND, and removed by the collector once inactive.
	p.send(sendFrame("/queue/GC.A", "s3", "x"))
	expectReceipt(t, p, "s3")
	a := nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Queue", a.Dest())
	assert.Equal(t, "GC.A", a.String("destination.string"))
	assert.Equal(t, "0", a.String("operationType"))
	c, _ := advConnect(t, b.Addr)
	if early := subscribeReceipted(t, c, "drain", "/queue/GC.A"); len(early) == 0 {
		require.Equal(t, "x", string(c.read().Body))
	}
	c.send(frame.New("UNSUBSCRIBE", "id", "drain", "receipt", "u"))
	expectReceipt(t, c, "u")
	a = nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Queue", a.Dest())
	assert.Equal(t, "GC.A", a.String("destination.string"))
	assert.Equal(t, "1", a.String("operationType"), "removed")
	assert.Equal(t, pID, a.String("connectionId.value"), "ActiveMQ keeps the creator's id in the removal")

	// A temporary queue lives with its connection.
	subscribeReceipted(t, c, "tmp", "/temp-queue/replies")
	a = nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.TempQueue", a.Dest())
	assert.Equal(t, "ActiveMQTempQueue", a.String("destination.@class"))
	tempName := a.String("destination.string")
	assert.Contains(t, tempName, "replies")
	c.send(frame.New("DISCONNECT", "receipt", "bye"))
	expectReceipt(t, c, "bye")
	a = nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.TempQueue", a.Dest())
	assert.Equal(t, tempName, a.String("destination.string"))
	assert.Equal(t, "1", a.String("operationType"))
}

// TestAdvisoryExpiredAndDeadLettered: a queue message that expires is told on
// ActiveMQ.Advisory.MessageDLQd.Queue.<name> (it went to its dead-letter queue, which
// ActiveMQ.Advisory.Queue announces first) and then on .Expired.Queue.<name> with the
// orignalMessageId header; a NACKed one on .MessageDLQd; a topic message that expires
// waiting for a slow subscriber on .Expired.Topic.<name>. The body is the message as
// it was, without its body.
func TestAdvisoryExpiredAndDeadLettered(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - queue: ">"
    expireMessagesPeriod: 50ms
    deadLetterStrategy: {individual: true, queuePrefix: "DLQ."}
`})
	m, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, m, "q", "/topic/ActiveMQ.Advisory.Queue")
	subscribeReceipted(t, m, "exp", "/topic/ActiveMQ.Advisory.Expired.>")
	subscribeReceipted(t, m, "dlq", "/topic/ActiveMQ.Advisory.MessageDLQd.Queue.>")

	p, _ := advConnect(t, b.Addr)
	expires := time.Now().Add(300 * time.Millisecond).UnixMilli()
	p.send(sendFrame("/queue/ORDERS", "s1", "order", "persistent", "true", "expires", strconv.FormatInt(expires, 10),
		"correlation-id", "corr-1", "region", "eu", "JMSXGroupID", "g1"))
	expectReceipt(t, p, "s1")
	assert.Equal(t, "ORDERS", nextAdvisory(t, m).String("destination.string"))

	dlq := nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Queue", dlq.Dest())
	assert.Equal(t, "DLQ.ORDERS", dlq.String("destination.string"))
	assert.Nil(t, dlq.Field("connectionId"), "made by the broker")
	dead := nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.MessageDLQd.Queue.ORDERS", dead.Dest())
	expired := nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Expired.Queue.ORDERS", expired.Dest())
	for _, a := range []advisory{dead, expired} {
		advisoryHeaders(t, a, "e2e")
		assert.Equal(t, "ActiveMQBytesMessage", a.Command)
		assert.Equal(t, "ORDERS", a.String("destination.string"))
		assert.Equal(t, "ActiveMQQueue", a.String("destination.@class"))
		assert.Equal(t, strconv.FormatInt(expires, 10), a.String("expiration"))
		assert.Equal(t, "true", a.String("persistent"))
		assert.Equal(t, "corr-1", a.String("correlationId"))
		assert.Equal(t, "g1", a.String("groupID"))
		assert.Equal(t, "4", a.String("priority"))
		assert.NotContains(t, string(a.f.Body), "order\"", "no body")
		assert.JSONEq(t, `[{"entry":[{"string":["content-type","text/plain"]},{"string":["region","eu"]}]}]`, jsonOf(t, a.Field("properties")))
	}
	assert.NotEmpty(t, expired.Header("orignalMessageId"))
	assert.Equal(t, expired.Header("orignalMessageId"), expired.String("messageId.textView"))
	assert.Empty(t, dead.Header("orignalMessageId"), "ActiveMQ sets it on Expired only")

	// A NACKed message goes to the DLQ.
	c, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, c, "n", "/queue/NACKED", "ack", "client-individual")
	assert.Equal(t, "NACKED", nextAdvisory(t, m).String("destination.string"))
	p.send(sendFrame("/queue/NACKED", "s2", "bad", "persistent", "true"))
	expectReceipt(t, p, "s2")
	msg := c.read()
	require.Equal(t, "MESSAGE", msg.Command, "%v", msg)
	c.send(frame.New("NACK", "id", msg.Header.Get("ack"), "receipt", "nk"))
	expectReceipt(t, c, "nk")
	assert.Equal(t, "DLQ.NACKED", nextAdvisory(t, m).String("destination.string"))
	a := nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.MessageDLQd.Queue.NACKED", a.Dest())
	assert.Equal(t, msg.Header.Get("message-id"), a.String("messageId.textView"))

	// A topic message that expires while it waits for a subscriber without credit.
	s, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, s, "slow", "/topic/TICKS", "ack", "client", "activemq.prefetchSize", "1")
	p.send(sendFrame("/topic/TICKS", "s3", "first"))
	expectReceipt(t, p, "s3")
	first := s.read()
	require.Equal(t, "first", string(first.Body))
	stale := time.Now().Add(100 * time.Millisecond).UnixMilli()
	p.send(sendFrame("/topic/TICKS", "s4", "stale", "expires", strconv.FormatInt(stale, 10)))
	expectReceipt(t, p, "s4")
	eventually(t, 5*time.Second, "the waiting topic message's expiry to pass", func() bool {
		return time.Now().UnixMilli() > stale
	})
	// The ACK gives the subscriber credit: the expired message is dropped, not sent.
	s.send(frame.New("ACK", "id", first.Header.Get("ack"), "receipt", "ack"))
	expectReceipt(t, s, "ack")
	a = nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Expired.Topic.TICKS", a.Dest())
	assert.Equal(t, "ActiveMQTopic", a.String("destination.@class"))
	assert.NotEmpty(t, a.Header("orignalMessageId"))
}

// jsonOf is v in JSON.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestAdvisorySlowConsumer: with advisoryForSlowConsumers, a topic subscriber with more
// than its prefetch of messages waiting is told once on
// ActiveMQ.Advisory.SlowConsumer.Topic.<name> (ConsumerInfo, header consumerId); the
// slow-consumer strategy that aborts it then removes it as a consumer.
func TestAdvisorySlowConsumer(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - topic: "FEED.>"
    advisoryForSlowConsumers: true
    slowConsumerStrategy:
      abortSlowConsumerStrategy: {maxSlowDuration: 200ms, checkPeriod: 50ms}
`})
	m, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, m, "slow", "/topic/ActiveMQ.Advisory.SlowConsumer.Topic.>")
	subscribeReceipted(t, m, "cons", "/topic/ActiveMQ.Advisory.Consumer.Topic.FEED.A")

	s, sID := advConnect(t, b.Addr)
	subscribeReceipted(t, s, "lagging", "/topic/FEED.A", "ack", "client", "activemq.prefetchSize", "2")
	assert.Equal(t, "ConsumerInfo", nextAdvisory(t, m).Command)
	p, _ := advConnect(t, b.Addr)
	for i := range 10 {
		p.send(sendFrame("/topic/FEED.A", "s"+strconv.Itoa(i), "tick"))
		expectReceipt(t, p, "s"+strconv.Itoa(i))
	}
	a := nextAdvisory(t, m)
	advisoryHeaders(t, a, "e2e")
	assert.Equal(t, "/topic/ActiveMQ.Advisory.SlowConsumer.Topic.FEED.A", a.Dest())
	assert.Equal(t, "ConsumerInfo", a.Command)
	assert.Equal(t, sID+":-1:1", a.Header("consumerId"))
	assert.Equal(t, sID, a.String("consumerId.connectionId"))
	assert.Equal(t, "FEED.A", a.String("destination.string"))
	assert.Equal(t, "2", a.String("prefetchSize"))

	// Aborted by the strategy: no longer a consumer.
	a = nextAdvisory(t, m)
	assert.Equal(t, "/topic/ActiveMQ.Advisory.Consumer.Topic.FEED.A", a.Dest())
	assert.Equal(t, "RemoveInfo", a.Command)
	assert.Equal(t, "0", a.Header("consumerCount"))
}

// TestAdvisoryProducerTopicsSilent: ActiveMQ announces no STOMP producer (a STOMP
// connection's producer has no destination, and anonymous producers are not
// announced), so the Producer topics stay silent while messages are sent.
func TestAdvisoryProducerTopicsSilent(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	m, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, m, "fence", "/topic/FENCE")
	subscribeReceipted(t, m, "prod", "/topic/ActiveMQ.Advisory.Producer.>")
	subscribeReceipted(t, m, "q", "/topic/ActiveMQ.Advisory.Queue")
	p, _ := advConnect(t, b.Addr)
	p.send(sendFrame("/queue/WORK", "s1", "x"))
	expectReceipt(t, p, "s1")
	p.send(sendFrame("/topic/NEWS", "s2", "x"))
	expectReceipt(t, p, "s2")
	got := fence(t, m, "/topic/FENCE", 1)
	require.Len(t, got, 1, "only the new queue: %v", got)
	assert.Equal(t, "q", got[0].Header("subscription"))
}

// TestAdvisorySupportOff: with broker.advisorySupport false the advisory topics are
// topics like others: nothing is published on them, not even a replay.
func TestAdvisorySupportOff(t *testing.T) {
	b := startBroker(t, brokerConfig{Env: []string{"BROKER_BROKER_ADVISORYSUPPORT=false"}})
	m, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, m, "fence", "/topic/FENCE")
	for _, d := range []string{"Connection", "Queue", "Topic", "Consumer.>", ">"} {
		subscribeReceipted(t, m, d, "/topic/ActiveMQ.Advisory."+d)
	}
	c, _ := advConnect(t, b.Addr)
	subscribeReceipted(t, c, "w", "/queue/WORK")
	c.send(frame.New("DISCONNECT", "receipt", "bye"))
	expectReceipt(t, c, "bye")
	// A client may still publish on an advisory topic, as on any topic: its message is
	// all that comes, to the subscription of its name and to the wildcard one.
	m.send(sendFrame("/topic/ActiveMQ.Advisory.Queue", "s", "hand-made"))
	m.send(sendFrame("/topic/FENCE", "", "fence"))
	var got []string
	for {
		f := m.read()
		if f.Command == "RECEIPT" {
			continue
		}
		require.Equal(t, "MESSAGE", f.Command, "%v", f)
		if f.Header.Get("destination") == "/topic/FENCE" {
			break
		}
		got = append(got, f.Header.Get("subscription")+" "+string(f.Body))
	}
	assert.ElementsMatch(t, []string{"Queue hand-made", "> hand-made"}, got, "nothing was published but the client's own message")
}

// TestAdvisoryWildcardAndAuthorization: advisory topics are topics like others for
// authorization. A user with read on ActiveMQ.Advisory.> hears them through the
// wildcard >; one without hears none through the same wildcard, nor may it subscribe to
// one by name; the broker publishes them with no write right of anyone's.
func TestAdvisoryWildcardAndAuthorization(t *testing.T) {
	b := startSecBroker(t, secBroker{Plugins: `plugins:
  simpleAuthentication:
    users:
      - {username: mon, password: mon-pw, groups: [monitors]}
      - {username: app, password: app-pw, groups: [apps]}
  authorization:
    entries:
      - {topic: "ActiveMQ.Advisory.>", read: [monitors], admin: [monitors]}
      - {topic: "APP.>", read: [apps, monitors], write: [apps, monitors], admin: [apps, monitors]}
      - {queue: "APP.>", read: [apps], write: [apps], admin: [apps]}
`})
	login := func(user string) *rawConn {
		c, _ := advConnect(t, b.Addr, "login", user, "passcode", user+"-pw")
		return c
	}
	mon := login("mon")
	subscribeReceipted(t, mon, "fence", "/topic/APP.FENCE")
	subscribeReceipted(t, mon, "all", "/topic/>")
	app := login("app")
	subscribeReceipted(t, app, "fence", "/topic/APP.FENCE2")
	subscribeReceipted(t, app, "all", "/topic/>")
	app.send(subscribeFrame("named", "/topic/ActiveMQ.Advisory.Queue", "r-named"))
	expectError(t, app, "User app is not authorized to read from: topic://ActiveMQ.Advisory.Queue", "r-named")

	app.send(sendFrame("/queue/APP.work", "s1", "x"))
	expectReceipt(t, app, "s1")

	got := fence(t, mon, "/topic/APP.FENCE", 1)
	var dests []string
	for _, a := range got {
		dests = append(dests, a.Dest())
	}
	assert.Contains(t, dests, "/topic/ActiveMQ.Advisory.Connection", "mon hears app's connection")
	assert.Contains(t, dests, "/topic/ActiveMQ.Advisory.Queue", "and the queue app made")
	assert.Contains(t, dests, "/topic/ActiveMQ.Advisory.Consumer.Topic.>", "and app's wildcard consumer")
	// app heard none of that (only the messages of APP.> topics) up to its fence.
	app.send(sendFrame("/topic/APP.FENCE2", "", "fence"))
	for {
		f := app.read()
		if f.Command != "MESSAGE" {
			continue
		}
		require.NotContains(t, f.Header.Get("destination"), "ActiveMQ.Advisory", "app heard an advisory: %v", f)
		if f.Header.Get("destination") == "/topic/APP.FENCE2" {
			break
		}
	}
}
