package loadtest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBucketsCoverEveryValueTightly(t *testing.T) {
	values := []int64{0, 1, 127, 128, 129, 130, 255, 256, 1000, 1 << 20, 123456789, math.MaxInt64 - 1, math.MaxInt64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, rng.Int64N(int64(time.Minute)))
	}
	for _, v := range values {
		i := bucketOf(v)
		if i >= numBuckets {
			t.Fatalf("value %d: bucket %d out of range", v, i)
		}
		high := bucketHigh(i)
		if high < v {
			t.Fatalf("bucket %d of %d ends below it, at %d", i, v, high)
		}
		if i > 0 && bucketHigh(i-1) >= v {
			t.Fatalf("value %d also fits bucket %d", v, i-1)
		}
		if v < subCount && high != v {
			t.Fatalf("small value %d is not exact: %d", v, high)
		}
		if v >= subCount && float64(high-v)/float64(v) > 1.0/64 {
			t.Fatalf("value %d: bucket ends at %d, too wide", v, high)
		}
	}
}

func TestQuantilesMatchSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h histogram
	samples := make([]int64, 100000)
	for i := range samples {
		// log-uniform from 1µs to 1s, like real latencies
		samples[i] = int64(math.Exp(rng.Float64()*math.Log(1e6)) * 1e3)
		h.record(samples[i])
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := samples[int(q*float64(len(samples)))-1]
		got := int64(h.quantile(q))
		assert.InEpsilon(t, exact, got, 1.0/64, "q=%v", q)
	}
	assert.Equal(t, time.Duration(samples[len(samples)-1]), h.quantile(1))
	assert.Equal(t, samples[len(samples)-1], h.max)
}

func TestHistogramEdges(t *testing.T) {
	var h histogram
	assert.Zero(t, h.quantile(0.5), "empty")

	h.record(-5) // a clock step counts as zero
	assert.Equal(t, time.Duration(0), h.quantile(0.5))

	var a, b histogram
	for range 90 {
		a.record(int64(time.Millisecond))
	}
	for range 10 {
		b.record(int64(time.Second))
	}
	a.merge(&b)
	assert.Equal(t, uint64(100), a.n)
	assert.InEpsilon(t, float64(time.Millisecond), float64(a.quantile(0.5)), 1.0/64)
	assert.InEpsilon(t, float64(time.Millisecond), float64(a.quantile(0.9)), 1.0/64)
	assert.Equal(t, time.Second, a.quantile(0.99), "capped at the exact max")
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h histogram
	b.ReportAllocs()
	v := int64(1234567)
	for b.Loop() {
		h.record(v)
		v = v*7 + 13&0xffffffff
	}
}
