// Package indexstate turns the in-memory index of a store that rebuilds its state on
// open (the journal, the kafkaLog store) into what persistence.Store reports: Recover's
// destinations and subscriptions, and Stats.
package indexstate

import "github.com/activemq-go/broker/persistence"

// Dest is one destination of an index.
type Dest interface {
	// State is the destination as Recover lists it, and whether it is listed (only
	// destinations an Add was ever applied to are).
	State() (persistence.DestState, bool)
}

// Sub is one durable subscription of an index.
type Sub interface {
	Info() persistence.SubInfo
	// Pending is how many stored messages the subscription still has to acknowledge.
	Pending() int64
}

// Recovered reports dests and subs in Recover's order.
func Recovered[D Dest, S Sub](dests map[string]D, subs map[persistence.SubKey]S) *persistence.Recovered {
	r := &persistence.Recovered{
		Destinations: make([]persistence.DestState, 0, len(dests)),
		Subs:         make([]persistence.SubInfo, 0, len(subs)),
		Pending:      make(map[persistence.SubKey]int64, len(subs)),
	}
	for _, d := range dests {
		if st, ok := d.State(); ok {
			r.Destinations = append(r.Destinations, st)
		}
	}
	for k, s := range subs {
		r.Subs = append(r.Subs, s.Info())
		if n := s.Pending(); n > 0 {
			r.Pending[k] = n
		}
	}
	r.Sort()
	return r
}

// Stats is Store.Stats of dest: its stored messages and their body bytes, (0, 0) when
// the index does not hold it.
func Stats[D Dest](dests map[string]D, dest string) (msgs, bytes int64) {
	d, ok := dests[dest]
	if !ok {
		return 0, 0
	}
	st, _ := d.State()
	return st.Msgs, st.Bytes
}
