package tests

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Jolokia reads of the admin listener (docs/api.md, "Jolokia reads") end to end:
// the real binary, a queue filled over STOMP, the reads ActiveMQ users' monitoring
// scripts make with curl. Debian's ActiveMQ package has no web console (no Jetty, no
// Jolokia jars), so the shapes are checked against Jolokia 1.x's documented protocol
// and ActiveMQ's MBean and attribute names, not side by side.

// jolokia calls the admin listener as a script would and decodes the Jolokia answer
// (an object, or a list for a POSTed list) into v; it returns the HTTP status.
func jolokiaCall(t *testing.T, a *api, method, path, body string, v any, hdr ...string) int {
	t.Helper()
	status, b, h := a.call(method, path, body, hdr...)
	if status == http.StatusOK {
		assert.Equal(t, "text/plain;charset=utf-8", h.Get("Content-Type"))
		require.NoError(t, json.Unmarshal(b, v), "%s %s: %s", method, path, b)
	}
	return status
}

// TestJolokiaReads: QueueSize, EnqueueCount and ConsumerCount of a queue STOMP clients
// use, keys in ActiveMQ's order and in another; the broker's totals; a pattern read
// over every queue; a POSTed list; exec refused; 401 and 403 as the API's.
func TestJolokiaReads(t *testing.T) {
	pw := secPasswords()
	b := startSecBroker(t, secBroker{Env: []string{adminEnv}})
	a := newAPI(t, "http://"+statsAddr(t, b))
	const q = "org.apache.activemq:type=Broker,brokerName=e2e,destinationType=Queue,destinationName=orders"
	const canon = "org.apache.activemq:brokerName=e2e,destinationName=orders,destinationType=Queue,type=Broker"

	// As the API: 401 without credentials, 403 for a user of no admin group.
	status, _, h := a.call("GET", "/api/jolokia/read/"+q+"/QueueSize", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, h.Get("WWW-Authenticate"), "Basic ")
	a.user, a.pass = "user", pw["user"]
	status, _, _ = a.call("GET", "/api/jolokia/read/"+q+"/QueueSize", "")
	assert.Equal(t, http.StatusForbidden, status)
	status, _, _ = a.call("POST", "/api/jolokia", `{"type":"read","mbean":"`+q+`"}`)
	assert.Equal(t, http.StatusForbidden, status)
	a.user, a.pass = "system", pw["system"]

	// Five messages on orders; one consumer on orders.audit holds the other queue.
	prod := oursTarget(b).dial(t, "system")
	for i := range 5 {
		require.NoError(t, prod.Send("/queue/orders", "text/plain", []byte(strconv.Itoa(i)), stomp.SendOpt.Receipt))
	}
	cons := oursTarget(b).dial(t, "system")
	_, err := cons.Subscribe("/queue/orders.audit", stomp.AckClient)
	require.NoError(t, err)
	syncSubscriptions(t, cons)

	type answer struct {
		Request   map[string]any `json:"request"`
		Value     any            `json:"value"`
		Status    int            `json:"status"`
		Timestamp int64          `json:"timestamp"`
		ErrorType string         `json:"error_type"`
		Error     string         `json:"error"`
	}
	var r answer
	require.Equal(t, 200, jolokiaCall(t, a, "GET", "/api/jolokia/read/"+q+"/QueueSize", "", &r))
	assert.Equal(t, answer{Request: map[string]any{"mbean": canon, "attribute": "QueueSize", "type": "read"},
		Value: 5.0, Status: 200, Timestamp: r.Timestamp}, r)
	assert.Positive(t, r.Timestamp)

	r = answer{}
	jolokiaCall(t, a, "GET", "/api/jolokia/read/org.apache.activemq:destinationName=orders,type=Broker,destinationType=Queue,brokerName=e2e/EnqueueCount", "", &r)
	assert.Equal(t, 5.0, r.Value)
	jolokiaCall(t, a, "GET", "/api/jolokia/read/"+q+"/ConsumerCount", "", &r)
	assert.Equal(t, 0.0, r.Value)
	jolokiaCall(t, a, "GET", "/api/jolokia/read/org.apache.activemq:type=Broker,brokerName=e2e,destinationType=Queue,destinationName=orders.audit/ConsumerCount", "", &r)
	assert.Equal(t, 1.0, r.Value)

	// The broker MBean, several attributes at once.
	r = answer{}
	jolokiaCall(t, a, "GET", "/api/jolokia/read/org.apache.activemq:type=Broker,brokerName=e2e/BrokerName,TotalMessageCount,TotalConsumerCount,Queues", "", &r)
	v := r.Value.(map[string]any)
	assert.Equal(t, "e2e", v["BrokerName"])
	assert.GreaterOrEqual(t, v["TotalMessageCount"], 5.0)
	assert.GreaterOrEqual(t, v["TotalConsumerCount"], 1.0)
	assert.Contains(t, v["Queues"], map[string]any{"objectName": canon})

	// A pattern read: every queue's QueueSize, keyed by its name.
	r = answer{}
	jolokiaCall(t, a, "GET", "/api/jolokia/read/org.apache.activemq:type=Broker,brokerName=e2e,destinationType=Queue,destinationName=orders*/QueueSize", "", &r)
	assert.Equal(t, map[string]any{
		canon: map[string]any{"QueueSize": 5.0},
		"org.apache.activemq:brokerName=e2e,destinationName=orders.audit,destinationType=Queue,type=Broker": map[string]any{"QueueSize": 0.0},
	}, r.Value)

	// A POSTed list, with the Origin header ActiveMQ's Jolokia asks scripts for; the
	// exec in it is refused and nothing is removed.
	var rs []answer
	require.Equal(t, 200, jolokiaCall(t, a, "POST", "/api/jolokia/", `[
		{"type":"read","mbean":"`+q+`","attribute":["QueueSize","DequeueCount"]},
		{"type":"exec","mbean":"org.apache.activemq:type=Broker,brokerName=e2e","operation":"removeQueue(java.lang.String)","arguments":["orders"]},
		{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=e2e,destinationType=Queue,destinationName=nope","attribute":"QueueSize"}
	]`, &rs, "Origin", "http://localhost"))
	require.Len(t, rs, 3)
	assert.Equal(t, map[string]any{"QueueSize": 5.0, "DequeueCount": 0.0}, rs[0].Value)
	assert.Equal(t, 403, rs[1].Status)
	assert.Equal(t, "java.lang.Exception", rs[1].ErrorType)
	assert.Equal(t, 404, rs[2].Status)
	assert.Equal(t, "javax.management.InstanceNotFoundException", rs[2].ErrorType)

	r = answer{}
	require.Equal(t, 200, jolokiaCall(t, a, "GET", "/api/jolokia/exec/org.apache.activemq:type=Broker,brokerName=e2e/removeQueue/orders", "", &r))
	assert.Equal(t, 403, r.Status)
	assert.Nil(t, r.Value)
	jolokiaCall(t, a, "GET", "/api/jolokia/read/"+q+"/QueueSize", "", &r)
	assert.Equal(t, 5.0, r.Value, "the queue is still there, with its messages")
}
