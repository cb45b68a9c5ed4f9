// Package gctune keeps the Go garbage collector from running on a tiny heap.
//
// With the default GOGC=100 the next collection starts when the heap has doubled
// since the last one, but never below the runtime's 4 MiB minimum goal. A broker's
// live heap is often a few MiB while it moves hundreds of thousands of short-lived
// frames a second, so it collects every few milliseconds, and any live data it keeps
// (an authorization map, a durable registry) makes every cycle slower and more
// frequent: measured at ~30% of the throughput of a 2-core machine.
//
// Start sets, after each collection, the GC percentage that puts the next goal at
// max(2 × live heap, live heap + floor): a floor of extra heap at small sizes, and
// GOGC=100's behaviour once the live heap is larger than the floor, so a broker that
// holds a deep backlog in memory grows no more than it did.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// DefaultFloor is the extra heap allowed above the live heap before a collection.
const DefaultFloor = 64 << 20

// maxPercent bounds the percentage for a nearly empty heap: the goal is at most a
// thousand times the live heap, never "no collection at all".
const maxPercent = 100_000

// Tuner adjusts the GC percentage after each collection until Stop.
type Tuner struct {
	floor   int64
	stopped atomic.Bool
	percent atomic.Int64
	sample  []metrics.Sample
}

type sentinel struct{ _ [16]byte }

// Start tunes the collector with the given floor (bytes; <= 0 for DefaultFloor).
// It does nothing, and returns nil, when the environment sets GOGC or GOMEMLIMIT:
// the operator's choice wins.
func Start(floor int64) *Tuner {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	if floor <= 0 {
		floor = DefaultFloor
	}
	t := &Tuner{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.percent.Store(100)
	t.adjust()
	t.arm()
	return t
}

// arm sets a finalizer on a new unreachable object: it runs after the next
// collection, adjusts the percentage and arms the next one.
func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if t.stopped.Load() {
			return
		}
		t.adjust()
		t.arm()
	})
}

// adjust sets the percentage for the live heap the last collection left.
func (t *Tuner) adjust() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	live := int64(t.sample[0].Value.Uint64())
	if live <= 0 {
		return // no collection yet: nothing to size the goal on
	}
	p := int64(100)
	if live < t.floor {
		p = min(t.floor*100/live, maxPercent)
	}
	// Only a change of more than an eighth is worth the heap lock it takes.
	if old := t.percent.Load(); p == old || (p > old-old/8 && p < old+old/8) {
		return
	}
	t.percent.Store(p)
	debug.SetGCPercent(int(p))
}

// Percent is the GC percentage the tuner last set.
func (t *Tuner) Percent() int64 { return t.percent.Load() }

// Stop ends the tuning and restores GOGC=100.
func (t *Tuner) Stop() {
	if t == nil || t.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(100)
}
