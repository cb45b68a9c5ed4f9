// Package loglimit lets a log line that may repeat fast (a refused request, a dropped
// message) through once a minute, counting the ones it holds back.
package loglimit

import (
	"sync"
	"time"
)

// Every is how often a Limit lets its line through.
const Every = time.Minute

// Limit lets one repeated log line through once every Every. Its zero value is ready
// and it is safe for concurrent use.
type Limit struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// Allow reports whether the line may be logged at now and, if so, how many were held
// back since the last one.
func (l *Limit) Allow(now time.Time) (ok bool, heldBack int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < Every {
		l.skipped++
		return false, 0
	}
	heldBack, l.skipped = l.skipped, 0
	l.last = now
	return true, heldBack
}
