package tests

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The admin listener's and the WebSocket connectors' edges (issue 24): the Host
// header a request names (DNS rebinding), HTTPS for the admin listener, and the
// read-only monitoring role (broker.monitorGroups).

// rebindClient is an HTTP client whose every connection goes to addr whatever the
// URL's host names: a browser on a page of a name whose DNS an attacker answers
// with the broker's address (DNS rebinding). It follows no redirect.
func rebindClient(addr string, tlsCfg *tls.Config) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
			TLSClientConfig: tlsCfg,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// wsHandshake opens a WebSocket to url with opts: the connection (closed at the
// end of the test), the HTTP status of the answer, and Dial's error.
func wsHandshake(t testing.TB, url string, opts *websocket.DialOptions) (*websocket.Conn, int, error) {
	t.Helper()
	ws, resp, err := websocket.Dial(ctxTimeout(t, 10*time.Second), url, opts)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
	}
	if ws != nil {
		t.Cleanup(func() { _ = ws.CloseNow() })
	}
	return ws, status, err
}

// hostAPI is an API client of the admin listener at addr that names host (with
// addr's port) in its URLs, so in the Host header.
func hostAPI(t testing.TB, addr, host string) *api {
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return &api{t: t, base: "http://" + net.JoinHostPort(host, port), c: rebindClient(addr, nil)}
}

// TestAdminAllowedHostsRebinding: a page of evil.example, whose name resolves to
// 127.0.0.1, cannot use an open admin listener: its requests name Host
// evil.example and are refused with 421 before anything is done (the rebinding
// POST creates no queue), and the refusal is logged once a minute. Requests naming
// the listener's address, localhost or a name of broker.adminAllowedHosts work.
func TestAdminAllowedHostsRebinding(t *testing.T) {
	b := startBroker(t, brokerConfig{Env: []string{adminEnv, "BROKER_BROKER_ADMINALLOWEDHOSTS=broker.example"}})
	addr := statsAddr(t, b)
	_, port, _ := net.SplitHostPort(addr)

	evil := hostAPI(t, addr, "evil.example")
	origin := "http://evil.example:" + port
	for range 2 {
		status, body, _ := evil.call("POST", "/api/queues/rebound/messages", `{"body":"from another site"}`, "Origin", origin)
		require.Equal(t, http.StatusMisdirectedRequest, status, "%s", body)
		assert.Contains(t, string(body), "evil.example")
		assert.Contains(t, string(body), "broker.adminAllowedHosts")
	}
	status, _, _ := evil.call("GET", "/api/broker", "")
	assert.Equal(t, http.StatusMisdirectedRequest, status, "a read is refused too: its answer would reach the page")
	status, _, _ = evil.call("GET", "/queues", "")
	assert.Equal(t, http.StatusMisdirectedRequest, status, "the console too")

	own := newAPI(t, "http://"+addr)
	_, exists := own.dest("/queue/rebound")
	assert.False(t, exists, "the refused POST created the queue")

	// The listener's own address, localhost and the configured name.
	own.expect(http.StatusCreated, "POST", "/api/queues/own/messages", `{"body":"x"}`, nil)
	local := hostAPI(t, addr, "localhost")
	status, body, _ := local.call("POST", "/api/queues/local/messages", `{"body":"x"}`, "Origin", "http://localhost:"+port)
	assert.Equal(t, http.StatusCreated, status, "%s", body)
	hostAPI(t, addr, "broker.example").expect(http.StatusOK, "GET", "/api/broker", "", nil)
	hostAPI(t, addr, "BROKER.example").expect(http.StatusOK, "GET", "/api/broker", "", nil)

	eventually(t, 10*time.Second, "the refusal logged", func() bool {
		return strings.Contains(b.Log(), `msg="admin request refused: its Host is not one of broker.adminAllowedHosts`)
	})
	assert.Equal(t, 1, strings.Count(b.Log(), "admin request refused: its Host"), "logged once a minute:\n%s", b.Log())
	assert.Contains(t, b.Log(), "host=evil.example:"+port)
}

// TestWebSocketAllowedHosts: a ws connector refuses the upgrade of a page of
// evil.example resolving to the broker (Host and Origin agree, so the Origin check
// alone lets it through) with 421; the connector's address, localhost and the names
// of its allowedHosts option are served, and so is any name of a client that sends
// no Origin (no browser).
func TestWebSocketAllowedHosts(t *testing.T) {
	b := startSecBroker(t, secBroker{Connectors: []string{
		"stomp", "stomp://127.0.0.1:0",
		"ws", "ws://127.0.0.1:0",
		"ws-named", "ws://127.0.0.1:0?allowedHosts=broker.example,*.internal.example",
	}})
	tg := oursTarget(b)
	// upgrade upgrades as a page of host would (with its Origin), or as a client that
	// is no browser (no Origin).
	upgrade := func(addr, host string, browser bool) (int, error) {
		t.Helper()
		_, port, _ := net.SplitHostPort(addr)
		hp := net.JoinHostPort(host, port)
		opts := &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}, HTTPClient: rebindClient(addr, nil)}
		if browser {
			opts.HTTPHeader = http.Header{"Origin": {"http://" + hp}}
		}
		ws, status, err := wsHandshake(t, "ws://"+hp+"/", opts)
		if err != nil {
			return status, err
		}
		c := newRawConn(t, websocket.NetConn(ctxTimeout(t, 30*time.Second), ws, websocket.MessageText))
		f := c.connect("login", "user", "passcode", tg.Pass["user"])
		require.Equal(t, "CONNECTED", f.Command, "Host %s: %v", host, f)
		return status, nil
	}
	handshake := func(addr, host string) (int, error) { t.Helper(); return upgrade(addr, host, true) }
	wsAddr, namedAddr := b.connectorAddr("ws"), b.connectorAddr("ws-named")
	status, err := handshake(wsAddr, "evil.example")
	require.Error(t, err, "the rebinding upgrade was accepted")
	assert.Equal(t, http.StatusMisdirectedRequest, status)
	status, err = handshake(namedAddr, "evil.example")
	require.Error(t, err)
	assert.Equal(t, http.StatusMisdirectedRequest, status)

	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err := handshake(wsAddr, host)
		require.NoError(t, err, "Host %s", host)
	}
	_, err = upgrade(wsAddr, "mq.example", false)
	require.NoError(t, err, "a client that is no browser")
	for _, host := range []string{"broker.example", "mq.internal.example", "127.0.0.1"} {
		_, err := handshake(namedAddr, host)
		require.NoError(t, err, "Host %s", host)
	}
	eventually(t, 10*time.Second, "the refusal logged", func() bool {
		return strings.Contains(b.Log(), "WebSocket connection refused: its Host is not one of the connector's allowedHosts")
	})
}

// TestAdminHTTPS: with broker.adminTLS the admin listener serves HTTPS with the
// sslContext certificate (a plain HTTP request gets no answer from the API; broker
// list works with the CA in SSL_CERT_FILE), and
// broker.adminClientAuth: need asks for a client certificate of the CA. A listener
// beyond loopback without TLS while users must log in is warned about; one with TLS
// is not.
func TestAdminHTTPS(t *testing.T) {
	pki := newTestPKI(t)
	pw := secPasswords()
	b := startSecBroker(t, secBroker{Extra: pki.sslContextYAML(false),
		Env: []string{adminEnv, "BROKER_BROKER_ADMINTLS=true"}})
	addr := statsAddr(t, b)
	a := &api{t: t, base: "https://" + addr, user: "system", pass: pw["system"],
		c: &http.Client{Transport: &http.Transport{TLSClientConfig: pki.clientTLS(false)}}}
	var o struct{ Name string }
	a.get("/api/broker", &o)
	assert.Equal(t, "e2e", o.Name)
	a.user = ""
	status, _, _ := a.call("GET", "/api/broker", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	resp, err := http.Get("http://" + addr + "/api/broker")
	if err == nil {
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, "plain HTTP served by the HTTPS listener")
		resp.Body.Close()
	}
	assert.Contains(t, b.Log(), "tls=true")
	// The management commands over HTTPS, trusting the CA as Go programs do.
	r := runCLI(t, "", []string{"SSL_CERT_FILE=" + pki.CAFile, "BROKER_ADMIN=https://system:" + pw["system"] + "@" + addr}, "list")
	require.Equal(t, 0, r.Code, "broker list over HTTPS:\n%s", r.Stderr)

	// Client certificates: none is refused in the handshake, the CA's is accepted.
	need := startSecBroker(t, secBroker{Extra: pki.sslContextYAML(true),
		Env: []string{adminEnv, "BROKER_BROKER_ADMINTLS=true", "BROKER_BROKER_ADMINCLIENTAUTH=need"}})
	needAddr := statsAddr(t, need)
	_, err = (&http.Client{Transport: &http.Transport{TLSClientConfig: pki.clientTLS(false)}}).Get("https://" + needAddr + "/api/broker")
	require.Error(t, err, "no client certificate")
	withCert := &api{t: t, base: "https://" + needAddr, user: "system", pass: pw["system"],
		c: &http.Client{Transport: &http.Transport{TLSClientConfig: pki.clientTLS(true)}}}
	withCert.get("/api/broker", &o)

	// Beyond loopback: without TLS a warning, with TLS none.
	const warning = "admin listener listens beyond loopback without TLS"
	plain := startSecBroker(t, secBroker{Env: []string{"BROKER_BROKER_ADMINADDRESS=0.0.0.0:0"}})
	statsAddr(t, plain)
	assert.Contains(t, plain.Log(), warning)
	wide := startSecBroker(t, secBroker{Extra: pki.sslContextYAML(false),
		Env: []string{"BROKER_BROKER_ADMINADDRESS=0.0.0.0:0", "BROKER_BROKER_ADMINTLS=true"}})
	statsAddr(t, wide)
	assert.NotContains(t, wide.Log(), warning)
	assert.NotContains(t, b.Log(), warning, "a loopback listener is not warned about")
}

// monitorPlugins are users of an admin group, a monitoring group and neither.
func monitorPlugins(pw map[string]string) string {
	return fmt.Sprintf("plugins:\n  simpleAuthentication:\n    users:\n"+
		"      - {username: system, password: %q, groups: [admins]}\n"+
		"      - {username: scraper, password: %q, groups: [monitors]}\n"+
		"      - {username: user, password: %q, groups: [users]}\n", pw["system"], pw["scraper"], pw["user"])
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestAdminMonitorRole: a user of broker.monitorGroups reads everything an
// administrator reads (the API's GETs, /stats, /metrics, Jolokia's reads, the
// console's pages) and changes nothing: every route that changes state answers 403
// saying why, the console's forms too, and the broker is as it was. Anonymous
// requests get 401, a user of neither group 403; the administrator keeps
// everything.
func TestAdminMonitorRole(t *testing.T) {
	pw := map[string]string{"system": "sys-" + randomHex(6), "scraper": "mon-" + randomHex(6), "user": "usr-" + randomHex(6)}
	b := startSecBroker(t, secBroker{Plugins: monitorPlugins(pw),
		Env: []string{adminEnv, "BROKER_BROKER_MONITORGROUPS=monitors"}})
	base := "http://" + statsAddr(t, b)

	prod := dial(t, b.Addr, stomp.ConnOpt.Login("system", pw["system"]))
	sendN(t, prod, "/queue/watched", "m", 3)
	dur := dial(t, b.Addr, stomp.ConnOpt.Login("system", pw["system"]), stomp.ConnOpt.Header("client-id", "dur"))
	_, err := dur.Subscribe("/topic/t", stomp.AckAuto, stomp.SubscribeOpt.Header("activemq.subscriptionName", "d1"))
	require.NoError(t, err)

	admin := newAPI(t, base)
	admin.user, admin.pass = "system", pw["system"]
	eventually(t, 10*time.Second, "the durable subscription", func() bool {
		var ds []durableRow
		admin.get("/api/durable-subscriptions", &ds)
		return len(ds) == 1
	})
	msgs, _ := admin.browseAll("watched", 10)
	require.Len(t, msgs, 3)
	var conns []struct {
		ID string `json:"id"`
	}
	admin.get("/api/connections", &conns)
	require.NotEmpty(t, conns)

	mon := newAPI(t, base)
	mon.user, mon.pass = "scraper", pw["scraper"]
	for _, path := range []string{"/api/broker", "/api/destinations", "/api/queues/watched/messages",
		"/api/queues/watched/messages/" + url.PathEscape(msgs[0].ID), "/api/connections", "/api/durable-subscriptions",
		"/stats", "/metrics",
		"/api/jolokia/read/org.apache.activemq:type=Broker,brokerName=e2e,destinationType=Queue,destinationName=watched/QueueSize"} {
		status, body, _ := mon.call("GET", path, "")
		assert.Equal(t, http.StatusOK, status, "GET %s: %s", path, body)
	}
	var jr struct{ Status int }
	status, body, _ := mon.call("POST", "/api/jolokia", `{"type":"exec","mbean":"org.apache.activemq:type=Broker,brokerName=e2e","operation":"removeQueue(java.lang.String)","arguments":["watched"]}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.NoError(t, json.Unmarshal(body, &jr))
	assert.Equal(t, http.StatusForbidden, jr.Status, "Jolokia exec: %s", body)

	mutations := [][3]string{
		{"DELETE", "/api/queues/watched/messages/" + url.PathEscape(msgs[0].ID), ""},
		{"POST", "/api/queues/watched/messages", `{"body":"x"}`},
		{"POST", "/api/topics/t/messages", `{"body":"x"}`},
		{"POST", "/api/queues/watched/purge", ""},
		{"DELETE", "/api/queues/watched", ""},
		{"DELETE", "/api/topics/t", ""},
		{"POST", "/api/queues/watched/move", `{"to":"/queue/elsewhere"}`},
		{"DELETE", "/api/connections/" + url.PathEscape(conns[0].ID), ""},
		{"DELETE", "/api/durable-subscriptions/dur/d1", ""},
		{"POST", "/api/durable-subscriptions/dur/d1/messages", `{"messages":[{"body":"x"}]}`},
	}
	for _, m := range mutations {
		status, body, _ := mon.call(m[0], m[1], m[2])
		assert.Equal(t, http.StatusForbidden, status, "%s %s: %s", m[0], m[1], body)
		assert.Contains(t, string(body), "broker.monitorGroups", "%s %s", m[0], m[1])
	}

	// The console: a monitor logs in and sees the pages; every form is refused.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &api{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	form := func(path string, v url.Values) (int, string) {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(v.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := browser.c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	status, _ = form("/login", url.Values{"username": {"scraper"}, "password": {pw["scraper"]}})
	require.Equal(t, http.StatusSeeOther, status, "a monitor logs in to the console")
	status, page, _ := browser.call("GET", "/queues/watched", "")
	require.Equal(t, http.StatusOK, status, "%s", page)
	m := csrfRE.FindSubmatch(page)
	require.NotNil(t, m, "no CSRF token on the page")
	token := string(m[1])
	for _, path := range []string{"/queues/watched/purge", "/queues/watched/delete", "/queues/watched/send", "/queues/watched/move",
		"/queues/watched/messages/" + url.PathEscape(msgs[0].ID) + "/delete", "/queues/watched/messages/" + url.PathEscape(msgs[0].ID) + "/move",
		"/topics/send", "/topics/t/delete", "/durable/dur/d1/delete", "/connections/" + url.PathEscape(conns[0].ID) + "/close"} {
		status, body := form(path, url.Values{"csrf": {token}, "body": {"x"}, "to": {"/queue/elsewhere"}, "destination": {"t"}})
		assert.Equal(t, http.StatusForbidden, status, "POST %s: %s", path, body)
		assert.Contains(t, body, "broker.monitorGroups", "POST %s", path)
	}

	// Nothing changed.
	msgs, _ = admin.browseAll("watched", 10)
	assert.Len(t, msgs, 3)
	var ds []durableRow
	admin.get("/api/durable-subscriptions", &ds)
	assert.Len(t, ds, 1)
	_, exists := admin.dest("/queue/elsewhere")
	assert.False(t, exists)
	require.NoError(t, dur.Send("/queue/still", "text/plain", []byte("alive"), stomp.SendOpt.Receipt), "the connection was closed")

	// The monitor logs out (a change of its own session only).
	status, _ = form("/logout", url.Values{"csrf": {token}})
	assert.Equal(t, http.StatusSeeOther, status)

	anon := newAPI(t, base)
	for _, path := range []string{"/api/broker", "/metrics", "/stats"} {
		status, _, _ := anon.call("GET", path, "")
		assert.Equal(t, http.StatusUnauthorized, status, "GET %s", path)
	}
	other := newAPI(t, base)
	other.user, other.pass = "user", pw["user"]
	status, _, _ = other.call("GET", "/api/broker", "")
	assert.Equal(t, http.StatusForbidden, status, "a user of neither group")
	admin.expect(http.StatusOK, "POST", "/api/queues/watched/purge", "", nil)
	msgs, _ = admin.browseAll("watched", 10)
	assert.Empty(t, msgs)
}
