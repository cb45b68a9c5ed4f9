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

// serveStats serves GET /stats as JSON on addr until ctx ends.
func serveStats(ctx context.Context, addr string, b *broker.Broker, store persistence.Store, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(collectStats(b, store))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
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
