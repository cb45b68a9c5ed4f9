package console

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noRedirects is an HTTP client that shows redirects instead of following them.
var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// post sends a form to the console.
func (e *env) post(t *testing.T, path string, form url.Values) *http.Response {
	t.Helper()
	resp, err := noRedirects.PostForm(e.url(path), form)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func (e *env) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	resp, err := noRedirects.Get(e.url(path))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// postRoutes are every POST route of the console, with a form that would succeed
// with the token.
var postRoutes = []struct {
	path string
	form url.Values
}{
	{"/queues/orders/purge", nil},
	{"/queues/orders/delete", nil},
	{"/queues/orders/send", url.Values{"body": {"x"}}},
	{"/queues/ActiveMQ.DLQ/move", url.Values{"to": {"original"}}},
	{"/queues/orders/messages/ID:broker-eu-1-1714561200000-880412/delete", nil},
	{"/queues/ActiveMQ.DLQ/messages/ID:broker-eu-1-1714561200000-650210/move", url.Values{"to": {"original"}}},
	{"/topics/send", url.Values{"topic": {"prices.eur"}, "body": {"x"}}},
	{"/topics/prices.usd/delete", nil},
	{"/durable/audit-service/prices/delete", nil},
	{"/connections/ID:broker-eu-1-1714561200000-c41/close", url.Values{"reason": {"bye"}}},
}

// TestCSRFRefused: every POST route refuses a request without the session's CSRF
// token, or with another one, with 403 and before doing anything; with the token,
// each does its work and redirects (303) with a flash.
func TestCSRFRefused(t *testing.T) {
	e := newEnv(t)
	for _, r := range postRoutes {
		for _, token := range []string{"", "wrong-" + testToken} {
			form := url.Values{}
			for k, v := range r.form {
				form[k] = v
			}
			if token != "" {
				form.Set(CSRFField, token)
			}
			resp := e.post(t, r.path, form)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "POST %s with token %q", r.path, token)
		}
	}
	assert.Empty(t, e.f.Sent())
	assert.Empty(t, e.f.Moves())
	assert.Empty(t, e.f.Purges())
	assert.Empty(t, e.f.Removed())
	assert.Empty(t, e.f.Closed())
	assert.Len(t, e.f.ids("orders"), 3)

	for _, r := range postRoutes {
		form := url.Values{CSRFField: {testToken}}
		for k, v := range r.form {
			form[k] = v
		}
		resp := e.post(t, r.path, form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "POST %s with the token", r.path)
		require.True(t, localPath(resp.Header.Get("Location")), "Location %q", resp.Header.Get("Location"))
		var flashed bool
		for _, c := range resp.Cookies() {
			flashed = flashed || (c.Name == flashCookie && c.Value != "")
		}
		require.True(t, flashed, "POST %s sets a flash", r.path)
	}
	assert.Len(t, e.f.Sent(), 2)
	assert.Len(t, e.f.Moves(), 2)
	assert.Equal(t, []string{"/queue/orders"}, e.f.Purges())
	assert.Len(t, e.f.Closed(), 1)
}

// TestGETChangesNothing: a GET of an action's path is not an action.
func TestGETChangesNothing(t *testing.T) {
	e := newEnv(t)
	for _, r := range postRoutes {
		resp, _ := e.get(t, r.path)
		assert.NotEqual(t, http.StatusSeeOther, resp.StatusCode, "GET %s", r.path)
	}
	assert.Empty(t, e.f.Purges())
	assert.Empty(t, e.f.Removed())
	assert.Empty(t, e.f.Moves())
}

// TestPages: every page answers 200 with the security headers; unknown queues,
// messages and streams are 404.
func TestPages(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/", "/queues", "/queues?q=ord", "/queues/orders", "/queues/orders?limit=1",
		"/queues/orders/messages/ID:broker-eu-1-1714561200000-880412", "/queues/ActiveMQ.DLQ", "/topics", "/durable",
		"/connections", "/streams", "/streams/events"} {
		resp, body := e.get(t, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
		assert.Equal(t, ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), path)
		assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
		assert.Contains(t, body, `value="`+testToken+`"`, "%s carries the CSRF token in its forms", path)
		assert.NotContains(t, body, "style=", "%s has no inline style", path)
		assert.NotContains(t, body, "<script>", "%s has no inline script", path)
	}
	for _, path := range []string{"/queues/nosuch", "/queues/orders/messages/ID:nosuch", "/streams/nosuch"} {
		resp, _ := e.get(t, path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	resp, body := e.get(t, "/queues?q=ord")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `data-queue="orders"`)
	assert.NotContains(t, body, `data-queue="payments"`)

	for _, asset := range []string{"console.css", "console.js", "favicon.svg"} {
		resp, body := e.get(t, StaticPrefix+asset)
		assert.Equal(t, http.StatusOK, resp.StatusCode, asset)
		assert.NotEmpty(t, body, asset)
	}
	resp, _ = e.get(t, StaticPrefix)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no listing of the assets")
}

// TestOddNames: a queue whose name holds a slash, spaces, a percent sign and quotes
// is reached by its escaped path and acted on by its real name.
func TestOddNames(t *testing.T) {
	e := newEnv(t)
	name := `a/b c%d'"?#`
	m := e.f.put(name, "ID:x/y?z", "odd", nil)
	path := "/queues/" + url.PathEscape(name)
	resp, body := e.get(t, path)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `href="`+path+`/messages/ID:x%2Fy%3Fz"`)
	resp, body = e.get(t, path+"/messages/"+url.PathEscape(m.ID))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp = e.post(t, path+"/purge", url.Values{CSRFField: {testToken}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, path, resp.Header.Get("Location"))
	assert.Equal(t, []string{"/queue/" + name}, e.f.Purges())
}

// TestEscapedInHTML: markup in a body, a header and a queue name reaches the HTML
// escaped.
func TestEscapedInHTML(t *testing.T) {
	e := newEnv(t)
	const evil = `<script>alert(1)</script>`
	m := e.f.put("orders", "", evil, map[string]string{"h": evil})
	_, body := e.get(t, "/queues/orders/messages/"+url.PathEscape(m.ID))
	assert.NotContains(t, body, evil)
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// TestReturnIsLocal: a form's "return" field redirects only within the site.
func TestReturnIsLocal(t *testing.T) {
	e := newEnv(t)
	for ret, want := range map[string]string{
		"/queues?q=x":          "/queues?q=x",
		"//evil.example/":      "/queues/orders",
		"https://evil.example": "/queues/orders",
		"/\\evil.example":      "/queues/orders",
		"":                     "/queues/orders",
	} {
		resp := e.post(t, "/queues/orders/send", url.Values{CSRFField: {testToken}, "body": {"x"}, "return": {ret}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		assert.Equal(t, want, resp.Header.Get("Location"), "return %q", ret)
	}
}

// TestFlashRoundTrip: the flash of an action is shown once, on the next page.
func TestFlashRoundTrip(t *testing.T) {
	e := newEnv(t)
	resp := e.post(t, "/queues/orders/purge", url.Values{CSRFField: {testToken}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	req, err := http.NewRequest(http.MethodGet, e.url(resp.Header.Get("Location")), nil)
	require.NoError(t, err)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	page, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer page.Body.Close()
	b, err := io.ReadAll(page.Body)
	require.NoError(t, err)
	assert.Contains(t, string(b), "Purged 3 messages from orders.")
	var cleared bool
	for _, c := range page.Cookies() {
		cleared = cleared || (c.Name == flashCookie && c.MaxAge < 0)
	}
	assert.True(t, cleared, "the flash is cleared once shown")
}

func TestRates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var h rateHistory
	at := func(d time.Duration, in, out int64) sample { return sample{at: t0.Add(d), in: in, out: out} }

	assert.False(t, h.rate(at(0, 0, 0)).OK, "no history")
	h.record(at(0, 1000, 500))
	assert.False(t, h.rate(at(500*time.Millisecond, 1100, 500)).OK, "too short a span")
	r := h.rate(at(10*time.Second, 2000, 1500))
	require.True(t, r.OK)
	assert.InDelta(t, 100, r.In, 0.001)
	assert.InDelta(t, 100, r.Out, 0.001)

	h.record(at(2*time.Second, 1200, 700)) // under sampleEvery: not kept
	assert.Len(t, h.samples, 1)
	for i := 1; i <= 200; i++ {
		h.record(at(time.Duration(i)*sampleEvery, 1000+int64(i)*50, 500+int64(i)*25))
	}
	span := h.samples[len(h.samples)-1].at.Sub(h.samples[0].at)
	assert.LessOrEqual(t, span, historyLength, "the history keeps 10 minutes")
	now := at(201*sampleEvery, 1000+201*50, 500+201*25)
	r = h.rate(now)
	require.True(t, r.OK)
	assert.Equal(t, rateWindow, r.Span, "rates over the last minute")
	assert.InDelta(t, 10, r.In, 0.001)
	assert.InDelta(t, 5, r.Out, 0.001)

	sp, ok := h.spark(now)
	require.True(t, ok)
	assert.InDelta(t, 10, sp.Max, 0.001)
	assert.Equal(t, len(h.samples), len(strings.Fields(sp.In)))

	// A restart (counters back to 0) is not a negative rate.
	r = h.rate(at(202*sampleEvery, 10, 10))
	assert.Zero(t, r.In)
}

func TestParseHeaders(t *testing.T) {
	hs, err := parseHeaders("content-type: application/json\r\n\n  tenant = eu \nurl: http://x:1/y\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"content-type": "application/json", "tenant": "eu", "url": "http://x:1/y"}, hs)
	_, err = parseHeaders("ok: 1\nnot a header")
	assert.ErrorContains(t, err, "line 2")
	_, err = parseHeaders(": no name")
	assert.ErrorContains(t, err, "no name")
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "1,234,567", formatNum(int64(1234567)))
	assert.Equal(t, "-1,000", formatNum(-1000))
	assert.Equal(t, "999", formatNum(999))
	assert.Equal(t, "512 B", formatBytes(512))
	assert.Equal(t, "1.5 KiB", formatBytes(1536))
	assert.Equal(t, "412 MiB", formatBytes(412<<20))
	assert.Equal(t, "–", formatAge(0))
	assert.Equal(t, "42s", formatAge(42.7))
	assert.Equal(t, "3m 05s", formatAge(185))
	assert.Equal(t, "2h 05m", formatAge(2*3600+5*60))
	assert.Equal(t, "3d 5h", formatAge(3*86400+5*3600+60))
	assert.Equal(t, "2.5/s", formatRate(2.5))
	assert.Equal(t, "1,235/s", formatRate(1234.6))
	assert.Equal(t, "JMSMessageID = 'it''s'", messageSelector("it's"))
	assert.True(t, isDLQName("ActiveMQ.DLQ"))
	assert.True(t, isDLQName("ActiveMQ.DLQ.Queue.orders"))
	assert.True(t, isDLQName("DLQ.orders"))
	assert.False(t, isDLQName("orders.DLQ"))
}
