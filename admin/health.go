package admin

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Health endpoints, for load balancers and orchestrators: unauthenticated, and they
// tell nothing but whether the process serves (GET /healthz) and whether this broker is
// ready to take clients (GET /readyz). They answer HEAD too.

// healthz answers 200 while the process serves HTTP at all.
func healthz(w http.ResponseWriter, _ *http.Request) {
	plain(w, http.StatusOK, "ok\n")
}

// readyz answers 200 "ready" when Options.Ready says so (or none is set), and 503 with
// its reason otherwise ("standby: ...", "stopping").
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	ok, why := true, "ready"
	if s.o.Ready != nil {
		ok, why = s.o.Ready()
	}
	if !ok {
		plain(w, http.StatusServiceUnavailable, why+"\n")
		return
	}
	plain(w, http.StatusOK, why+"\n")
}

func plain(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// HealthHandler serves GET /healthz and GET /readyz alone, with ready for /readyz: what
// answers on the admin address while the broker is not started yet (a standby waiting
// for the store lock, a store being recovered).
func HealthHandler(ready func() (bool, string)) http.Handler {
	s := &Server{o: Options{Ready: ready}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, why := ready()
		plain(w, http.StatusServiceUnavailable, "the broker is not serving yet: "+why+"\n")
	})
	return mux
}

// ServeHealth serves HealthHandler(ready) on addr (on loopback when it names no host),
// HTTPS with tc when it is not nil, until the returned stop is called, which closes the listener and waits for the
// requests in progress (or ctx). bound is the address it listens on (its port when addr
// asked for any).
func ServeHealth(addr string, tc *tls.Config, ready func() (bool, string), log *slog.Logger) (bound net.Addr, stop func(ctx context.Context) error, err error) {
	ln, err := listen(addr)
	if err != nil {
		return nil, nil, err
	}
	bound = ln.Addr()
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	srv := &http.Server{Handler: HealthHandler(ready), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	log.Info("admin listener answers /healthz and /readyz only until the broker starts", slog.String("addr", bound.String()), slog.Bool("tls", tc != nil))
	return bound, srv.Shutdown, nil
}
