package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The admin listener's REST API (docs/api.md) end to end: the real binary, its queues
// filled and drained by real STOMP clients, the API called over HTTP.

// durableRow is a durable subscription as GET /api/durable-subscriptions lists it.
type durableRow struct {
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	Topic    string `json:"topic"`
	Active   bool   `json:"active"`
	Pending  int64  `json:"pending"`
}

// adminEnv turns the admin listener on, on a free loopback port.
const adminEnv = "BROKER_BROKER_ADMINADDRESS=127.0.0.1:0"

// adminBroker starts a broker with the admin listener and returns it with the
// listener's base URL.
func adminBroker(t testing.TB, bc brokerConfig) (*brokerProc, string) {
	t.Helper()
	bc.Env = append(bc.Env, adminEnv)
	b := startBroker(t, bc)
	return b, "http://" + statsAddr(t, b)
}

// api is an HTTP client of one admin listener.
type api struct {
	t          testing.TB
	base       string
	user, pass string
	c          *http.Client
}

func newAPI(t testing.TB, base string) *api { return &api{t: t, base: base, c: http.DefaultClient} }

// call sends method path with body (JSON, or none when "") and returns the status and
// the response body; hdr are more header name, value pairs.
func (a *api) call(method, path, body string, hdr ...string) (int, []byte, http.Header) {
	a.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	require.NoError(a.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.user != "" {
		req.SetBasicAuth(a.user, a.pass)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := a.c.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp.StatusCode, b, resp.Header
}

// get calls GET path, requires 200 and decodes the JSON answer into v.
func (a *api) get(path string, v any) {
	a.t.Helper()
	status, body, _ := a.call("GET", path, "")
	require.Equal(a.t, http.StatusOK, status, "GET %s: %s", path, body)
	require.NoError(a.t, json.Unmarshal(body, v), "GET %s: %s", path, body)
}

// expect calls method path and requires the status; it decodes a JSON answer into v
// when v is not nil.
func (a *api) expect(status int, method, path, body string, v any) {
	a.t.Helper()
	got, b, _ := a.call(method, path, body)
	require.Equal(a.t, status, got, "%s %s: %s", method, path, b)
	if v != nil {
		require.NoError(a.t, json.Unmarshal(b, v), "%s %s: %s", method, path, b)
	}
}

// apiDest is a destination as GET /api/destinations lists it.
type apiDest struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Messages   int64   `json:"messages"`
	Enqueued   int64   `json:"enqueued"`
	Dequeued   int64   `json:"dequeued"`
	Dispatched int64   `json:"dispatched"`
	Consumers  int     `json:"consumers"`
	OldestAge  float64 `json:"oldest_message_age_seconds"`
	DLQ        bool    `json:"dlq"`
}

// dest returns the destination called name, and whether it is listed.
func (a *api) dest(name string) (apiDest, bool) {
	a.t.Helper()
	var ds []apiDest
	a.get("/api/destinations", &ds)
	for _, d := range ds {
		if d.Name == name {
			return d, true
		}
	}
	return apiDest{}, false
}

// messagesOf is the messages count of a listed destination.
func (a *api) messagesOf(name string) int64 {
	d, _ := a.dest(name)
	return d.Messages
}

type apiMessage struct {
	ID          string            `json:"id"`
	Destination string            `json:"destination"`
	Headers     map[string]string `json:"headers"`
	Persistent  bool              `json:"persistent"`
	Priority    int               `json:"priority"`
	Redelivered bool              `json:"redelivered"`
	Size        int               `json:"size"`
	Body        string            `json:"body"`
	Truncated   bool              `json:"truncated"`
}

type apiPage struct {
	Messages []apiMessage `json:"messages"`
	Next     string       `json:"next"`
}

// browseAll pages through a queue with pages of limit and returns its messages.
func (a *api) browseAll(queue string, limit int) ([]apiMessage, int) {
	a.t.Helper()
	var all []apiMessage
	pages := 0
	after := ""
	for {
		var p apiPage
		a.get(fmt.Sprintf("/api/queues/%s/messages?limit=%d&after=%s", url.PathEscape(queue), limit, url.QueryEscape(after)), &p)
		pages++
		all = append(all, p.Messages...)
		if p.Next == "" {
			return all, pages
		}
		after = p.Next
	}
}

// sendN sends n persistent messages <prefix><i> to dest, with color red (even i) or
// blue, and a receipt on the last: all are stored when it returns.
func sendN(t testing.TB, c *stomp.Conn, dest, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		color := "red"
		if i%2 == 1 {
			color = "blue"
		}
		opts := []func(*frame.Frame) error{stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("color", color)}
		if i == n-1 {
			opts = append(opts, stomp.SendOpt.Receipt)
		}
		require.NoError(t, c.Send(dest, "text/plain", []byte(fmt.Sprintf("%s%05d", prefix, i)), opts...))
	}
}

// TestAdminAPIQueue: a queue a STOMP producer filled, seen, browsed by pages, read,
// trimmed and purged through the API; a message sent through the API reaches a STOMP
// consumer; what a consumer holds unacknowledged survives the purge.
func TestAdminAPIQueue(t *testing.T) {
	b, base := adminBroker(t, brokerConfig{Adapter: "kahaDB: {}"})
	a := newAPI(t, base)
	p := dial(t, b.Addr)
	sendN(t, p, "/queue/orders", "order-", 250)

	d, ok := a.dest("/queue/orders")
	require.True(t, ok)
	assert.Equal(t, "queue", d.Type)
	assert.EqualValues(t, 250, d.Messages)
	assert.EqualValues(t, 250, d.Enqueued)
	assert.Greater(t, d.OldestAge, 0.0)

	msgs, pages := a.browseAll("orders", 100)
	assert.Equal(t, 3, pages)
	require.Len(t, msgs, 250)
	for i, m := range msgs {
		require.Equal(t, fmt.Sprintf("order-%05d", i), m.Body)
	}
	assert.Equal(t, "blue", msgs[1].Headers["color"])
	assert.True(t, msgs[1].Persistent)
	assert.Equal(t, 4, msgs[1].Priority)

	var one apiMessage
	a.get("/api/queues/orders/messages/"+url.PathEscape(msgs[42].ID), &one)
	assert.Equal(t, "order-00042", one.Body)
	assert.Equal(t, "/queue/orders", one.Destination)
	a.expect(http.StatusNoContent, "DELETE", "/api/queues/orders/messages/"+url.PathEscape(msgs[42].ID), "", nil)
	a.expect(http.StatusNotFound, "GET", "/api/queues/orders/messages/"+url.PathEscape(msgs[42].ID), "", nil)
	a.expect(http.StatusNotFound, "DELETE", "/api/queues/orders/messages/"+url.PathEscape(msgs[42].ID), "", nil)
	a.expect(http.StatusNotFound, "GET", "/api/queues/orders/messages?after="+url.QueryEscape(msgs[42].ID), "", nil)
	assert.EqualValues(t, 249, a.messagesOf("/queue/orders"))

	// A message sent through the API goes to a STOMP consumer.
	c := dial(t, b.Addr)
	fresh, err := c.Subscribe("/queue/fresh", stomp.AckAuto)
	require.NoError(t, err)
	var sent struct{ ID string }
	a.expect(http.StatusCreated, "POST", "/api/queues/fresh/messages",
		`{"body":"from the API","headers":{"k":"v","priority":"7"},"persistent":true}`, &sent)
	m := recv(t, fresh)
	assert.Equal(t, "from the API", string(m.Body))
	assert.Equal(t, sent.ID, m.Header.Get("message-id"))
	assert.Equal(t, "v", m.Header.Get("k"))
	assert.Equal(t, "7", m.Header.Get("priority"))
	assert.Equal(t, "true", m.Header.Get("persistent"))

	// A consumer holds 10 unacknowledged; the purge takes the 239 others.
	held, err := c.Subscribe("/queue/orders", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "10"))
	require.NoError(t, err)
	var inHand []*stomp.Message
	for range 10 {
		inHand = append(inHand, recv(t, held))
	}
	eventually(t, 10*time.Second, "10 dispatched", func() bool {
		d, _ := a.dest("/queue/orders")
		return d.Dispatched == 10
	})
	var purged struct{ Purged int }
	a.expect(http.StatusOK, "POST", "/api/queues/orders/purge", "", &purged)
	assert.Equal(t, 239, purged.Purged)
	d, _ = a.dest("/queue/orders")
	assert.EqualValues(t, 10, d.Messages, "the dispatched ones stay")
	assert.EqualValues(t, 1, d.Consumers)
	a.expect(http.StatusConflict, "DELETE", "/api/queues/orders", "", nil)
	for _, m := range inHand {
		require.NoError(t, c.Ack(m))
	}
	eventually(t, 10*time.Second, "the acknowledged messages gone", func() bool { return a.messagesOf("/queue/orders") == 0 })
	unsubscribe(t, held)
	a.expect(http.StatusNoContent, "DELETE", "/api/queues/orders", "", nil)
	_, ok = a.dest("/queue/orders")
	assert.False(t, ok)
	a.expect(http.StatusNotFound, "POST", "/api/queues/orders/purge", "", nil)

	var o struct {
		Name        string  `json:"name"`
		Adapter     string  `json:"adapter"`
		Uptime      float64 `json:"uptime_seconds"`
		Connections int     `json:"connections"`
		In          int64   `json:"messages_received_total"`
		Out         int64   `json:"messages_delivered_total"`
	}
	a.get("/api/broker", &o)
	assert.Equal(t, "e2e", o.Name)
	assert.Equal(t, "kahaDB", o.Adapter)
	assert.Equal(t, 2, o.Connections)
	assert.EqualValues(t, 251, o.In)
	assert.EqualValues(t, 11, o.Out)
	assert.Greater(t, o.Uptime, 0.0)

	_, _, h := a.call("GET", "/api/broker", "")
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
	assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	assert.Equal(t, "same-origin", h.Get("Referrer-Policy"))
	assert.Contains(t, h.Get("Content-Security-Policy"), "default-src 'self'")
	assert.Contains(t, b.Log(), `msg="management operation" op=purge by=anonymous@127.0.0.1:`)
}

// TestAdminAPIRetryDLQ: messages a consumer NACKed are in ActiveMQ.DLQ; those a selector
// picks go back to their original queue (and to its consumer), the rest to another
// queue, copies elsewhere.
func TestAdminAPIRetryDLQ(t *testing.T) {
	b, base := adminBroker(t, brokerConfig{})
	a := newAPI(t, base)
	p := dial(t, b.Addr)
	sendN(t, p, "/queue/jobs", "job-", 6)
	c := dial(t, b.Addr)
	sub, err := c.Subscribe("/queue/jobs", stomp.AckClientIndividual)
	require.NoError(t, err)
	for range 6 {
		require.NoError(t, c.Nack(recv(t, sub)))
	}
	eventually(t, 10*time.Second, "6 messages in ActiveMQ.DLQ", func() bool { return a.messagesOf("/queue/ActiveMQ.DLQ") == 6 })
	dlq, _ := a.dest("/queue/ActiveMQ.DLQ")
	assert.True(t, dlq.DLQ)
	dead, _ := a.browseAll("ActiveMQ.DLQ", 100)
	require.Len(t, dead, 6)
	assert.Equal(t, "/queue/jobs", dead[0].Headers["original-destination"])

	var moved struct{ Moved int }
	a.expect(http.StatusOK, "POST", "/api/queues/ActiveMQ.DLQ/move", `{"to":"original","selector":"color = 'red'"}`, &moved)
	assert.Equal(t, 3, moved.Moved)
	for i := 0; i < 3; i++ {
		m := recv(t, sub)
		assert.Equal(t, fmt.Sprintf("job-%05d", 2*i), string(m.Body))
		assert.Empty(t, m.Header.Get("original-destination"), "a retried message is no longer dead")
		require.NoError(t, c.Ack(m))
	}
	a.expect(http.StatusOK, "POST", "/api/queues/ActiveMQ.DLQ/move", `{"to":"/queue/parking"}`, &moved)
	assert.Equal(t, 3, moved.Moved)
	assert.EqualValues(t, 0, a.messagesOf("/queue/ActiveMQ.DLQ"))
	assert.EqualValues(t, 3, a.messagesOf("/queue/parking"))

	a.expect(http.StatusOK, "POST", "/api/queues/parking/move", `{"to":"/queue/copies","copy":true,"limit":2}`, &moved)
	assert.Equal(t, 2, moved.Moved)
	assert.EqualValues(t, 3, a.messagesOf("/queue/parking"))
	parked, _ := a.browseAll("parking", 10)
	copies, _ := a.browseAll("copies", 10)
	require.Len(t, copies, 2)
	assert.Equal(t, parked[0].Body, copies[0].Body)
	assert.NotEqual(t, parked[0].ID, copies[0].ID, "a copy has a message id of its own")
	assert.Equal(t, dead[1].ID, parked[0].ID, "a moved message keeps its id")

	a.expect(http.StatusBadRequest, "POST", "/api/queues/parking/move", `{"to":"/queue/parking"}`, nil)
	a.expect(http.StatusBadRequest, "POST", "/api/queues/parking/move", `{"to":"/queue/x","selector":"color = "}`, nil)
	a.expect(http.StatusBadRequest, "POST", "/api/queues/parking/move", `{"to":"/temp-queue/x"}`, nil)
	a.expect(http.StatusNotFound, "POST", "/api/queues/nothing/move", `{"to":"/queue/x"}`, nil)
}

// TestAdminAPIConnections: a STOMP connection is listed with what it said on CONNECT;
// closing it through the API gives the client an ERROR with the reason.
func TestAdminAPIConnections(t *testing.T) {
	b, base := adminBroker(t, brokerConfig{})
	a := newAPI(t, base)
	raw := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", raw.connect("client-id", "kick-me").Command)
	raw.send(frame.New("SUBSCRIBE", "id", "1", "destination", "/queue/anything", "receipt", "r1"))
	require.Equal(t, "RECEIPT", raw.read().Command)

	type conn struct {
		ID            string `json:"id"`
		ClientID      string `json:"client_id"`
		Remote        string `json:"remote"`
		Connector     string `json:"connector"`
		Version       string `json:"version"`
		ConnectedAt   string `json:"connected_at"`
		Subscriptions int    `json:"subscriptions"`
	}
	var cs []conn
	a.get("/api/connections", &cs)
	require.Len(t, cs, 1)
	assert.Equal(t, "kick-me", cs[0].ClientID)
	assert.Equal(t, "stomp", cs[0].Connector)
	assert.Equal(t, "1.2", cs[0].Version)
	assert.Equal(t, 1, cs[0].Subscriptions)
	assert.Equal(t, raw.nc.LocalAddr().String(), cs[0].Remote)
	assert.NotEmpty(t, cs[0].ConnectedAt)

	a.expect(http.StatusNoContent, "DELETE", "/api/connections/"+url.PathEscape(cs[0].ID)+"?reason="+url.QueryEscape("maintenance window"), "", nil)
	f := raw.read()
	require.Equal(t, "ERROR", f.Command)
	assert.Contains(t, f.Header.Get("message"), "maintenance window")
	raw.expectClosed(5 * time.Second)
	a.get("/api/connections", &cs)
	assert.Empty(t, cs)
	a.expect(http.StatusNotFound, "DELETE", "/api/connections/"+url.PathEscape("ID:nobody"), "", nil)
}

// TestAdminAPIDurableSubscriptions: a durable subscription is listed with its backlog;
// removing it is refused (409) while its consumer is attached, done once it left.
func TestAdminAPIDurableSubscriptions(t *testing.T) {
	b, base := adminBroker(t, brokerConfig{})
	a := newAPI(t, base)
	c := dial(t, b.Addr, stomp.ConnOpt.Header("client-id", "dur-app"))
	sub, err := c.Subscribe("/topic/news", stomp.AckAuto, stomp.SubscribeOpt.Header("activemq.subscriptionName", "s1"))
	require.NoError(t, err)
	type durable = durableRow
	var ds []durable
	eventually(t, 10*time.Second, "the durable subscription", func() bool { // go-stomp's SUBSCRIBE has no receipt
		a.get("/api/durable-subscriptions", &ds)
		return len(ds) == 1
	})
	assert.Equal(t, durable{ClientID: "dur-app", Name: "s1", Topic: "/topic/news", Active: true}, ds[0])
	a.expect(http.StatusConflict, "DELETE", "/api/durable-subscriptions/dur-app/s1", "", nil)

	unsubscribe(t, sub) // detaches; the subscription stays
	p := dial(t, b.Addr)
	sendN(t, p, "/topic/news", "news-", 3)
	a.get("/api/durable-subscriptions", &ds)
	require.Len(t, ds, 1)
	assert.False(t, ds[0].Active)
	assert.EqualValues(t, 3, ds[0].Pending)
	a.expect(http.StatusNoContent, "DELETE", "/api/durable-subscriptions/dur-app/s1", "", nil)
	a.get("/api/durable-subscriptions", &ds)
	assert.Empty(t, ds)
	a.expect(http.StatusNotFound, "DELETE", "/api/durable-subscriptions/dur-app/s1", "", nil)
	a.expect(http.StatusNoContent, "DELETE", "/api/topics/news", "", nil)
}

// TestAdminAPIStreams: a stream's partitions and a consumer group's lag.
func TestAdminAPIStreams(t *testing.T) {
	bc := streamBrokerConfig(2, "")
	b, base := adminBroker(t, bc)
	a := newAPI(t, base)
	sendKeyed(t, b.Addr, "/topic/s.events", "e", 10)
	g := joinGroup(t, b.Addr, "/topic/s.events", "G", "x-stream-offset", "first")
	g.ackAll(g.receiveN(4))

	type stream struct {
		Name       string `json:"name"`
		Partitions []struct {
			Partition int   `json:"partition"`
			Start     int64 `json:"start_offset"`
			End       int64 `json:"end_offset"`
		} `json:"partitions"`
		Groups []struct {
			Group   string `json:"group"`
			Lag     int64  `json:"lag"`
			Members int    `json:"members"`
		} `json:"groups"`
	}
	var st stream
	eventually(t, 10*time.Second, "the group's lag at 6", func() bool {
		a.get("/api/streams/s.events", &st)
		return len(st.Groups) == 1 && st.Groups[0].Lag == 6
	})
	assert.Equal(t, "/topic/s.events", st.Name)
	require.Len(t, st.Partitions, 2)
	assert.EqualValues(t, 10, st.Partitions[0].End+st.Partitions[1].End)
	assert.Equal(t, "G", st.Groups[0].Group)
	assert.Equal(t, 1, st.Groups[0].Members)

	var ds []apiDest
	a.get("/api/destinations?type=stream", &ds)
	require.Len(t, ds, 1)
	assert.Equal(t, apiDest{Name: "/topic/s.events", Type: "stream", Messages: 10, Enqueued: 10, Dequeued: ds[0].Dequeued, Consumers: 1}, ds[0])
	a.expect(http.StatusNotFound, "GET", "/api/streams/plain", "", nil)
	a.expect(http.StatusBadRequest, "DELETE", "/api/topics/s.events", "", nil)
}

// TestAdminAPIAuth: with users configured the API takes an admin's HTTP Basic
// credentials (401 without, 403 for a user of no admin group); a message sent through
// it is sent as that admin (JMSXUserID); the console's login makes a session whose
// requests that change state are refused without the CSRF token.
func TestAdminAPIAuth(t *testing.T) {
	pw := secPasswords()
	b := startSecBroker(t, secBroker{Env: []string{adminEnv}})
	base := "http://" + statsAddr(t, b)
	a := newAPI(t, base)

	status, body, h := a.call("GET", "/api/broker", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.True(t, strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic "))
	assert.Contains(t, string(body), `"error"`)
	a.user, a.pass = "user", pw["user"]
	status, _, _ = a.call("GET", "/api/destinations", "")
	assert.Equal(t, http.StatusForbidden, status)
	status, _, _ = a.call("POST", "/api/queues/x/purge", "")
	assert.Equal(t, http.StatusForbidden, status)
	a.user, a.pass = "system", "wrong"
	status, _, _ = a.call("GET", "/api/broker", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	a.user, a.pass = "system", pw["system"]
	var o struct{ Name string }
	a.get("/api/broker", &o)
	assert.Equal(t, "e2e", o.Name)

	sys := oursTarget(b).dial(t, "system")
	sub, err := sys.Subscribe("/queue/audit", stomp.AckAuto)
	require.NoError(t, err)
	a.expect(http.StatusCreated, "POST", "/api/queues/audit/messages", `{"body":"checked","headers":{"JMSXUserID":"forged"}}`, nil)
	m := recv(t, sub)
	assert.Equal(t, "checked", string(m.Body))
	assert.Equal(t, "system", m.Header.Get("JMSXUserID"))

	// The console's login form and session.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &api{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	login := func(user, pass string) int {
		req, err := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"username": {user}, "password": {pass}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := browser.c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, login("user", pw["user"]))
	require.Equal(t, http.StatusSeeOther, login("system", pw["system"]))
	browser.get("/api/broker", &o)
	status, body, _ = browser.call("POST", "/api/queues/audit/purge", "")
	assert.Equal(t, http.StatusForbidden, status, "a session's request without the CSRF token")
	assert.Contains(t, string(body), "CSRF")
	status, _, _ = browser.call("POST", "/logout", "", "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, http.StatusForbidden, status, "a console form post without the CSRF token")
	status, _, h = browser.call("GET", "/login", "")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
	assert.Contains(t, h.Get("Content-Security-Policy"), "default-src 'self'")
}
