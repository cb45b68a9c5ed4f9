// Package metrics serves the broker's Prometheus metrics (GET /metrics on the admin
// listener) with github.com/prometheus/client_golang: the names and labels of
// operations.md §2.4 (namespace broker_), and the Go runtime's and the process's.
//
// Nothing is counted here. At each scrape a collector reads the counters the broker
// keeps anyway (the broker's management surface: Counters, DestinationMetrics, Subscriptions,
// Resources, DurableSubscriptions; the security service's Stats), so the message path
// pays nothing for being scraped, and nothing at all when nobody scrapes.
//
// # Cardinality
//
// The series labelled with a destination (broker_messages, broker_queue_*, the durable
// subscriptions' backlogs, the streams' offsets and group lags) are capped: at most
// Options.MaxDestinationSeries destinations are exported one by one, those holding the
// most messages first (then the busiest, then by name); the others are summed per type
// into destination="_other" (stream="_other", subscription="_other"), and
// broker_metrics_series_dropped_total counts, scrape after scrape, the series folded
// that way. Options.PerDestination false folds every destination. The broker-wide
// series never depend on the number of destinations.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/security"
)

// Source is what the metrics read of the broker at scrape time. The broker's
// management surface (*management.Manager) implements it; tests use a fake.
type Source interface {
	Counters() management.Counters
	DestinationMetrics() []management.DestinationMetrics
	DurableSubscriptions() []durable.Stats
	Subscriptions() management.SubscriptionCounts
	Resources(ctx context.Context) []management.ResourceUsage
}

var _ Source = (*management.Manager)(nil)

// SecurityStats is the security service's counters (*security.Service implements it).
type SecurityStats interface {
	Stats() security.Stats
}

// DefaultMaxDestinationSeries is Options.MaxDestinationSeries' default (config's
// metrics.maxDestinationSeries).
const DefaultMaxDestinationSeries = 1000

// Options configures the metrics.
type Options struct {
	// Version and Commit label broker_build_info; empty: what the binary's build
	// information says (the main module's version, the vcs.revision setting).
	Version, Commit string
	// Store names the persistence adapter, the store label of
	// broker_store_sync_duration_seconds (kahadb, bbolt, ...).
	Store string
	// Security is the security service, for broker_auth_attempts_total; nil when the
	// broker has none.
	Security SecurityStats
	// PerDestination exports the series labelled with a destination; false sums them
	// all into destination="_other".
	PerDestination bool
	// MaxDestinationSeries caps the destinations exported one by one; <= 0 is
	// DefaultMaxDestinationSeries.
	MaxDestinationSeries int
	// ResourceTimeout bounds reading the store's size at a scrape (a database store
	// may ask its server); 0 is 2s.
	ResourceTimeout time.Duration
	// Logger logs a scrape that failed (nil: nowhere).
	Logger *slog.Logger
}

// NewRegistry returns a registry holding the broker's collector and the Go runtime's
// and the process's (go_*, process_*).
func NewRegistry(src Source, o Options) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		NewCollector(src, o),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves the metrics in Prometheus' exposition formats (text, or what the
// scraper's Accept header asks for), gzipped when the scraper accepts it. It does not
// check who asks: the admin listener mounts it behind its authorization.
func Handler(src Source, o Options) http.Handler {
	ho := promhttp.HandlerOpts{
		// A scrape that fails halfway still serves what it gathered (and logs why):
		// Prometheus then keeps the other series.
		ErrorHandling: promhttp.ContinueOnError,
	}
	if o.Logger != nil {
		ho.ErrorLog = slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn)
	}
	return promhttp.HandlerFor(NewRegistry(src, o), ho)
}
