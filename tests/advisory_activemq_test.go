package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdvisoryMatchesActiveMQ subscribes to the advisory topics on ActiveMQ 5.17 and
// on our broker, provokes the same events on both (connections, consumers of queues
// and topics, a durable subscription detached and deleted, a temporary queue, a
// message that expires into its dead-letter queue, a NACKed one, a slow topic
// subscriber, the connections' ends), and requires the same advisories after each
// step: the topics they come on, their headers (type, transformation,
// originBrokerName, consumerCount, consumerId, orignalMessageId) and the JSON fields a
// monitoring tool reads (the command's class, ids, destinations, prefetch, selector,
// counts, operation types, the message's fields and properties). Ids are compared by
// whose they are, not by value; what ActiveMQ fills from OpenWire alone (commandId,
// its "null" and "map" artefacts, marshalledProperties, sizes, timestamps) is not
// compared, nor a consumer's RemoveInfo's responseRequired, which says whether the
// frame that ended it asked for a receipt. The body is JSON whether or not the SUBSCRIBE asked for
// transformation:jms-advisory-json, on both.
func TestAdvisoryMatchesActiveMQ(t *testing.T) {
	for _, jar := range amqAdvisoryJars {
		if _, err := os.Stat(jar); err != nil {
			t.Fatalf("%s is missing: ActiveMQ's STOMP transport needs it for advisories (install Debian's libxstream-java and libjettison-java; the activemq package pulls them)", jar)
		}
	}
	amq := startActiveMQ(t, `<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="e2e" persistent="false" useJmx="false">
    <destinationPolicy>
      <policyMap>
        <policyEntries>
          <policyEntry queue=">" expireMessagesPeriod="200">
            <deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DLQ."/></deadLetterStrategy>
          </policyEntry>
          <policyEntry topic="SLOW.>" advisoryForSlowConsumers="true"/>
        </policyEntries>
      </policyMap>
    </destinationPolicy>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:`+amqStompPort+`"/>
    </transportConnectors>
  </broker>
</beans>
`)
	ours := startBroker(t, brokerConfig{Extra: `destinationPolicy:
  - queue: ">"
    expireMessagesPeriod: 200ms
    deadLetterStrategy: {individual: true, queuePrefix: "DLQ."}
  - topic: "SLOW.>"
    advisoryForSlowConsumers: true
`})
	want := advisoryScenario(t, "ActiveMQ", amq)
	got := advisoryScenario(t, "ours", ours.Addr)
	require.Equal(t, len(want), len(got))
	for i := range want {
		assert.Equal(t, want[i].lines, got[i].lines, "step %d, %s: the advisories differ (ActiveMQ's first)", i, want[i].name)
	}
}

// advisoryStep is what the monitor heard of one step of advisoryScenario, canonical.
type advisoryStep struct {
	name  string
	lines []string
}

// advisoryScenario runs the events of TestAdvisoryMatchesActiveMQ against the broker at
// addr and returns, step by step, what a monitor subscribed to the advisory topics
// heard, each advisory as a canonical line, sorted.
func advisoryScenario(t *testing.T, name, addr string) []advisoryStep {
	t.Logf("advisories of %s", name)
	const fenceTopic = "/topic/CMP.FENCE"
	cn := &canonical{labels: map[string]string{}}
	var steps []advisoryStep
	step := func(stepName string, m *rawConn, newConn string, before []advisory) {
		t.Helper()
		heard := append(before, fence(t, m, fenceTopic, len(steps))...)
		lines := make([]string, 0, len(heard))
		for _, a := range heard {
			lines = append(lines, cn.line(a, newConn))
		}
		slices.Sort(lines)
		for _, l := range lines {
			t.Logf("  %s: %s", stepName, l)
		}
		steps = append(steps, advisoryStep{stepName, lines})
	}
	// waitFor reads m until an advisory on dest, returning it and those before.
	waitFor := func(m *rawConn, dest string) []advisory {
		t.Helper()
		var got []advisory
		for {
			a := nextAdvisory(t, m)
			got = append(got, a)
			if a.Dest() == dest {
				return got
			}
		}
	}
	// send sends with content-length, as STOMP clients do, and returns the MESSAGEs
	// c got before the RECEIPT.
	send := func(c *rawConn, dest, receipt, body string, headers ...string) []*frame.Frame {
		t.Helper()
		f := frame.New("SEND", append([]string{"destination", dest, "receipt", receipt, "content-length", strconv.Itoa(len(body))}, headers...)...)
		f.Body = []byte(body)
		c.send(f)
		return untilReceipt(t, c, receipt)
	}
	// subscribe subscribes c without a receipt: with one, ActiveMQ's STOMP transport
	// sets the consumer's prefetch to 0 until the RECEIPT is out, and an advisory made
	// meanwhile may tell that 0. A transaction begun with a receipt and aborted after
	// it tells when the SUBSCRIBE was done.
	syncs := 0
	subscribe := func(c *rawConn, id, dest string, headers ...string) {
		t.Helper()
		c.send(frame.New("SUBSCRIBE", append([]string{"id", id, "destination", dest}, headers...)...))
		syncs++
		tx := "sync-" + strconv.Itoa(syncs)
		c.send(frame.New("BEGIN", "transaction", tx, "receipt", tx))
		for _, f := range untilReceipt(t, c, tx) {
			require.Equal(t, fenceTopic, f.Header.Get("destination"), "%v", f)
		}
		c.send(frame.New("ABORT", "transaction", tx, "receipt", tx+"-end"))
		expectReceipt(t, c, tx+"-end")
	}
	unsubscribe := func(c *rawConn, id string, headers ...string) {
		t.Helper()
		c.send(frame.New("UNSUBSCRIBE", append([]string{"id", id, "receipt", "u-" + id}, headers...)...))
		expectReceipt(t, c, "u-"+id)
	}

	m, _ := advConnect(t, addr)
	subscribe(m, "fence", fenceTopic)
	var replay []advisory
	for _, sub := range [][]string{
		{"conn", "Connection", "transformation", "jms-advisory-json"},
		{"queues", "Queue"},
		{"topics", "Topic", "transformation", "jms-advisory-json"},
		{"temps", "TempQueue"},
		{"qcons", "Consumer.Queue.>"},
		{"tcons", "Consumer.Topic.>", "transformation", "jms-advisory-json"},
		{"prod", "Producer.>"},
		{"expired", "Expired.Queue.>"},
		{"dlq", "MessageDLQd.>", "transformation", "jms-advisory-json"},
		{"slow", "SlowConsumer.Topic.>"},
	} {
		for _, f := range subscribeReceipted(t, m, sub[0], "/topic/ActiveMQ.Advisory."+sub[1], sub[2:]...) {
			replay = append(replay, parseAdvisory(t, f))
		}
	}
	step("the monitor subscribes: replays", m, "M", replay)

	c, _ := advConnect(t, addr, "client-id", "cmp-c", "login", "alice", "passcode", "secret")
	step("a client connects", m, "C", nil)

	subscribe(c, "q1", "/queue/CMP.Q", "activemq.prefetchSize", "7", "selector", "region = 'eu'")
	step("a queue consumer, creating the queue", m, "", nil)
	subscribe(c, "q2", "/queue/CMP.Q", "ack", "client-individual")
	step("a second queue consumer", m, "", nil)
	unsubscribe(c, "q1")
	step("the first one unsubscribes", m, "", nil)

	subscribe(c, "d1", "/topic/CMP.T", "activemq.subscriptionName", "sub1", "activemq.noLocal", "true", "activemq.priority", "5")
	step("a durable subscription, creating the topic", m, "", nil)
	unsubscribe(c, "d1")
	step("the durable subscription detaches", m, "", nil)
	unsubscribe(c, "d1", "activemq.subscriptionName", "sub1")
	step("the durable subscription is deleted", m, "", nil)

	subscribe(c, "tmp", "/temp-queue/replies")
	step("a temporary queue", m, "", nil)

	expires := time.Now().Add(300 * time.Millisecond).UnixMilli()
	send(c, "/queue/CMP.E", "e1", "soon stale", "persistent", "true", "expires", strconv.FormatInt(expires, 10),
		"correlation-id", "corr-1", "region", "eu")
	step("a message that will expire, creating its queue", m, "", nil)
	step("it expires into its dead-letter queue", m, "", waitFor(m, "/topic/ActiveMQ.Advisory.Expired.Queue.CMP.E"))

	subscribe(c, "n", "/queue/CMP.N", "ack", "client-individual")
	var msg *frame.Frame
	if early := send(c, "/queue/CMP.N", "n1", "rejected", "persistent", "true", "kind", "bad"); len(early) > 0 {
		msg = early[0]
	} else {
		msg = c.read()
	}
	require.Equal(t, "rejected", string(msg.Body), "%v", msg)
	step("a consumer of another queue gets a message", m, "", nil)
	c.send(frame.New("NACK", "id", msg.Header.Get("ack"), "receipt", "nack"))
	expectReceipt(t, c, "nack")
	step("it NACKs it into the dead-letter queue", m, "", nil)

	s, _ := advConnect(t, addr, "client-id", "cmp-s")
	subscribe(s, "lag", "/topic/SLOW.CMP", "ack", "client", "activemq.prefetchSize", "2")
	step("a slow subscriber connects and subscribes", m, "S", nil)
	for i := range 10 {
		send(c, "/topic/SLOW.CMP", "t"+strconv.Itoa(i), "tick")
	}
	step("it falls behind", m, "", waitFor(m, "/topic/ActiveMQ.Advisory.SlowConsumer.Topic.SLOW.CMP"))

	c.send(frame.New("DISCONNECT", "receipt", "bye"))
	for f := c.read(); f.Command != "RECEIPT"; f = c.read() {
	}
	step("the client disconnects", m, "", nil)
	s.send(frame.New("DISCONNECT", "receipt", "bye"))
	for f := s.read(); f.Command != "RECEIPT"; f = s.read() {
	}
	step("the slow subscriber disconnects", m, "", nil)
	return steps
}

// canonical turns advisories into lines that compare across brokers: the ids of
// connections become the scenario's names for them (M, C, S), a temporary
// destination's name its owner's and "temp", and only what both brokers fill is kept.
type canonical struct {
	labels map[string]string // connection id -> name
}

// conn is the name of connection id, learning it as newConn if it is new and newConn
// is set.
func (cn *canonical) conn(id, newConn string) string {
	if l, ok := cn.labels[id]; ok {
		return l
	}
	if newConn != "" {
		cn.labels[id] = newConn
		return newConn
	}
	return "unknown(" + id + ")"
}

// dest is a destination name with a temporary destination's owner-made name replaced.
func (cn *canonical) dest(s string) string {
	for id, l := range cn.labels {
		if i := strings.Index(s, id+":"); i >= 0 {
			return s[:i] + l + ":temp"
		}
	}
	return s
}

// line is the canonical form of a.
func (cn *canonical) line(a advisory, newConn string) string {
	parts := []string{"sub=" + a.Header("subscription"), "on=" + cn.dest(a.Dest()), a.Command,
		"type=" + a.Header("type"), "transformation=" + a.Header("transformation"),
		"originBrokerName=" + a.Header("originBrokerName")}
	for _, h := range []string{"consumerCount"} {
		if v := a.Header(h); v != "" {
			parts = append(parts, h+"="+v)
		}
	}
	if v := a.Header("orignalMessageId"); v != "" {
		parts = append(parts, "orignalMessageId=set")
	}
	if v := a.Header("consumerId"); v != "" {
		// connection id:session:value
		if i := strings.LastIndex(v, ":"); i > 0 {
			if j := strings.LastIndex(v[:i], ":"); j > 0 {
				v = cn.conn(v[:j], "") + v[j:]
			}
		}
		parts = append(parts, "consumerId="+v)
	}
	field := func(path string) string { return path + "=" + a.String(path) }
	destination := func(path string) []string {
		return []string{path + ".@class=" + a.String(path+".@class"), path + ".string=" + cn.dest(a.String(path+".string"))}
	}
	switch a.Command {
	case "ConnectionInfo":
		id := a.String("connectionId.value")
		clientID := a.String("clientId")
		if clientID == id {
			clientID = "(its connection id)"
		}
		parts = append(parts, "connectionId="+cn.conn(id, newConn), "clientId="+clientID,
			field("userName"), field("password"), field("responseRequired"))
	case "RemoveInfo":
		parts = append(parts, field("objectId.@class"), field("lastDeliveredSequenceId"))
		if a.String("objectId.@class") == "ConnectionId" {
			parts = append(parts, "objectId="+cn.conn(a.String("objectId.value"), ""), field("responseRequired"))
		} else {
			// A consumer's responseRequired is ActiveMQ's echo of whether the client's
			// frame that ended it asked for a receipt: not compared.
			parts = append(parts, "objectId="+cn.conn(a.String("objectId.connectionId"), "")+":"+
				a.String("objectId.sessionId")+":"+a.String("objectId.value"))
		}
	case "ConsumerInfo":
		parts = append(parts, "consumerId="+cn.conn(a.String("consumerId.connectionId"), "")+":"+
			a.String("consumerId.sessionId")+":"+a.String("consumerId.value"))
		parts = append(parts, destination("destination")...)
		parts = append(parts, field("prefetchSize"), "selector="+strings.TrimPrefix(a.String("selector"), "convert_string_expressions:"),
			field("subscriptionName"), field("noLocal"), field("exclusive"), field("priority"), field("browser"),
			field("dispatchAsync"), field("retroactive"), field("maximumPendingMessageLimit"))
	case "DestinationInfo":
		by := "none"
		if id := a.String("connectionId.value"); id != "" {
			by = cn.conn(id, "")
		}
		parts = append(parts, "connectionId="+by, field("operationType"))
		parts = append(parts, destination("destination")...)
	case "RemoveSubscriptionInfo":
		parts = append(parts, "connectionId="+cn.conn(a.String("connectionId.value"), ""), field("clientId"),
			field("subscriptionName"), field("responseRequired"))
	default: // a message
		parts = append(parts, destination("destination")...)
		parts = append(parts, field("correlationId"), field("persistent"), field("priority"), field("redeliveryCounter"),
			field("type"), field("groupID"), "expiration set="+strconv.FormatBool(a.String("expiration") != "0"))
		parts = append(parts, "properties="+canonicalProperties(a.Field("properties")))
	}
	return strings.Join(parts, " ")
}

// canonicalProperties is a message's properties, as XStream's map entries, sorted.
func canonicalProperties(v any) string {
	list, _ := v.([]any)
	var pairs []string
	for _, item := range list {
		entry := item.(map[string]any)["entry"]
		entries, ok := entry.([]any)
		if !ok {
			entries = []any{entry}
		}
		for _, e := range entries {
			kv := e.(map[string]any)["string"].([]any)
			pairs = append(pairs, fmt.Sprint(kv[0])+"="+fmt.Sprint(kv[1]))
		}
	}
	slices.Sort(pairs)
	b, _ := json.Marshal(pairs)
	return string(b)
}
