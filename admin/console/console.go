// Package console is the admin listener's web console: server-rendered HTML pages
// (html/template) over a Backend (admin.BrokerBackend is one), with their stylesheet and one small script
// embedded in the binary. No build step, nothing from a CDN, and it works under the
// Content-Security-Policy it sends itself (default-src 'self': no inline script or
// style).
//
// # Pages
//
//	GET  /                                  overview: broker, rates, gauges, every queue
//	GET  /queues                            queues with counters; purge, delete
//	GET  /queues/{name}                     counters, browse (cursor paging), send, move/retry
//	GET  /queues/{name}/messages/{id}       one message: headers, body; delete, retry, move
//	GET  /topics                            topics; send, delete
//	GET  /durable                           durable subscriptions; remove
//	GET  /connections                       connections; close with a reason
//	GET  /streams, /streams/{name}          streams; partitions and consumer-group lag
//	GET  /scheduled                         scheduled messages; remove one, remove all
//	GET  /console/static/...                the embedded CSS and JS
//
// {name} is the destination's name without /queue/ or /topic/, path-escaped.
//
// # Actions
//
// Every change is a POST of a form that carries the CSRF token (the hidden field
// CSRFField, from Session.CSRFToken), checked with Session.CheckCSRF before anything
// else; the answer is a 303 redirect to a page (POST-redirect-GET) that shows a flash
// message saying what was done or what failed. The flash travels in a short-lived
// cookie. Destructive actions ask for a confirmation in the browser (console.js).
//
//	POST /queues/{name}/purge | /delete | /send | /move
//	POST /queues/{name}/messages/{id}/delete | /move
//	POST /topics/send, /topics/{name}/delete
//	POST /durable/{clientId}/{name}/delete
//	POST /connections/{id}/close
//	POST /scheduled/{id}/delete, /scheduled/delete
//
// A dead-letter queue (a name starting with DLQ. or ActiveMQ.DLQ, or a destination the
// broker flags as one) gets "retry" buttons: a move to "original", each message back to
// the destination it died on. A single message is moved by the selector
// JMSMessageID = 'id' with a limit of 1.
//
// # Escaping
//
// Destination names, message bodies and headers, client ids and user names are
// attacker-controlled (ActiveMQ's console had a string of XSS CVEs through exactly
// those). They only ever reach the page through html/template's contextual escaping;
// nothing here builds template.HTML, template.JS or template.URL from data.
package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CSRFField is the name of the hidden form field that carries the CSRF token in every
// POST of the console (the admin listener's admin.CSRFField); Session.CheckCSRF reads
// it from the request's form.
const CSRFField = "csrf"

// StaticPrefix is where the console serves its embedded assets.
const StaticPrefix = "/console/static/"

// ContentSecurityPolicy is the policy the console sends with every page.
const ContentSecurityPolicy = "default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Session is what the console needs of the admin listener's login session.
type Session interface {
	// User is the logged-in user, "" when authentication is off.
	User(r *http.Request) string
	// CSRFToken is the token the console puts in the CSRFField of its forms.
	CSRFToken(r *http.Request) string
	// CheckCSRF reports whether the request (a POST) carries the session's token in
	// the form field CSRFField.
	CheckCSRF(r *http.Request) bool
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Backend is what the console asks of the broker: what its pages show (Reader) and
// what its actions do (Manager).
type Backend interface {
	Reader
	Manager
}

// Console serves the pages. Its methods are safe for concurrent use.
type Console struct {
	b     Backend
	s     Session
	pages map[string]*template.Template

	nameOnce sync.Once
	name     string // the broker's name
	version  string // and version

	mu    sync.Mutex
	now   func() time.Time // the clock of the rate samples
	rates rateHistory
}

// New returns the console of b; s is the admin listener's login session.
func New(b Backend, s Session) *Console {
	c := &Console{b: b, s: s, now: time.Now, pages: map[string]*template.Template{}}
	layout := template.Must(template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		c.pages[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, name))
	}
	return c
}

// Register mounts the console's pages, actions and assets on mux. It uses the
// patterns listed in the package comment: GET /{$} (the root exactly) and paths under
// /queues, /topics, /durable, /connections, /streams, /scheduled and /console/static/.
func (c *Console) Register(mux *http.ServeMux) { c.Mount(mux.Handle, mux.Handle) }

// Mount mounts the console through the admin listener's own registration: the pages
// and actions with page (behind the login session), the assets under StaticPrefix
// with public (no login needed: the login page may use the stylesheet). The patterns
// are Register's.
func (c *Console) Mount(page, public func(pattern string, h http.Handler)) {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	public("GET "+StaticPrefix, http.StripPrefix(StaticPrefix, staticHandler(static)))

	get := func(pattern string, h func(http.ResponseWriter, *http.Request)) {
		page("GET "+pattern, c.headers(http.HandlerFunc(h)))
	}
	get("/{$}", c.overview)
	get("/queues", c.queues)
	get("/queues/{name}", c.queue)
	get("/queues/{name}/messages/{id}", c.message)
	get("/topics", c.topics)
	get("/durable", c.durables)
	get("/connections", c.connections)
	get("/streams", c.streams)
	get("/streams/{name}", c.stream)
	get("/scheduled", c.scheduled)

	post := func(pattern string, h func(http.ResponseWriter, *http.Request)) {
		page("POST "+pattern, c.headers(c.csrf(http.HandlerFunc(h))))
	}
	post("/queues/{name}/purge", c.purgeQueue)
	post("/queues/{name}/delete", c.deleteQueue)
	post("/queues/{name}/send", c.sendQueue)
	post("/queues/{name}/move", c.moveQueue)
	post("/queues/{name}/messages/{id}/delete", c.deleteMessage)
	post("/queues/{name}/messages/{id}/move", c.moveMessage)
	post("/topics/send", c.sendTopic)
	post("/topics/{name}/delete", c.deleteTopic)
	post("/durable/{clientId}/{name}/delete", c.deleteDurable)
	post("/connections/{id}/close", c.closeConnection)
	post("/scheduled/{id}/delete", c.deleteScheduled)
	post("/scheduled/delete", c.deleteAllScheduled)
}

// staticHandler serves the embedded assets, with a cache lifetime of an hour.
func staticHandler(static fs.FS) http.Handler {
	files := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

// headers sets the security headers of every console page.
func (c *Console) headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// csrf refuses a POST without the session's CSRF token, before anything is done.
func (c *Console) csrf(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !c.s.CheckCSRF(r) {
			slog.Warn("console: POST refused: missing or wrong CSRF token", slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr))
			http.Error(w, "forbidden: missing or wrong CSRF token (reload the page and try again)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// maxFormBytes bounds a POSTed form (a message sent from the console included).
const maxFormBytes = 4 << 20

// page is what every template gets.
type page struct {
	Title   string
	Nav     string // the active navigation entry
	User    string
	CSRF    string
	Flash   *flash
	Broker  string
	Version string // the broker's build, for the footer
	Refresh int    // seconds between automatic reloads; 0 none
	Path    string
	Data    any
}

// render writes the page template name with data.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	brokerName := c.brokerName() // sets c.version too
	p := page{
		Title:   title,
		Nav:     nav,
		User:    c.s.User(r),
		CSRF:    c.s.CSRFToken(r),
		Flash:   takeFlash(w, r),
		Broker:  brokerName,
		Version: c.version,
		Path:    r.URL.RequestURI(),
		Data:    data,
	}
	if name == "overview" {
		p.Refresh = overviewRefresh
	}
	t, ok := c.pages[name]
	if !ok {
		panic("console: no template " + name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		slog.Error("console: rendering a page", slog.String("page", name), slog.Any("err", err))
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// brokerName is the broker's name for the page header, asked of the Backend once
// with its version for the footer (c.version).
func (c *Console) brokerName() string {
	c.nameOnce.Do(func() {
		o := c.b.Overview()
		c.name = o.Name
		c.version = o.Version
		if sc := o.Build.ShortCommit(); sc != "" {
			c.version += " (" + sc + ")"
		}
	})
	return c.name
}

// overviewRefresh is how often the overview reloads itself (a meta refresh).
const overviewRefresh = 10

// notFound renders the error page with status 404.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request, nav, what string) {
	c.render(w, r, http.StatusNotFound, "error", "Not found", nav, what)
}

// redirect ends an action: a 303 to the page the form came from (its "return" field,
// when that is a path of this site) or to fallback, with a flash message.
func redirect(w http.ResponseWriter, r *http.Request, fallback string, f flash) {
	to := fallback
	if ret := r.PostFormValue("return"); localPath(ret) {
		to = ret
	}
	setFlash(w, f)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// localPath reports whether p is a path on this site (not //host or a URL with a
// scheme), so that a redirect to it cannot leave the console.
func localPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.Contains(p, "\\") {
		return false
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

// errorFlash is the flash of a failed action.
func errorFlash(format string, args ...any) flash {
	return flash{Kind: flashError, Text: fmt.Sprintf(format, args...)}
}

// okFlash is the flash of a successful action.
func okFlash(format string, args ...any) flash {
	return flash{Kind: flashOK, Text: fmt.Sprintf(format, args...)}
}
