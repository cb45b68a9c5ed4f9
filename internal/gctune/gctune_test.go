package gctune

import (
	"runtime"
	"testing"
	"time"
)

// TestFloor: with a small live heap the tuner raises the percentage so that the next
// goal is about the floor; holding a live heap larger than the floor brings it back to
// 100.
func TestFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tu := Start(256 << 20)
	if tu == nil {
		t.Fatal("Start did nothing with GOGC and GOMEMLIMIT unset")
	}
	defer tu.Stop()
	waitFor(t, "a percentage above 100 for a small heap", func() bool { return tu.Percent() > 100 })
	if p := tu.Percent(); p > maxPercent {
		t.Fatalf("percentage %d: over %d, the collector would hardly run", p, maxPercent)
	}

	hold := make([][]byte, 0, 600)
	for range 600 {
		hold = append(hold, make([]byte, 1<<20)) // 600 MiB live, over the floor
	}
	waitFor(t, "GOGC=100 once the live heap is over the floor", func() bool { return tu.Percent() == 100 })
	runtime.KeepAlive(hold)
}

// TestOperatorWins: GOGC in the environment turns the tuner off.
func TestOperatorWins(t *testing.T) {
	t.Setenv("GOGC", "50")
	if Start(0) != nil {
		t.Fatal("the tuner started although GOGC is set")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.GC()
		runtime.Gosched()
	}
}
