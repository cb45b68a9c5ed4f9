package broker

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// dedupHost is the broker as its duplicate detection's host (package broker/dedup).
type dedupHost struct{ b *Broker }

func (h dedupHost) Policy(kind destinations.Kind, name string) policy.Policy {
	return h.b.policyFor(kind, name)
}

func (h dedupHost) DurableTopic(k persistence.SubKey) (string, bool) {
	if d := h.b.durables.Get(k); d != nil {
		return d.Topic(), true
	}
	return "", false
}

func (h dedupHost) Dropped() { h.b.counters.Duplicates.Add(1) }

// dedupStats sets s.Duplicates from the duplicate detection of d.
func (b *Broker) dedupStats(s *destinations.Stats, d destinations.Name) {
	s.Duplicates = b.dedup.Duplicates(d)
}
