package config

import "math"

// Metrics is the metrics section: what GET /metrics on the admin listener exports
// besides the broker-wide series.
type Metrics struct {
	// PerDestination exports the series labelled with a destination
	// (broker_messages{destination,type}, broker_queue_*, the durable subscriptions'
	// backlogs, the streams' offsets and group lags) (default true); false keeps the
	// broker-wide series only, whatever the number of destinations.
	PerDestination bool `mapstructure:"perDestination"`
	// MaxDestinationSeries caps the destinations (and durable subscriptions, and
	// stream groups) exported one by one (default 1000, the cardinality guard): past
	// it the smallest are summed into destination="_other", and
	// broker_metrics_series_dropped_total counts what was folded. >= 1.
	MaxDestinationSeries int `mapstructure:"maxDestinationSeries"`
}

// Metrics defaults.
const (
	DefaultMetricsPerDestination       = true
	DefaultMetricsMaxDestinationSeries = 1000
)

// buildMetrics validates the metrics section (defaults are viper's).
func (c *checker) buildMetrics(m Metrics) (Metrics, *Error) {
	if err := c.intRange(joinKey("metrics", "maxDestinationSeries"), int64(m.MaxDestinationSeries), 1, math.MaxInt64,
		"destinations past it are summed into destination=\"_other\"; perDestination: false exports none"); err != nil {
		return Metrics{}, err
	}
	return m, nil
}
