package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/security"
)

// fakeBackend records what the API asked of it and answers from its fields.
type fakeBackend struct {
	mu    sync.Mutex
	calls []string
	who   []Identity
	err   error // returned by every call that can fail
	msgs  []Message
}

func (f *fakeBackend) record(ctx context.Context, call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	f.who = append(f.who, IdentityOf(ctx))
	return f.err
}

func (f *fakeBackend) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

func (f *fakeBackend) Overview() Overview { return Overview{Name: "fake", Queues: 1} }
func (f *fakeBackend) Destinations(kind string) []Destination {
	_ = f.record(context.Background(), "destinations "+kind)
	return nil
}
func (f *fakeBackend) Browse(ctx context.Context, q, after string, limit int) ([]Message, string, error) {
	return f.msgs, "", f.record(ctx, "browse "+q+" after="+after+" limit="+strconv.Itoa(limit))
}
func (f *fakeBackend) Message(ctx context.Context, q, id string) (Message, error) {
	return Message{ID: id, Destination: q}, f.record(ctx, "message "+q+" "+id)
}
func (f *fakeBackend) DeleteMessage(ctx context.Context, q, id string) error {
	return f.record(ctx, "delete "+q+" "+id)
}
func (f *fakeBackend) Send(ctx context.Context, dest string, m SendRequest) (string, error) {
	return "ID:1", f.record(ctx, "send "+dest+" "+m.Body)
}
func (f *fakeBackend) Purge(ctx context.Context, q string) (int, error) {
	return 7, f.record(ctx, "purge "+q)
}
func (f *fakeBackend) RemoveDestination(ctx context.Context, dest string) error {
	return f.record(ctx, "remove "+dest)
}
func (f *fakeBackend) Move(ctx context.Context, q string, r MoveRequest) (MoveResult, error) {
	return MoveResult{Moved: 3}, f.record(ctx, "move "+q+" to="+r.To+" selector="+r.Selector)
}
func (f *fakeBackend) Connections() []Connection { return []Connection{{ID: "c1"}} }
func (f *fakeBackend) CloseConnection(ctx context.Context, id, reason string) error {
	return f.record(ctx, "close "+id+" "+reason)
}
func (f *fakeBackend) DurableSubscriptions() []DurableSubscription { return nil }
func (f *fakeBackend) RemoveDurableSubscription(ctx context.Context, clientID, name string) error {
	return f.record(ctx, "unsubscribe "+clientID+" "+name)
}
func (f *fakeBackend) ClientIDOwners() []ClientIDOwner { return nil }
func (f *fakeBackend) FreeClientID(ctx context.Context, clientID string) error {
	return f.record(ctx, "free "+clientID)
}
func (f *fakeBackend) ImportDurable(ctx context.Context, clientID, name string, msgs []SendRequest) (ImportResult, error) {
	return ImportResult{Imported: len(msgs)}, f.record(ctx, fmt.Sprintf("import %s %s %d", clientID, name, len(msgs)))
}
func (f *fakeBackend) Stream(name string) (Stream, error) {
	return Stream{Name: name}, f.record(context.Background(), "stream "+name)
}

// newTestServer serves a Server over fake; sec may be nil (an open listener).
func newTestServer(t *testing.T, fake *fakeBackend, sec *security.Service, console func(*Server)) *httptest.Server {
	t.Helper()
	s, err := New(Options{Backend: fake, Security: sec, Console: console})
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// do sends a request and returns the response and its body.
func do(t *testing.T, c *http.Client, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "basic" {
			user, pass, _ := strings.Cut(hdr[i+1], ":")
			req.SetBasicAuth(user, pass)
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func errorOf(t *testing.T, body string) string {
	t.Helper()
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e.Error
}

// TestAPIRoutes: each route reaches the Backend with the names it decoded, including
// names with dots and escaped slashes; requests that do not fit get JSON errors.
func TestAPIRoutes(t *testing.T) {
	fake := &fakeBackend{}
	ts := newTestServer(t, fake, nil, nil)
	for _, tc := range []struct {
		method, path, body string
		status             int
		call               string
	}{
		{"GET", "/api/queues/ActiveMQ.DLQ/messages?limit=5&after=ID:x-1", "", 200, "browse /queue/ActiveMQ.DLQ after=ID:x-1 limit=5"},
		{"GET", "/api/queues/a%2Fb/messages", "", 200, "browse /queue/a/b after= limit=100"},
		{"GET", "/api/queues/orders/messages/ID%3Ab-1%3A2", "", 200, "message /queue/orders ID:b-1:2"},
		{"DELETE", "/api/queues/orders/messages/ID:b-1", "", 204, "delete /queue/orders ID:b-1"},
		{"POST", "/api/queues/orders/messages", `{"body":"hi"}`, 201, "send /queue/orders hi"},
		{"POST", "/api/topics/prices.eu/messages", `{"body":"p","headers":{"k":"v"},"persistent":true}`, 201, "send /topic/prices.eu p"},
		{"POST", "/api/queues/orders/purge", "", 200, "purge /queue/orders"},
		{"DELETE", "/api/queues/a%2Fb", "", 204, "remove /queue/a/b"},
		{"DELETE", "/api/topics/t.1", "", 204, "remove /topic/t.1"},
		{"POST", "/api/queues/ActiveMQ.DLQ/move", `{"to":"original","selector":"k = 'v'"}`, 200, "move /queue/ActiveMQ.DLQ to=original selector=k = 'v'"},
		{"DELETE", "/api/connections/ID:c1?reason=bye", "", 204, "close ID:c1 bye"},
		{"DELETE", "/api/durable-subscriptions/app/sub.1", "", 204, "unsubscribe app sub.1"},
		{"POST", "/api/durable-subscriptions/app/sub.1/messages", `{"messages":[{"body":"a"},{"body_base64":"AAE="}]}`, 200, "import app sub.1 2"},
		{"DELETE", "/api/client-ids/app%2F1", "", 204, "free app/1"},
		{"GET", "/api/streams/events", "", 200, "stream events"},
		{"GET", "/api/destinations?type=stream", "", 200, "destinations stream"},
	} {
		resp, body := do(t, nil, tc.method, ts.URL+tc.path, tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, "%s %s: %s", tc.method, tc.path, body)
		assert.Equal(t, tc.call, fake.last(), "%s %s", tc.method, tc.path)
	}

	for _, tc := range []struct {
		method, path, body string
		status             int
		error              string
	}{
		{"POST", "/api/queues/orders/messages", `{"body":`, 400, "bad JSON body"},
		{"POST", "/api/queues/orders/messages", `{"bdy":"x"}`, 400, `unknown field "bdy"`},
		{"POST", "/api/queues/orders/messages", ``, 400, "must be a JSON object"},
		{"POST", "/api/queues/orders/move", `{"selector":"a"}`, 400, `"to" is missing`},
		{"GET", "/api/queues/orders/messages?limit=0", "", 400, "limit"},
		{"GET", "/api/queues/orders/messages?limit=5000", "", 400, "limit"},
		{"GET", "/api/destinations?type=exchange", "", 400, "type"},
		{"GET", "/api/nothing", "", 404, "no such API route"},
		{"GET", "/api/queues/orders/messages/a/b", "", 404, "no such API route"},
		{"PUT", "/api/queues/orders/purge", "", 405, "allowed: POST"},
		{"GET", "/api/queues/orders", "", 405, "allowed: DELETE"},
	} {
		resp, body := do(t, nil, tc.method, ts.URL+tc.path, tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, "%s %s: %s", tc.method, tc.path, body)
		assert.Contains(t, errorOf(t, body), tc.error, "%s %s", tc.method, tc.path)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	}

	// The broker's errors map to their statuses, with the broker's message.
	for _, tc := range []struct {
		err    error
		status int
	}{
		{&broker.Error{Message: "no queue named x", Err: broker.ErrNotFound}, 404},
		{&broker.Error{Message: "has consumers", Err: broker.ErrDestinationInUse}, 409},
		{&broker.Error{Message: "in use", Err: broker.ErrDurableInUse}, 409},
		{&broker.Error{Message: "bad selector", Err: broker.ErrInvalidSelector}, 400},
		{&broker.Error{Message: "not authorized", Err: broker.ErrNotAuthorized}, 403},
		{&broker.Error{Message: "disk", Err: broker.ErrStore}, 500},
	} {
		fake.err = tc.err
		resp, body := do(t, nil, "POST", ts.URL+"/api/queues/x/purge", "")
		assert.Equal(t, tc.status, resp.StatusCode)
		assert.Equal(t, tc.err.(*broker.Error).Message, errorOf(t, body))
	}
}

// TestSecurityHeaders: every response, an error too, carries the security headers.
func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, &fakeBackend{}, nil, nil)
	for _, path := range []string{"/api/broker", "/api/nothing", "/", "/login", "/nowhere"} {
		resp, _ := do(t, nil, "GET", ts.URL+path, "")
		assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "same-origin", resp.Header.Get("Referrer-Policy"), path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
	}
}

func testSecurity(t *testing.T) *security.Service {
	t.Helper()
	sec, err := security.New(security.Config{
		Users: []security.User{
			{Name: "admin", Password: "s3cret", Groups: []string{"admins"}},
			{Name: "app", Password: "app-pw", Groups: []string{"users"}},
		},
		FailureDelay: -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sec.Close() })
	return sec
}

// TestAPIAuthentication: with users configured the API takes an admin's HTTP Basic
// credentials: none or wrong ones get 401 with a Basic challenge, a user of no admin
// group 403. The operator reaches the Backend with the request.
func TestAPIAuthentication(t *testing.T) {
	fake := &fakeBackend{}
	ts := newTestServer(t, fake, testSecurity(t), nil)
	resp, body := do(t, nil, "GET", ts.URL+"/api/broker", "")
	assert.Equal(t, 401, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic "))
	assert.NotEmpty(t, errorOf(t, body))
	resp, _ = do(t, nil, "GET", ts.URL+"/api/broker", "", "basic", "admin:wrong")
	assert.Equal(t, 401, resp.StatusCode)
	resp, body = do(t, nil, "GET", ts.URL+"/api/broker", "", "basic", "app:app-pw")
	assert.Equal(t, 403, resp.StatusCode)
	assert.Contains(t, errorOf(t, body), "no admin group")
	resp, _ = do(t, nil, "GET", ts.URL+"/stats", "", "basic", "app:app-pw")
	assert.Equal(t, 403, resp.StatusCode)
	resp, body = do(t, nil, "GET", ts.URL+"/api/broker", "", "basic", "admin:s3cret")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, body, `"name": "fake"`)

	resp, _ = do(t, nil, "POST", ts.URL+"/api/queues/q/purge", "", "basic", "admin:s3cret")
	assert.Equal(t, 200, resp.StatusCode, "Basic credentials need no CSRF token")
	assert.Equal(t, "admin", fake.who[len(fake.who)-1].User)

	// A page of another site posting with the browser's cached credentials.
	resp, body = do(t, nil, "POST", ts.URL+"/api/queues/q/purge", "", "basic", "admin:s3cret", "Origin", "http://evil.example")
	assert.Equal(t, 403, resp.StatusCode)
	assert.Contains(t, errorOf(t, body), "cross-site")
	resp, _ = do(t, nil, "POST", ts.URL+"/api/queues/q/purge", "", "basic", "admin:s3cret", "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, 403, resp.StatusCode)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consolePage is a console page with a form carrying the CSRF token, and a form
// handler that says who posted.
func consolePage(s *Server) {
	s.Handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `<form method="post" action="/purge"><input type="hidden" name="csrf" value="`+CSRFToken(r)+`"></form>`)
	}))
	s.Handle("POST /purge", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "purged by "+User(r))
	}))
}

// TestConsoleLoginAndCSRF: a browser without a session is sent to the login form; a
// login as an admin starts a session (HttpOnly, SameSite=Strict cookie); a console form
// post without the session's CSRF token is refused, with it accepted; logging out ends
// the session.
func TestConsoleLoginAndCSRF(t *testing.T) {
	ts := newTestServer(t, &fakeBackend{}, testSecurity(t), consolePage)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	noRedirect := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, _ := do(t, noRedirect, "GET", ts.URL+"/", "")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/login?next=%2F", resp.Header.Get("Location"))

	login := func(user, pass string) (*http.Response, string) {
		form := url.Values{"username": {user}, "password": {pass}, "next": {"/"}}
		return do(t, noRedirect, "POST", ts.URL+"/login", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	}
	resp, body := login("admin", "nope")
	assert.Equal(t, 401, resp.StatusCode)
	assert.Contains(t, body, "invalid user name or password")
	resp, body = login("app", "app-pw")
	assert.Equal(t, 403, resp.StatusCode)
	assert.Contains(t, body, "no admin group")
	resp, _ = login("admin", "s3cret")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cookie := resp.Header.Get("Set-Cookie")
	assert.Contains(t, cookie, "HttpOnly")
	assert.Contains(t, cookie, "SameSite=Strict")

	resp, body = do(t, browser, "GET", ts.URL+"/", "")
	require.Equal(t, 200, resp.StatusCode)
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	token := m[1]

	form := "csrf=" + url.QueryEscape(token)
	resp, body = do(t, browser, "POST", ts.URL+"/purge", "", "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, 403, resp.StatusCode, "no token: %s", body)
	resp, _ = do(t, browser, "POST", ts.URL+"/purge", "csrf=forged", "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, 403, resp.StatusCode, "a wrong token")
	resp, body = do(t, browser, "POST", ts.URL+"/purge", form, "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "purged by admin", body)
	resp, _ = do(t, browser, "POST", ts.URL+"/api/queues/q/purge", "", CSRFHeader, token)
	assert.Equal(t, 200, resp.StatusCode, "the console's scripts call the API with the header")
	resp, _ = do(t, browser, "POST", ts.URL+"/api/queues/q/purge", "")
	assert.Equal(t, 403, resp.StatusCode, "but not without it")

	resp, _ = do(t, noRedirect, "POST", ts.URL+"/logout", form, "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = do(t, noRedirect, "GET", ts.URL+"/", "")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "logged out")
}

// TestOpenConsoleStillNeedsCSRF: without authentication the console's forms still carry
// a CSRF token, of a session its first page makes: a post from elsewhere has none.
func TestOpenConsoleStillNeedsCSRF(t *testing.T) {
	ts := newTestServer(t, &fakeBackend{}, nil, consolePage)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	resp, _ := do(t, nil, "POST", ts.URL+"/purge", "", "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, 403, resp.StatusCode)
	resp, body := do(t, browser, "GET", ts.URL+"/", "")
	require.Equal(t, 200, resp.StatusCode)
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	resp, body = do(t, browser, "POST", ts.URL+"/purge", "csrf="+url.QueryEscape(m[1]), "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "purged by ", body)
	resp, _ = do(t, nil, "POST", ts.URL+"/api/queues/q/purge", "")
	assert.Equal(t, 200, resp.StatusCode, "the open API takes curl without a token")
	resp, _ = do(t, nil, "GET", ts.URL+"/login", "")
	assert.Equal(t, 200, resp.StatusCode)
}

// TestSessionsExpire: an idle session and one past its lifetime end; past the limit the
// least recently used goes.
func TestSessionsExpire(t *testing.T) {
	ss := newSessions(10, 100, 2) // in nanoseconds of the fake clock
	var now int64
	ss.now = func() time.Time { return time.Unix(0, now) }
	a := ss.create("a", nil)
	req := func(s *session) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: s.id})
		return r
	}
	now = 5
	require.NotNil(t, ss.get(req(a)))
	now = 14
	require.NotNil(t, ss.get(req(a)), "used at 5, idle 9")
	now = 25
	assert.Nil(t, ss.get(req(a)), "idle for 11")
	b := ss.create("b", nil) // at 25
	for now = 30; now <= 120; now += 9 {
		require.NotNil(t, ss.get(req(b)), "in use at %d", now)
	}
	now = 126
	assert.Nil(t, ss.get(req(b)), "past its lifetime")
	c, d := ss.create("c", nil), ss.create("d", nil)
	now++
	ss.get(req(c))
	e := ss.create("e", nil)
	assert.NotNil(t, ss.get(req(c)))
	assert.Nil(t, ss.get(req(d)), "the least recently used went")
	assert.NotNil(t, ss.get(req(e)))
}

// TestListenAndShutdown: the server listens (on loopback for a host-less address) and
// Shutdown returns, after which it takes no more connections.
func TestListenAndShutdown(t *testing.T) {
	s, err := New(Options{Backend: &fakeBackend{}})
	require.NoError(t, err)
	addr, err := s.Listen(":0")
	require.NoError(t, err)
	assert.True(t, isLoopback(addr), "%v", addr)
	resp, body := do(t, nil, "GET", "http://"+addr.String()+"/api/broker", "")
	assert.Equal(t, 200, resp.StatusCode, body)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	_, err = http.Get("http://" + addr.String() + "/api/broker")
	assert.Error(t, err)
}

// readOnly is a Reader that is no Manager.
type readOnly struct{ Reader }

// TestReaderServesReadsOnly: a Backend that only reads gets the API's GET routes, and
// the routes that change state are not there (nor listed at "/").
func TestReaderServesReadsOnly(t *testing.T) {
	fake := &fakeBackend{}
	s, err := New(Options{Backend: readOnly{fake}})
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	resp, body := do(t, nil, "GET", ts.URL+"/api/streams/events", "")
	assert.Equal(t, 200, resp.StatusCode, body)
	assert.Equal(t, "stream events", fake.last())
	for path, status := range map[string]int{"/api/queues/orders/purge": 404, "/api/queues/orders/messages": 405} {
		resp, body = do(t, nil, "POST", ts.URL+path, `{"body":"x"}`)
		assert.Equal(t, status, resp.StatusCode, "%s: %s", path, body)
	}
	assert.Equal(t, "stream events", fake.last(), "nothing that changes state was asked")
	_, index := do(t, nil, "GET", ts.URL+"/", "")
	assert.Contains(t, index, "GET /api/queues/{name}/messages\n")
	assert.NotContains(t, index, "POST /api/queues")
	assert.NotContains(t, index, "DELETE ")
}

// TestBrokerBackendServesEveryRoute: over a real broker the listener serves every
// route of the API, and lists them all at "/".
func TestBrokerBackendServesEveryRoute(t *testing.T) {
	b, err := broker.New(context.Background(), broker.Options{Store: memstore.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	s, err := New(Options{Backend: NewBrokerBackend(b, BrokerInfo{Adapter: "memory"})})
	require.NoError(t, err)
	var all []string
	for _, r := range s.apiRoutes() {
		all = append(all, r.pattern)
	}
	assert.Len(t, all, 22)
	assert.Equal(t, all, s.served)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	_, index := do(t, nil, "GET", ts.URL+"/", "")
	for _, p := range all {
		assert.Contains(t, index, "  "+p+"\n")
	}
	resp, body := do(t, nil, "POST", ts.URL+"/api/queues/orders/purge", "")
	assert.Equal(t, 404, resp.StatusCode, "no queue orders: the broker answered: %s", body)
	assert.Contains(t, errorOf(t, body), "no queue named orders")
}
