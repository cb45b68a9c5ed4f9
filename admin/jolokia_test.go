package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/security"
)

// jolokiaBackend is a fake broker with two queues and a topic.
type jolokiaBackend struct {
	fakeBackend
}

func (*jolokiaBackend) Overview() Overview {
	return Overview{Name: "localhost", Version: "1.2.3", Started: time.UnixMilli(1700000000000), Uptime: 3725,
		MemoryUsed: 256, MemoryLimit: 1024, StoreUsed: 10, StoreLimit: 100, Connections: 3}
}

func (*jolokiaBackend) Destinations(kind string) []Destination {
	return []Destination{
		{Name: "/queue/orders", Type: "queue", Messages: 7, Enqueued: 10, Dequeued: 3, Dispatched: 2, Expired: 1, Consumers: 2, Producers: 1, Memory: 128},
		{Name: "/queue/a,b=c", Type: "queue", Messages: 1, Enqueued: 1},
		{Name: "/topic/prices", Type: "topic", Enqueued: 5, Dequeued: 5, Consumers: 1},
		{Name: "events", Type: "stream", Messages: 99},
	}
}

func jolokiaServer(t *testing.T, be Reader, sec *security.Service) *httptest.Server {
	t.Helper()
	s, err := New(Options{Backend: be, Security: sec})
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

const (
	jBroker = "org.apache.activemq:type=Broker,brokerName=localhost"
	jOrders = "org.apache.activemq:brokerName=localhost,destinationName=orders,destinationType=Queue,type=Broker"
)

func jolokiaGet(t *testing.T, url string, hdr ...string) map[string]any {
	t.Helper()
	resp, body := do(t, nil, "GET", url, "", hdr...)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "text/plain;charset=utf-8", resp.Header.Get("Content-Type"))
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	return m
}

// TestJolokiaRead: ActiveMQ's MBean names, keys in any order, one attribute, several,
// all, an inner path, ActiveMQ's name encoding, and Jolokia's response shape.
func TestJolokiaRead(t *testing.T) {
	ts := jolokiaServer(t, &jolokiaBackend{}, nil)
	base := ts.URL + "/api/jolokia/read/"

	m := jolokiaGet(t, base+"org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=orders/QueueSize")
	assert.Equal(t, map[string]any{"mbean": jOrders, "attribute": "QueueSize", "type": "read"}, m["request"])
	assert.EqualValues(t, 7, m["value"])
	assert.EqualValues(t, 200, m["status"])
	assert.InDelta(t, float64(time.Now().Unix()), m["timestamp"], 5)
	assert.Len(t, m, 4)

	// Keys in another order, quoted values: the same MBean.
	m = jolokiaGet(t, base+`org.apache.activemq:destinationName="orders",destinationType=Queue,brokerName=localhost,type=Broker/EnqueueCount`)
	assert.EqualValues(t, 10, m["value"])

	for attr, want := range map[string]any{"DequeueCount": 3, "DispatchCount": 5, "InFlightCount": 2, "ExpiredCount": 1,
		"ConsumerCount": 2, "ProducerCount": 1, "MemoryUsageByteCount": 128, "MemoryLimit": 1024, "MemoryPercentUsage": 12, "Name": "orders"} {
		m = jolokiaGet(t, base+jOrders+"/"+attr)
		assert.EqualValues(t, want, m["value"], attr)
	}

	// Several attributes (comma-separated), and all of them.
	m = jolokiaGet(t, base+jOrders+"/QueueSize,ConsumerCount")
	assert.Equal(t, map[string]any{"QueueSize": 7.0, "ConsumerCount": 2.0}, m["value"])
	assert.Equal(t, []any{"QueueSize", "ConsumerCount"}, m["request"].(map[string]any)["attribute"])
	m = jolokiaGet(t, base+jOrders)
	assert.Len(t, m["value"], 12)

	// The broker.
	m = jolokiaGet(t, base+jBroker)
	v := m["value"].(map[string]any)
	assert.Equal(t, "localhost", v["BrokerName"])
	assert.Equal(t, "1.2.3", v["BrokerVersion"])
	assert.Equal(t, "1 hour 2 minutes", v["Uptime"])
	assert.EqualValues(t, 3725000, v["UptimeMillis"])
	assert.EqualValues(t, 3, v["CurrentConnectionsCount"])
	assert.EqualValues(t, 3, v["TotalConsumerCount"])
	assert.EqualValues(t, 16, v["TotalEnqueueCount"])
	assert.EqualValues(t, 8, v["TotalDequeueCount"])
	assert.EqualValues(t, 8, v["TotalMessageCount"])
	assert.EqualValues(t, 25, v["MemoryPercentUsage"])
	assert.EqualValues(t, 10, v["StorePercentUsage"])
	assert.EqualValues(t, 100, v["StoreLimit"])
	assert.Equal(t, []any{
		map[string]any{"objectName": jOrders},
		map[string]any{"objectName": "org.apache.activemq:brokerName=localhost,destinationName=a_b&amp;c,destinationType=Queue,type=Broker"},
	}, v["Queues"])
	assert.Equal(t, []any{map[string]any{"objectName": "org.apache.activemq:brokerName=localhost,destinationName=prices,destinationType=Topic,type=Broker"}}, v["Topics"])

	// canonicalNaming=false: the names as ActiveMQ registers them.
	m = jolokiaGet(t, base+jBroker+"/Topics?canonicalNaming=false")
	assert.Equal(t, []any{map[string]any{"objectName": "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Topic,destinationName=prices"}}, m["value"])

	// An inner path.
	m = jolokiaGet(t, base+jBroker+"/Queues/0/objectName")
	assert.Equal(t, jOrders, m["value"])

	// A name with an encoded character, escaped with Jolokia's "!" or percent-encoded.
	m = jolokiaGet(t, base+"org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=a_b&amp;c/QueueSize")
	assert.EqualValues(t, 1, m["value"])
}

// TestJolokiaPattern: a pattern read answers {name: {attribute: value}}; search lists
// names; no match is Jolokia's 404.
func TestJolokiaPattern(t *testing.T) {
	ts := jolokiaServer(t, &jolokiaBackend{}, nil)
	base := ts.URL + "/api/jolokia/"

	m := jolokiaGet(t, base+"read/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=*/QueueSize")
	assert.EqualValues(t, 200, m["status"])
	assert.Equal(t, map[string]any{
		jOrders: map[string]any{"QueueSize": 7.0},
		"org.apache.activemq:brokerName=localhost,destinationName=a_b&amp;c,destinationType=Queue,type=Broker": map[string]any{"QueueSize": 1.0},
	}, m["value"])

	// ",*" and a glob in a value; the broker has no QueueSize and is left out.
	m = jolokiaGet(t, base+"read/org.apache.activemq:brokerName=local*,*/QueueSize,EnqueueCount")
	assert.Len(t, m["value"], 3)
	assert.Equal(t, map[string]any{"QueueSize": 0.0, "EnqueueCount": 5.0},
		m["value"].(map[string]any)["org.apache.activemq:brokerName=localhost,destinationName=prices,destinationType=Topic,type=Broker"])

	// brokerName=* without ",*": the broker MBeans only.
	m = jolokiaGet(t, base+"read/org.apache.activemq:type=Broker,brokerName=*/Queues")
	assert.Equal(t, map[string]any{"org.apache.activemq:brokerName=localhost,type=Broker": map[string]any{"Queues": []any{
		map[string]any{"objectName": jOrders},
		map[string]any{"objectName": "org.apache.activemq:brokerName=localhost,destinationName=a_b&amp;c,destinationType=Queue,type=Broker"},
	}}}, m["value"])

	m = jolokiaGet(t, base+"search/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Topic,*")
	assert.Equal(t, []any{"org.apache.activemq:brokerName=localhost,destinationName=prices,destinationType=Topic,type=Broker"}, m["value"])

	m = jolokiaGet(t, base+"read/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=nope*/QueueSize")
	assert.EqualValues(t, 404, m["status"])
	assert.Equal(t, "javax.management.InstanceNotFoundException", m["error_type"])
}

// TestJolokiaErrors: Jolokia's errors with HTTP 200; exec, write and list refused
// with 403 whatever the MBean.
func TestJolokiaErrors(t *testing.T) {
	ts := jolokiaServer(t, &jolokiaBackend{}, nil)
	base := ts.URL + "/api/jolokia/"
	for _, tc := range []struct {
		path      string
		status    int
		errorType string
	}{
		{"read/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=missing/QueueSize", 404, "javax.management.InstanceNotFoundException"},
		{"read/org.apache.activemq:type=Broker,brokerName=other/BrokerName", 404, "javax.management.InstanceNotFoundException"},
		{"read/" + jOrders + "/Nope", 404, "javax.management.AttributeNotFoundException"},
		{"read/" + jOrders + "/QueueSize,Nope", 404, "javax.management.AttributeNotFoundException"},
		{"read/not-a-name/X", 400, "javax.management.MalformedObjectNameException"},
		{"read/org.apache.activemq:type=Broker,type=Broker/X", 400, "javax.management.MalformedObjectNameException"},
		{"read/org.apache.activemq:type=\"Broker/X", 400, "javax.management.MalformedObjectNameException"},
		{"exec/" + jBroker + "/addQueue/x", 403, "java.lang.Exception"},
		{"exec/java.lang:type=Runtime/getName", 403, "java.lang.Exception"},
		{"write/" + jOrders + "/MemoryLimit/1", 403, "java.lang.Exception"},
		{"list", 403, "java.lang.Exception"},
		{"frobnicate/x", 400, "java.lang.IllegalArgumentException"},
	} {
		m := jolokiaGet(t, base+tc.path)
		assert.EqualValues(t, tc.status, m["status"], tc.path)
		assert.Equal(t, tc.errorType, m["error_type"], tc.path)
		assert.Contains(t, m["error"], tc.errorType+" : ", tc.path)
		assert.NotContains(t, m, "value", tc.path)
	}

	m := jolokiaGet(t, ts.URL+"/api/jolokia/version")
	assert.EqualValues(t, 200, m["status"])
	assert.Equal(t, "7.2", m["value"].(map[string]any)["protocol"])
	m = jolokiaGet(t, ts.URL+"/api/jolokia")
	assert.Equal(t, map[string]any{"type": "version"}, m["request"])
}

// TestJolokiaPost: one request, a list (each answered, errors among them), exec in a
// list refused, and a body that is not JSON.
func TestJolokiaPost(t *testing.T) {
	fake := &jolokiaBackend{}
	ts := jolokiaServer(t, fake, nil)
	url := ts.URL + "/api/jolokia"

	resp, body := do(t, nil, "POST", url, `{"type":"read","mbean":"`+jOrders+`","attribute":"QueueSize"}`)
	require.Equal(t, 200, resp.StatusCode)
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &one))
	assert.EqualValues(t, 7, one["value"])
	assert.Equal(t, map[string]any{"type": "read", "mbean": jOrders, "attribute": "QueueSize"}, one["request"])

	resp, body = do(t, nil, "POST", url+"/", `[
		{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=localhost","attribute":["TotalMessageCount","BrokerName"]},
		{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=nope"},
		{"type":"exec","mbean":"org.apache.activemq:type=Broker,brokerName=localhost","operation":"removeQueue","arguments":["orders"]},
		{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=*","attribute":"QueueSize","config":{"canonicalNaming":false}},
		{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=localhost","attribute":"Topics","config":{"canonicalNaming":false}},
		{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=localhost","attribute":"Topics"}
	]`)
	require.Equal(t, 200, resp.StatusCode)
	var many []map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &many), body)
	require.Len(t, many, 6)
	assert.Equal(t, []any{map[string]any{"objectName": "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Topic,destinationName=prices"}}, many[4]["value"])
	assert.Equal(t, []any{map[string]any{"objectName": "org.apache.activemq:brokerName=localhost,destinationName=prices,destinationType=Topic,type=Broker"}}, many[5]["value"])
	assert.Equal(t, map[string]any{"TotalMessageCount": 8.0, "BrokerName": "localhost"}, many[0]["value"])
	assert.EqualValues(t, 404, many[1]["status"])
	assert.EqualValues(t, 403, many[2]["status"])
	assert.Contains(t, many[3]["value"], "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=orders")
	assert.Empty(t, fake.calls, "nothing but reads reached the backend")

	_, body = do(t, nil, "POST", url, `{"type":`)
	require.NoError(t, json.Unmarshal([]byte(body), &one))
	assert.EqualValues(t, 400, one["status"])

	resp, body = do(t, nil, "DELETE", url+"/read/"+jBroker, "")
	require.NoError(t, json.Unmarshal([]byte(body), &one))
	assert.EqualValues(t, 405, one["status"])
	assert.Equal(t, 200, resp.StatusCode)
}

// TestJolokiaAuthorization: the Jolokia path is behind guard as the API: 401 without
// credentials, 403 for a user outside the admin groups, answers for an admin.
func TestJolokiaAuthorization(t *testing.T) {
	ts := jolokiaServer(t, &jolokiaBackend{}, testSecurity(t))
	url := ts.URL + "/api/jolokia/read/" + jOrders + "/QueueSize"

	resp, _ := do(t, nil, "GET", url, "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
	resp, _ = do(t, nil, "GET", url, "", "basic", "app:app-pw")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = do(t, nil, "POST", ts.URL+"/api/jolokia", `{"type":"read","mbean":"`+jOrders+`"}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	m := jolokiaGet(t, url, "basic", "admin:s3cret")
	assert.EqualValues(t, 7, m["value"])

	// A POST only reads: it may carry the Origin ActiveMQ's Jolokia asks scripts for,
	// where the API refuses a cross-site POST.
	resp, body := do(t, nil, "POST", ts.URL+"/api/jolokia", `{"type":"read","mbean":"`+jOrders+`","attribute":"QueueSize"}`,
		"basic", "admin:s3cret", "Origin", "http://localhost")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"value":7`)
	resp, _ = do(t, nil, "POST", ts.URL+"/api/queues/orders/purge", "", "basic", "admin:s3cret", "Origin", "http://localhost")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestObjectName: parsing and matching as javax.management.ObjectName does.
func TestObjectName(t *testing.T) {
	n, err := parseObjectName(`d:b=2,a="x,\"y\"",c=3`)
	require.NoError(t, err)
	assert.Equal(t, `d:a="x,\"y\"",b=2,c=3`, n.canonical())
	v, _ := n.get("a")
	assert.Equal(t, `x,"y"`, v)
	assert.False(t, n.isPattern())
	for _, bad := range []string{"", "d", "d:", "d:a", "d:a=1,", "d:a=1,a=2", `d:a="x`, "d:a=b=c", "d:a=1,,b=2"} {
		_, err := parseObjectName(bad)
		assert.Error(t, err, bad)
	}
	target, _ := parseObjectName("d:type=Foo,name=Bar")
	for p, want := range map[string]bool{
		"d:type=Foo,name=Bar": true, "d:name=Bar,type=Foo": true, "*:type=Foo,name=Bar": true,
		"d:type=Foo,*": true, "d:*": true, "d:type=F?o,name=B*": true, `d:type=Foo,name="B*"`: true,
		`d:type=Foo,name="B\*"`: false, "d:type=Foo": false, "e:type=Foo,*": false, "d:type=Foo,name=Bar,x=1": false,
	} {
		pn, err := parseObjectName(p)
		require.NoError(t, err, p)
		assert.Equal(t, want, pn.matches(target), p)
	}
	assert.Equal(t, "12.500 seconds", printDuration(12500*time.Millisecond))
	assert.Equal(t, "1 minute", printDuration(61*time.Second))
	assert.Equal(t, "2 hours", printDuration(2*time.Hour))
	assert.Equal(t, "3 days 12 hours", printDuration(84*time.Hour))
	assert.Equal(t, "1 day", printDuration(24*time.Hour))
}

// manyQueues is a fake broker with n queues.
type manyQueues struct {
	jolokiaBackend
	n int
}

func (m *manyQueues) Destinations(string) []Destination {
	ds := make([]Destination, m.n)
	for i := range ds {
		ds[i] = Destination{Name: "/queue/q." + strconv.Itoa(i), Type: "queue", Messages: int64(i)}
	}
	return ds
}

// BenchmarkJolokiaPatternRead: every queue's QueueSize of a broker with 1000 queues,
// the read a monitoring script makes each minute.
func BenchmarkJolokiaPatternRead(b *testing.B) {
	s, err := New(Options{Backend: &manyQueues{n: 1000}})
	require.NoError(b, err)
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/jolokia/read/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=*/QueueSize", nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":200`) {
			b.Fatal(rec.Body.String())
		}
	}
}

// TestJolokiaPathEscapes: "!/" is a slash inside a part, "!!" a "!", and a
// percent-encoded slash works too.
func TestJolokiaPathEscapes(t *testing.T) {
	for raw, want := range map[string][]string{
		"read/d:name=a!/b/Attr":        {"read", "d:name=a/b", "Attr"},
		"read/d:name=a%2Fb/Attr/x":     {"read", "d:name=a/b", "Attr", "x"},
		"read/d:name=wow!!/Attr":       {"read", "d:name=wow!", "Attr"},
		"read/d:name=x%20y/Attr,Other": {"read", "d:name=x y", "Attr,Other"},
	} {
		got, err := splitJolokiaPath(raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	_, err := splitJolokiaPath("read/d:name=%zz")
	assert.Error(t, err)
}
