package loadtest

import (
	"math/bits"
	"time"
)

// A histogram counts latencies in log-linear buckets, HDR style: values below
// 2^subBits nanoseconds have a bucket each; above, every power-of-two range
// is cut into 2^(subBits-1) equal buckets, so a bucket is never wider than
// 1/64 of its values (relative error below 1.6%). Recording is a few
// instructions and never allocates; the whole range of int64 fits in
// numBuckets counters. A histogram belongs to one goroutine; merge them at
// the end.
type histogram struct {
	counts [numBuckets]uint64
	n      uint64
	max    int64
}

const (
	subBits    = 7
	subCount   = 1 << subBits // 128: values below are exact
	halfCount  = subCount / 2 // buckets per power of two above that
	numBuckets = subCount + (64-subBits)*halfCount
)

// bucketOf returns the bucket index of v >= 0.
func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	// shift so that v>>shift lies in [halfCount, subCount).
	shift := bits.Len64(uint64(v)) - subBits
	return subCount + (shift-1)*halfCount + int(v>>shift) - halfCount
}

// bucketHigh returns the largest value that falls into bucket i.
func bucketHigh(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	shift := (i-subCount)/halfCount + 1
	sub := int64((i-subCount)%halfCount + halfCount)
	return (sub+1)<<shift - 1
}

// record adds one latency; negative values (clock steps) count as zero.
func (h *histogram) record(d int64) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(d)]++
	h.n++
	if d > h.max {
		h.max = d
	}
}

// merge adds o's samples to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the latency at or below which a fraction q of the samples
// lie, rounded up to its bucket's upper bound and capped at the maximum.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketHigh(i), h.max))
		}
	}
	return time.Duration(h.max)
}
