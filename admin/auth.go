package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/security"
)

// Who may do what on the admin listener. Every route is mounted through guard, which
// sets the security headers, refuses cross-site requests that change state, and then,
// when authentication is configured, asks for a user of an admin group, or of a
// monitoring group (broker.monitorGroups) for what only reads:
//
//   - API routes (/api/, /metrics, /stats) take HTTP Basic credentials; without any,
//     401 with WWW-Authenticate. A console session is accepted too (the console's own
//     scripts), and then a request that changes state carries the CSRF token.
//   - Console pages (Server.Handle) take the session cookie the login form sets
//     (HttpOnly, SameSite=Strict, in memory, idle and absolute expiry); a browser
//     without one is sent to /login. A request that changes state carries the
//     session's CSRF token in the form field CSRFField or the header CSRFHeader.
//     HTTP Basic credentials are accepted as for the API.
//   - The Jolokia reads (/api/jolokia) are API routes whose POSTs only read: they
//     need neither a CSRF token nor a same-site Origin.
//   - Failed logins are throttled by the security service (its per-host delays), as
//     STOMP logins are.
//   - A user of a monitoring group and of no admin group reads what an
//     administrator reads (every GET, the Jolokia reads, the console's pages) and
//     gets 403 for every request that changes state but its own logout.
//
// Without authentication the API is open (the listener binds loopback by default) and
// the console gets a session of its own on its first page, whose CSRF token its forms
// carry. There is no default user.

// access is what a route asks of a request.
type access int

const (
	publicAccess  access = iota // the login page and the console's assets
	apiAccess                   // HTTP Basic; 401 with WWW-Authenticate
	consoleAccess               // a session; the login page for a browser without one
	// readOnlyAccess is apiAccess for routes whose every method only reads (the
	// Jolokia reads, POST included): a POST there changes nothing, so it needs no
	// CSRF token and may come with another Origin (ActiveMQ users' scripts send
	// "Origin: http://localhost", which ActiveMQ's Jolokia asks for).
	readOnlyAccess
	// sessionAccess is consoleAccess for a route that changes the operator's own
	// session only (logout): a monitor may use it.
	sessionAccess
)

// console reports whether the route is one of the console's (a session; the login
// page for a browser without one).
func (a access) console() bool { return a == consoleAccess || a == sessionAccess }

// CSRFField and CSRFHeader carry a console request's CSRF token.
const (
	CSRFField  = "csrf"
	CSRFHeader = "X-CSRF-Token"
)

// sessionCookie names the console session's cookie.
const sessionCookie = "broker_session"

// maxSessions bounds the sessions kept; past it the least recently used goes.
const maxSessions = 10000

// Identity is who made a request, as guard found it.
type Identity struct {
	// User is the operator's user name ("" when the listener is open).
	User string
	// Subject is the user as the security service authenticated it; nil when the
	// listener is open.
	Subject *security.Subject
	// Remote is the client's address.
	Remote string
	// ReadOnly is set for a user of a monitoring group (Options.MonitorGroups) and
	// of no admin group: it may read, not change anything.
	ReadOnly bool
	csrf     string // the session's CSRF token, if a session
}

// String names the operator for logs: user@address.
func (id Identity) String() string {
	u := id.User
	if u == "" {
		u = "anonymous"
	}
	return u + "@" + id.Remote
}

type identityKey struct{}

// IdentityOf returns who made the request whose context is ctx (for a Backend: who
// asks for an operation).
func IdentityOf(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// User returns the operator's user name of a request passed by guard ("" when the
// listener is open).
func User(r *http.Request) string { return IdentityOf(r.Context()).User }

// CSRFToken returns the CSRF token a console page puts in the forms it renders (field
// CSRFField) or its scripts send (header CSRFHeader); "" outside a console session.
func CSRFToken(r *http.Request) string { return IdentityOf(r.Context()).csrf }

// securityHeaders are on every response.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// mutating reports whether a request may change state.
func mutating(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// crossSite reports whether a browser says the request comes from another site: a
// page elsewhere posting to the listener (with the browser's cached credentials, or
// to an open listener on loopback). Clients that are not browsers send neither header.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	case "same-origin", "none":
		return false // the browser says so; its Origin may be "null" under a strict Referrer-Policy
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host != r.Host
}

// guard is the one authorization check every route goes through.
func (s *Server) guard(a access, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if a != publicAccess {
			w.Header().Set("Cache-Control", "no-store")
		}
		changes := mutating(r.Method) && a != readOnlyAccess
		if changes && crossSite(r) {
			s.deny(w, r, a, http.StatusForbidden, "cross-site request refused")
			return
		}
		if a == publicAccess {
			next.ServeHTTP(w, r)
			return
		}
		id := Identity{Remote: r.RemoteAddr}
		sess := s.sessions.get(r)
		switch {
		case hasBasic(r) && s.authn:
			sub, status, msg := s.authenticate(r)
			if status != 0 {
				s.deny(w, r, a, status, msg)
				return
			}
			id.User, id.Subject = sub.User, sub
		case sess != nil:
			if changes && !validCSRF(r, sess.csrf) {
				s.deny(w, r, a, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
				return
			}
			id.User, id.Subject, id.csrf = sess.user, sess.subject, sess.csrf
		case s.authn:
			if a.console() && !mutating(r.Method) {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.deny(w, r, a, http.StatusUnauthorized, "authentication required")
			return
		case a.console():
			// Open listener: the console's forms still carry a CSRF token, of a
			// session made on the first page.
			if mutating(r.Method) {
				s.deny(w, r, a, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
				return
			}
			sess = s.sessions.create("", nil)
			s.setCookie(w, r, sess)
			id.csrf = sess.csrf
		}
		if id.Subject != nil && !s.o.Security.IsAdmin(id.Subject) {
			id.ReadOnly = true
			if changes && a != sessionAccess {
				s.deny(w, r, a, http.StatusForbidden, "forbidden: "+id.User+
					" is in a monitoring group (broker.monitorGroups), which may read but change nothing")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

func hasBasic(r *http.Request) bool {
	_, _, ok := r.BasicAuth()
	return ok
}

// authenticate checks a request's HTTP Basic credentials: a status (401 or 403) and
// its message when they are refused.
func (s *Server) authenticate(r *http.Request) (*security.Subject, int, string) {
	user, pass, _ := r.BasicAuth()
	sub, status, msg := s.check(r.Context(), user, pass, r.RemoteAddr)
	return sub, status, msg
}

// check authenticates user and pass for the admin listener: a status (401 or 403)
// and its message when refused.
func (s *Server) check(ctx context.Context, user, pass, remote string) (*security.Subject, int, string) {
	sub, err := s.o.Security.Authenticate(ctx, security.Credentials{Login: user, Passcode: pass, HasLogin: true, RemoteAddr: remote})
	if err != nil || sub == nil || sub.Anonymous {
		return nil, http.StatusUnauthorized, "invalid user name or password"
	}
	if !s.o.Security.IsAdmin(sub) && !s.monitor(sub) {
		msg := "forbidden: " + sub.User + " is in no admin group (broker.adminGroups)"
		if len(s.monitors) > 0 {
			msg += " nor monitoring group (broker.monitorGroups)"
		}
		return nil, http.StatusForbidden, msg
	}
	return sub, 0, ""
}

// monitor reports whether sub is in one of the monitoring groups.
func (s *Server) monitor(sub *security.Subject) bool {
	for _, g := range sub.Groups {
		if slices.Contains(s.monitors, g) {
			return true
		}
	}
	return false
}

func validCSRF(r *http.Request, want string) bool {
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		ct := r.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data") {
			got = r.PostFormValue(CSRFField)
		}
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// deny answers a refused request: JSON for the API, text for the rest.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, a access, status int, msg string) {
	api := a == apiAccess || a == readOnlyAccess
	if status == http.StatusUnauthorized && api {
		w.Header().Set("WWW-Authenticate", `Basic realm="broker", charset="UTF-8"`)
	}
	if api {
		writeError(w, status, msg)
		return
	}
	http.Error(w, msg, status)
}

// session is one console login.
type session struct {
	id, csrf string
	user     string
	subject  *security.Subject
	created  time.Time
	lastSeen time.Time
}

// sessions are the console sessions, in memory: a restart logs everyone out.
type sessions struct {
	idle, life time.Duration
	limit      int
	now        func() time.Time

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(idle, life time.Duration, limit int) *sessions {
	return &sessions{idle: idle, life: life, limit: limit, now: time.Now, m: map[string]*session{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for user.
func (ss *sessions) create(user string, sub *security.Subject) *session {
	now := ss.now()
	s := &session{id: randomToken(), csrf: randomToken(), user: user, subject: sub, created: now, lastSeen: now}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= ss.limit {
		var oldest *session
		for id, x := range ss.m {
			if ss.expired(x, now) {
				delete(ss.m, id)
				continue
			}
			if oldest == nil || x.lastSeen.Before(oldest.lastSeen) {
				oldest = x
			}
		}
		if len(ss.m) >= ss.limit && oldest != nil {
			delete(ss.m, oldest.id)
		}
	}
	ss.m[s.id] = s
	return s
}

func (ss *sessions) expired(s *session, now time.Time) bool {
	return now.Sub(s.lastSeen) > ss.idle || now.Sub(s.created) > ss.life
}

// get returns the live session of the request's cookie, or nil.
func (ss *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[c.Value]
	if s == nil {
		return nil
	}
	if ss.expired(s, now) {
		delete(ss.m, s.id)
		return nil
	}
	s.lastSeen = now
	return s
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, sess *session) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sess.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

var loginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Broker console: log in</title>
{{if .Stylesheet}}<link rel="stylesheet" href="{{.Stylesheet}}">{{end}}</head>
<body class="login"><main>
<h1>Broker console</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<p><label>User <input name="username" autocomplete="username" required autofocus></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Log in</button></p>
</form></main></body></html>
`))

type loginView struct {
	Next, Error, Stylesheet string
}

// safeNext is the local path to go to after the login: never another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.HasPrefix(next, "/login") {
		return "/"
	}
	return next
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if !s.authn {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.renderLogin(w, http.StatusOK, loginView{Next: safeNext(r.URL.Query().Get("next"))})
}

func (s *Server) renderLogin(w http.ResponseWriter, status int, v loginView) {
	v.Stylesheet = s.o.LoginStylesheet
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = loginTmpl.Execute(w, v)
}

// login checks the form's credentials and starts a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.authn {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := safeNext(r.PostFormValue("next"))
	sub, status, msg := s.check(r.Context(), r.PostFormValue("username"), r.PostFormValue("password"), r.RemoteAddr)
	if status != 0 {
		s.renderLogin(w, status, loginView{Next: next, Error: msg})
		return
	}
	if old := s.sessions.get(r); old != nil {
		s.sessions.remove(old.id)
	}
	sess := s.sessions.create(sub.User, sub)
	s.setCookie(w, r, sess)
	s.log.Info("console login", "user", sub.User, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session (guard checked its CSRF token).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if sess := s.sessions.get(r); sess != nil {
		s.sessions.remove(sess.id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	target := "/login"
	if !s.authn {
		target = "/"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}
