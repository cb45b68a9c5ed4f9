package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/internal/allowedhosts"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/security"
)

// DefaultAddr is broker.adminAddress's default: ActiveMQ's console port, on loopback.
const DefaultAddr = "127.0.0.1:8161"

// Options configures a Server.
type Options struct {
	// Backend is the broker as the listener sees it (NewBrokerBackend): a Reader
	// serves the API's routes that read; one that is also a Manager those that change
	// state, and a StatsReporter GET /stats.
	Backend Reader
	// Security authenticates the operators: with users configured every route but
	// the login page needs a user of an admin group (broker.adminGroups), by HTTP
	// Basic credentials or a console session. nil, or a service without users, leaves
	// the listener open (it listens on loopback unless told otherwise).
	Security *security.Service
	Logger   *slog.Logger
	// Metrics, when set, is served at GET /metrics (Prometheus text format), behind the
	// same authorization as the API.
	Metrics http.Handler
	// Console, when set, mounts the web console's pages with Server.Handle (and its
	// assets with Server.HandlePublic) when the Server is made. Without a console "/"
	// lists the API's routes.
	Console func(s *Server)
	// SessionIdle is how long a console session lasts without a request (default 30
	// minutes); a session lasts at most 12 hours whatever its use.
	SessionIdle time.Duration
	// LoginStylesheet, when set, is the path of a stylesheet (served with
	// HandlePublic) the login page links to.
	LoginStylesheet string
	// MonitorGroups are the groups whose users may read what an administrator reads
	// (the API's GETs, Jolokia's reads, /stats, /metrics, the console's pages) and
	// change nothing (broker.monitorGroups; default none).
	MonitorGroups []string
	// AllowedHosts are the host name patterns (package allowedhosts) a request's
	// Host may name besides the listener's addresses and localhost
	// (broker.adminAllowedHosts): Listen refuses others with 421.
	AllowedHosts []string
	// TLS, when set, makes Listen serve HTTPS with this configuration
	// (broker.adminTLS).
	TLS *tls.Config
	// Ready says whether the broker is ready to serve clients, and if not why, for GET
	// /readyz (nil: always ready while the listener serves).
	Ready func() (ok bool, why string)
}

// Server is the admin listener: one net/http server whose every route goes through one
// authorization check (guard).
type Server struct {
	o        Options
	log      *slog.Logger
	mux      *http.ServeMux
	api      *http.ServeMux // the /api/ routes, also asked which methods a path takes
	served   []string       // the patterns of the API's routes mounted on api
	manage   Manager        // the Backend as a Manager; nil: the API only reads
	sessions *sessions
	authn    bool // operators must authenticate
	monitors []string
	// hostLog limits the log lines of requests refused for their Host.
	hostLog loglimit.Limit

	mu       sync.Mutex
	patterns map[string]bool // registered on mux
	srv      *http.Server
	// stop ends the requests in progress at Shutdown: a long move stops between two
	// chunks (each of which is whole in the store).
	stop context.CancelFunc
}

// New makes the server and mounts its routes, then the console's.
func New(o Options) (*Server, error) {
	if o.Backend == nil {
		return nil, errors.New("admin: no Backend")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 30 * time.Minute
	}
	s := &Server{
		o:        o,
		log:      o.Logger,
		mux:      http.NewServeMux(),
		api:      http.NewServeMux(),
		sessions: newSessions(o.SessionIdle, 12*time.Hour, maxSessions),
		authn:    o.Security != nil && o.Security.Authenticating(),
		monitors: o.MonitorGroups,
		patterns: map[string]bool{},
	}
	s.manage, _ = o.Backend.(Manager)
	s.routeAPI()
	s.route(apiAccess, "/api/", s.api)
	s.route(apiAccess, "GET /stats", http.HandlerFunc(s.stats))
	// ActiveMQ's Jolokia path, read-only (jolokia.go): its POSTs read too.
	s.route(readOnlyAccess, "/api/jolokia", http.HandlerFunc(s.jolokia))
	s.route(readOnlyAccess, "/api/jolokia/", http.HandlerFunc(s.jolokia))
	if o.Metrics != nil {
		s.route(apiAccess, "GET /metrics", o.Metrics)
	}
	s.route(publicAccess, "GET /healthz", http.HandlerFunc(healthz))
	s.route(publicAccess, "GET /readyz", http.HandlerFunc(s.readyz))
	s.route(publicAccess, "GET /login", http.HandlerFunc(s.loginPage))
	s.route(publicAccess, "POST /login", http.HandlerFunc(s.login))
	s.route(sessionAccess, "POST /logout", http.HandlerFunc(s.logout))
	if o.Console != nil {
		o.Console(s)
	}
	if !s.registered("/") && !s.registered("GET /") && !s.registered("GET /{$}") {
		s.route(consoleAccess, "GET /{$}", http.HandlerFunc(s.index))
	}
	if !s.registered("/") {
		s.route(consoleAccess, "/", http.NotFoundHandler())
	}
	return s, nil
}

// Handle mounts a console page: it needs a console session (a browser without one is
// sent to the login page) or HTTP Basic credentials, and a request that changes state
// (any method but GET and HEAD) must carry the session's CSRF token (CSRFToken) in the
// form field CSRFField or the header CSRFHeader. The pattern is an http.ServeMux
// pattern; the handler learns who asked with User.
func (s *Server) Handle(pattern string, h http.Handler) { s.route(consoleAccess, pattern, h) }

// HandlePublic mounts what needs no credentials: the console's stylesheets, scripts and
// images, which the login page uses too.
func (s *Server) HandlePublic(pattern string, h http.Handler) { s.route(publicAccess, pattern, h) }

// route mounts h on pattern behind guard.
func (s *Server) route(a access, pattern string, h http.Handler) {
	s.mu.Lock()
	s.patterns[pattern] = true
	s.mu.Unlock()
	s.mux.Handle(pattern, s.guard(a, h))
}

func (s *Server) registered(pattern string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.patterns[pattern]
}

// Handler is the server's whole handler, for tests (httptest.NewServer); Listen
// serves it behind the Host check.
func (s *Server) Handler() http.Handler { return s.mux }

// Listen starts serving on addr until Shutdown: HTTPS with Options.TLS, and only
// requests whose Host is one of the listener's (Options.AllowedHosts). An address
// without a host (":8161") listens on loopback only.
func (s *Server) Listen(addr string) (net.Addr, error) {
	ln, err := listen(addr)
	if err != nil {
		return nil, err
	}
	hosts := allowedhosts.New(s.o.AllowedHosts, ln.Addr())
	if s.o.TLS != nil {
		ln = tls.NewListener(ln, s.o.TLS)
	}
	base, stop := context.WithCancel(context.Background())
	srv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return base },
		Handler:           s.checkHost(hosts, s.mux),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	s.srv, s.stop = srv, stop
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin listener stopped", slog.Any("err", err))
		}
	}()
	switch {
	case !s.authn && !isLoopback(ln.Addr()):
		s.log.Warn("admin listener is open to anyone who can reach it: configure users in plugins (and broker.adminGroups) or listen on 127.0.0.1",
			slog.String("addr", ln.Addr().String()))
	case s.o.TLS == nil && !isLoopback(ln.Addr()):
		s.log.Warn("admin listener listens beyond loopback without TLS: passwords and session cookies cross the network in clear; set broker.adminTLS (with the sslContext certificate) or listen on 127.0.0.1",
			slog.String("addr", ln.Addr().String()))
	}
	s.log.Info("admin listening", slog.String("addr", ln.Addr().String()), slog.Bool("authentication", s.authn),
		slog.Bool("tls", s.o.TLS != nil))
	return ln.Addr(), nil
}

// checkHost refuses, with 421, a request whose Host the listener does not serve:
// a page of another name that resolves to the broker (DNS rebinding) gets no
// answer. The refusals are logged once a minute.
func (s *Server) checkHost(hosts *allowedhosts.Hosts, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hosts.Allow(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		if ok, more := s.hostLog.Allow(time.Now()); ok {
			s.log.Warn("admin request refused: its Host is not one of broker.adminAllowedHosts (a DNS rebinding attempt, or a name to add to the key; logged once a minute)",
				slog.String("host", truncate(r.Host, 200)), slog.String("remote", r.RemoteAddr), slog.Int("refusedSinceLastLine", more))
		}
		securityHeaders(w.Header())
		msg := fmt.Sprintf("misdirected request: this listener does not serve the host %q; "+
			"an operator adds the name to broker.adminAllowedHosts", truncate(allowedhosts.Name(r.Host), 200))
		if strings.HasPrefix(r.URL.Path, "/api/") {
			writeError(w, http.StatusMisdirectedRequest, msg)
			return
		}
		http.Error(w, msg, http.StatusMisdirectedRequest)
	})
}

// truncate shortens a string a client sent for a log line or an answer.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// listen listens on addr, on loopback when it names no host.
func listen(addr string) (net.Listener, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	return ln, nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Shutdown stops accepting requests, tells those in progress to end (their context is
// canceled: a bulk operation stops between two of its store batches), and waits for
// them, or ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, stop := s.srv, s.stop
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	stop()
	return srv.Shutdown(ctx)
}

// index is "/" without a console: where the API is.
func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var b strings.Builder
	b.WriteString("Broker admin listener. REST API (JSON; see docs/api.md):\n\n")
	for _, r := range s.served {
		b.WriteString("  " + r + "\n")
	}
	b.WriteString("\n  GET /api/jolokia/read/<mbean>[/<attribute>] (ActiveMQ's Jolokia reads)\n  POST /api/jolokia\n")
	b.WriteString("\n  GET /stats\n")
	if s.o.Metrics != nil {
		b.WriteString("  GET /metrics\n")
	}
	_, _ = w.Write([]byte(b.String()))
}
