package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/admin"
)

// readiness is what the admin listener's GET /readyz says: whether this broker serves
// clients, and if not why (starting, a standby waiting for the store lock, stopping).
type readiness struct {
	mu  sync.Mutex
	ok  bool
	why string
}

func (r *readiness) set(ok bool, why string) {
	r.mu.Lock()
	r.ok, r.why = ok, why
	r.mu.Unlock()
}

func (r *readiness) get() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.why
}

// earlyHealth answers /healthz and /readyz on the admin address from the start of
// serve until the admin listener itself starts (a standby may wait for hours).
type earlyHealth struct {
	addr string // where it listens: the admin listener takes the same address
	stop func(context.Context) error
}

// startEarlyHealth serves r on addr, over TLS with tc (the admin listener's, nil for
// none) ("" or a failure to listen: nothing, logged; the admin listener's own start
// reports a bad address).
func startEarlyHealth(addr string, tc *tls.Config, r *readiness, log *slog.Logger) *earlyHealth {
	if addr == "" {
		return nil
	}
	bound, stop, err := admin.ServeHealth(addr, tc, r.get, log)
	if err != nil {
		log.Warn("the health endpoints cannot listen before the broker starts", slog.String("addr", addr), slog.Any("err", err))
		return nil
	}
	return &earlyHealth{addr: bound.String(), stop: stop}
}

// handOver stops serving and returns the address the admin listener takes: addr, or
// the one it listened on (the same port when addr asked for any).
func (e *earlyHealth) handOver(addr string) string {
	if e == nil {
		return addr
	}
	e.close()
	return e.addr
}

// close stops serving, freeing the address for the admin listener.
func (e *earlyHealth) close() {
	if e == nil || e.stop == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.stop(ctx)
	e.stop = nil
}
