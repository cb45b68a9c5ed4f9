// Package histogram is a lock-free histogram of durations for the broker's hot paths
// (a SEND's latency, a store's fsync): Observe is a few atomic adds and allocates
// nothing; Snapshot reads the counts for an exporter (admin/metrics turns it into a
// Prometheus histogram at scrape time). It knows nothing of Prometheus, so the broker
// and the persistence adapters below it need no metrics library.
package histogram

import (
	"sync/atomic"
	"time"
)

// DefaultBounds are the buckets' upper bounds New uses when given none: 50µs to 10s,
// about three per decade, which covers an in-memory send (tens of µs) as well as an
// fsync on a slow disk.
var DefaultBounds = []time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// Histogram counts durations in buckets with fixed upper bounds. The zero value is not
// usable; New makes one. It is safe for concurrent use.
type Histogram struct {
	bounds []time.Duration
	counts []atomic.Uint64 // len(bounds)+1: the last is +Inf
	sum    atomic.Int64    // ns
}

// New returns a histogram with the given upper bounds, which must be increasing (nil:
// DefaultBounds).
func New(bounds []time.Duration) *Histogram {
	if bounds == nil {
		bounds = DefaultBounds
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			panic("histogram: bounds must be increasing")
		}
	}
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts one duration. It takes two atomic adds.
func (h *Histogram) Observe(d time.Duration) {
	i := 0
	for i < len(h.bounds) && d > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Since counts the time since start.
func (h *Histogram) Since(start time.Time) { h.Observe(time.Since(start)) }

// Snapshot is a histogram's counts at one moment.
type Snapshot struct {
	// Bounds are the buckets' upper bounds; Cumulative[i] counts the durations up to
	// Bounds[i] (Prometheus' le buckets). Count includes those above the last bound.
	Bounds     []time.Duration
	Cumulative []uint64
	Count      uint64
	Sum        time.Duration
}

// Snapshot reads the counts. Observations under way may be in Sum and not yet in the
// counts, or the other way round; the counts are always consistent with each other.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var n uint64
	for i := range h.bounds {
		n += h.counts[i].Load()
		s.Cumulative[i] = n
	}
	s.Count = n + h.counts[len(h.bounds)].Load()
	s.Sum = time.Duration(h.sum.Load())
	return s
}
