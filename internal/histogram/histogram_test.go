package histogram

import (
	"sync"
	"testing"
	"time"
)

func TestObserveBuckets(t *testing.T) {
	h := New([]time.Duration{time.Millisecond, 10 * time.Millisecond})
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 10 * time.Millisecond, time.Second} {
		h.Observe(d)
	}
	s := h.Snapshot()
	if want := []uint64{2, 4}; s.Cumulative[0] != want[0] || s.Cumulative[1] != want[1] {
		t.Fatalf("cumulative = %v, want %v (le is inclusive)", s.Cumulative, want)
	}
	if s.Count != 5 {
		t.Fatalf("count = %d, want 5", s.Count)
	}
	if want := 1013 * time.Millisecond; s.Sum != want {
		t.Fatalf("sum = %v, want %v", s.Sum, want)
	}
}

func TestConcurrentObserve(t *testing.T) {
	h := New(nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				h.Observe(time.Duration(i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != 8000 {
		t.Fatalf("count = %d, want 8000", s.Count)
	}
	if last := s.Cumulative[len(s.Cumulative)-1]; last != 8000 {
		t.Fatalf("last bucket = %d, want 8000 (all under 10s)", last)
	}
}

func TestNewRejectsUnorderedBounds(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted decreasing bounds")
		}
	}()
	New([]time.Duration{time.Second, time.Millisecond})
}

func BenchmarkObserve(b *testing.B) {
	h := New(nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := 3 * time.Millisecond
		for pb.Next() {
			h.Observe(d)
		}
	})
}
