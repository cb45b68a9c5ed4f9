package tests

import (
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/admin"
)

// metricSum is the sum of the /metrics samples of name whose labels include every
// label pair given, and whether there is one.
func metricSum(body, name string, labels ...string) (sum float64, found bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{([^}]*)\} (\S+)$`)
next:
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(","+m[1]+",", ","+labels[i]+`="`+labels[i+1]+`",`) {
				continue next
			}
		}
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// TestOpenWireOperations: operators see an OpenWire client as they see a STOMP one:
// the admin API's connections (protocol, client id, remote address), the console's
// connections page, the metrics with protocol="openwire", and the advisories of its
// connection and consumers heard by a STOMP subscriber.
func TestOpenWireOperations(t *testing.T) {
	b := startSecBroker(t, secBroker{Open: true, Env: []string{adminEnv}, Connectors: []string{
		"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0",
	}})
	stompAddr, owAddr := b.connectorAddr("stomp"), b.connectorAddr("openwire")
	a := newAPI(t, "http://"+statsAddr(t, b))
	client, q := owName(t, "client"), owName(t, "q")
	wait := startOW(t, nil, "tcp://"+owAddr, "hold", "dest="+q, "client="+client)

	// Metrics: the connection, the message it sent and the one it got, once it got it.
	var metrics string
	owCounts := func() (conns, opened, received, delivered float64) {
		status, body, _ := a.call("GET", "/metrics", "")
		require.Equal(t, http.StatusOK, status)
		metrics = string(body)
		conns, _ = metricSum(metrics, "broker_connections", "protocol", "openwire")
		opened, _ = metricSum(metrics, "broker_connections_opened_total", "protocol", "openwire")
		received, _ = metricSum(metrics, "broker_messages_received_total", "protocol", "openwire")
		delivered, _ = metricSum(metrics, "broker_messages_delivered_total", "protocol", "openwire")
		return conns, opened, received, delivered
	}
	eventually(t, raceScaled(30*time.Second), "the Java client's message sent and received", func() bool {
		_, _, received, delivered := owCounts()
		return received == 1 && delivered == 1
	})
	conns, opened, _, _ := owCounts()
	assert.Equal(t, []float64{1, 1}, []float64{conns, opened}, "%s", metrics)

	// Admin API: the client's connection.
	var cs []admin.Connection
	a.get("/api/connections", &cs)
	require.Len(t, cs, 1, "%+v", cs)
	java := cs[0]
	assert.Equal(t, client, java.ClientID)
	assert.Equal(t, "openwire", java.Protocol)
	assert.Equal(t, "openwire", java.Connector)
	assert.Equal(t, "12", java.Version)
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, java.Remote)

	// The console's connections page.
	status, page, _ := a.call("GET", "/connections", "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(page), client)
	assert.Contains(t, string(page), "openwire 12")

	// Advisories, heard over STOMP: what is there on subscribing, then the client's
	// consumer and connection going.
	adv, _ := advConnect(t, stompAddr)
	fenceTopic := "/topic/" + owName(t, "fence")
	subscribeReceipted(t, adv, "fence", fenceTopic)
	var heard []advisory
	for i, topic := range []string{"ActiveMQ.Advisory.Connection", "ActiveMQ.Advisory.Consumer.Queue." + q} {
		for _, f := range subscribeReceipted(t, adv, strconv.Itoa(i), "/topic/"+topic) {
			heard = append(heard, parseAdvisory(t, f))
		}
	}
	heard = append(heard, fence(t, adv, fenceTopic, 1)...)
	var connInfo, consInfo *advisory
	for i, h := range heard {
		switch {
		case h.Command == "ConnectionInfo" && h.String("clientId") == client:
			connInfo = &heard[i]
		case h.Command == "ConsumerInfo" && h.String("destination.string") == q:
			consInfo = &heard[i]
		}
	}
	require.NotNil(t, connInfo, "no ConnectionInfo advisory of %s in %v", client, heard)
	assert.Equal(t, java.ID, connInfo.String("connectionId.value"))
	require.NotNil(t, consInfo, "no ConsumerInfo advisory of queue://%s in %v", q, heard)

	release := dial(t, stompAddr)
	require.NoError(t, release.Send("/queue/"+q+".release", "text/plain", []byte("release"), stomp.SendOpt.Receipt))
	r := wait()
	assert.Equal(t, "held", r.get("received"))
	assert.Equal(t, "true", r.get("released"))
	removed := map[string]bool{}
	n := 1
	eventually(t, 10*time.Second, "the advisories of the client's consumer and connection going", func() bool {
		n++
		for _, h := range fence(t, adv, fenceTopic, n) {
			if h.Command == "RemoveInfo" {
				removed[strings.TrimPrefix(h.Dest(), "/topic/")] = true
			}
		}
		return removed["ActiveMQ.Advisory.Connection"] && removed["ActiveMQ.Advisory.Consumer.Queue."+q]
	})
}

// TestOpenWireProducerAdvisories: a STOMP subscriber of ActiveMQ.Advisory.Producer.Queue.Q
// hears an OpenWire client's producer of Q come (ProducerInfo, producerCount 1) and go
// (RemoveInfo, producerCount 0); one that subscribes while it is there hears it first,
// the same ProducerInfo (its sentCount aside).
func TestOpenWireProducerAdvisories(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		q := owName(t, "q")
		topic := "/topic/ActiveMQ.Advisory.Producer.Queue." + q
		first, _ := advConnect(t, b.Stomp)
		subscribeReceipted(t, first, "1", topic)
		wait := startOW(t, nil, b.URL, "hold", "dest="+q, "client="+owName(t, "client"))
		added := nextAdvisory(t, first)
		t.Logf("%s: %s\n%s", tg.name, added.f.Header, added.f.Body)
		assert.Equal(t, "ProducerInfo", added.Command)
		assert.Equal(t, "1", added.Header("producerCount"))
		assert.Equal(t, q, added.String("destination.string"))
		assert.Equal(t, "ActiveMQQueue", added.String("destination.@class"))

		late, _ := advConnect(t, b.Stomp)
		fenceTopic := "/topic/" + owName(t, "fence")
		subscribeReceipted(t, late, "fence", fenceTopic)
		var replayed []advisory
		for _, f := range subscribeReceipted(t, late, "1", topic) {
			replayed = append(replayed, parseAdvisory(t, f))
		}
		replayed = append(replayed, fence(t, late, fenceTopic, 1)...)
		require.Len(t, replayed, 1)
		// The same ProducerInfo, but for sentCount: ActiveMQ replays its live copy of it,
		// whose count has grown by the time it is written if the client sent meanwhile.
		want, got := maps.Clone(added.Fields), maps.Clone(replayed[0].Fields)
		delete(want, "sentCount")
		delete(got, "sentCount")
		assert.Equal(t, want, got)

		release := dial(t, b.Stomp)
		require.NoError(t, release.Send("/queue/"+q+".release", "text/plain", []byte("release"), stomp.SendOpt.Receipt))
		assert.Equal(t, "true", wait().get("released"))
		removed := nextAdvisory(t, first)
		t.Logf("%s: %s\n%s", tg.name, removed.f.Header, removed.f.Body)
		assert.Equal(t, "RemoveInfo", removed.Command)
		assert.Equal(t, "0", removed.Header("producerCount"))
		assert.Equal(t, "ProducerId", removed.String("objectId.@class"))
		assert.Equal(t, added.Field("producerId.connectionId"), removed.Field("objectId.connectionId"))
	})
}
