package main

import (
	"time"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/destinations/policy"
)

// expirySweep is how often the broker's expiry sweeper wakes: the shortest
// expireMessagesPeriod configured (or the default's, for destinations no entry matches).
// Each destination is swept on its own period; one of 0 is never swept.
func expirySweep(entries []policy.Policy) time.Duration {
	d := policy.DefaultExpireMessagesPeriod
	for _, e := range entries {
		if e.ExpireMessagesPeriod > 0 && e.ExpireMessagesPeriod < d {
			d = e.ExpireMessagesPeriod
		}
	}
	return d
}

// destinationGCPeriod is how often the broker looks for inactive destinations: never
// when no entry has gcInactiveDestinations, otherwise every half of the shortest
// inactiveTimeoutBeforeGC of those that do, at most every 10s.
func destinationGCPeriod(entries []policy.Policy) time.Duration {
	d := time.Duration(-1)
	for _, e := range entries {
		if !e.GCInactiveDestinations {
			continue
		}
		p := min(max(e.InactiveTimeoutBeforeGC/2, 10*time.Millisecond), broker.DefaultDestinationGCPeriod)
		if d < 0 || p < d {
			d = p
		}
	}
	return d
}

// hasStreams reports whether any entry makes destinations streams, so the broker needs
// the stream log.
func hasStreams(entries []policy.Policy) bool {
	for _, e := range entries {
		if e.IsStream() {
			return true
		}
	}
	return false
}
