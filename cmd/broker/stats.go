package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// statsReport is what GET /stats returns: every destination's counters, every durable
// subscription with its backlog and age, memory use, and for stores with files their
// size and which destination holds the oldest data (KahaDB's "why are my logs kept").
type statsReport struct {
	Destinations []broker.DestinationStats `json:"destinations"`
	Durables     []durableReport           `json:"durableSubscriptions"`
	Memory       struct {
		Used  int64 `json:"used"`
		Limit int64 `json:"limit"`
	} `json:"memory"`
	Store *storeReport `json:"store,omitempty"`
	// Security counts logins (succeeded, failed, throttled) and denied requests.
	Security *security.Stats `json:"security,omitempty"`
}

type durableReport struct {
	broker.DurableStats
	OfflineSeconds float64 `json:"offlineSeconds"`
}

type storeReport struct {
	DiskUsage     int64  `json:"diskUsage"`
	OldestSegment string `json:"oldestSegment,omitempty"`
	PinnedBy      string `json:"oldestSegmentDestination,omitempty"`
}

func collectStats(b *broker.Broker, store persistence.Store) statsReport {
	var r statsReport
	r.Destinations = b.Stats()
	for _, d := range b.DurableSubscriptions() {
		r.Durables = append(r.Durables, durableReport{d, d.OfflineFor.Seconds()})
	}
	r.Memory.Used, r.Memory.Limit = b.MemoryUsage()
	if sr, ok := store.(persistence.SpaceReporter); ok {
		file, dest, _ := sr.OldestSegment()
		r.Store = &storeReport{DiskUsage: sr.DiskUsage(), OldestSegment: file, PinnedBy: dest}
	}
	return r
}

// serveStats serves GET /stats as JSON on addr until ctx ends. An address without a
// host ("":8161") listens on loopback only. When sec authenticates clients, every
// request must carry the HTTP Basic credentials of a user of an admin group.
func serveStats(ctx context.Context, addr string, b *broker.Broker, store persistence.Store, sec *security.Service, log *slog.Logger) (net.Addr, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		r := collectStats(b, store)
		if sec != nil {
			st := sec.Stats()
			r.Security = &st
		}
		_ = enc.Encode(r)
	})
	srv := &http.Server{Handler: adminOnly(sec, mux), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("stats server stopped", slog.Any("err", err))
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("stats listening", slog.String("addr", ln.Addr().String()))
	return ln.Addr(), nil
}

// adminOnly lets through the requests of a user of an admin group (HTTP Basic) when
// sec authenticates clients; without authentication the listener is as open as the
// broker. There is no default user: a fresh install has no admin/admin.
func adminOnly(sec *security.Service, next http.Handler) http.Handler {
	if sec == nil || !sec.Authenticating() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		var sub *security.Subject
		if ok {
			var err error
			sub, err = sec.Authenticate(r.Context(), security.Credentials{
				Login: user, Passcode: pass, HasLogin: true, RemoteAddr: r.RemoteAddr,
			})
			if err != nil {
				sub = nil
			}
		}
		if sub == nil || sub.Anonymous {
			w.Header().Set("WWW-Authenticate", `Basic realm="broker", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if !sec.IsAdmin(sub) {
			http.Error(w, "forbidden: "+sub.User+" is in no admin group (plugins.adminGroups)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
