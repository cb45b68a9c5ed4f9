// Package race tells tests whether the race detector is on, so that a deadline bounding
// a wait can allow for the slowdown it brings.
package race

import "time"

// Factor is how much longer a deadline lasts under the race detector: the Go
// documentation puts its cost at 2-20 times the execution time, and a test's deadline
// already carries a margin for a busy machine on top of the expected wait.
const Factor = 5

// Scale returns d, times Factor when the race detector is on.
func Scale(d time.Duration) time.Duration {
	if Enabled {
		return d * Factor
	}
	return d
}
