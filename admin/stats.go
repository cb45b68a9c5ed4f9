package admin

import (
	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// StatsReport is what GET /stats returns: every destination's counters, every durable
// subscription with its backlog and age, memory use, and for stores with files their
// size and which destination holds the oldest data (KahaDB's "why are my logs kept").
// Its JSON is the one the stats listener (broker.statsAddress) served before the admin
// listener took its place.
type StatsReport struct {
	Destinations []broker.DestinationStats `json:"destinations"`
	Durables     []DurableReport           `json:"durableSubscriptions"`
	Memory       struct {
		Used  int64 `json:"used"`
		Limit int64 `json:"limit"`
	} `json:"memory"`
	Store *StoreReport `json:"store,omitempty"`
	// Security counts logins (succeeded, failed, throttled) and denied requests.
	Security *security.Stats `json:"security,omitempty"`
}

// DurableReport is one durable subscription of a StatsReport.
type DurableReport struct {
	broker.DurableStats
	OfflineSeconds float64 `json:"offlineSeconds"`
}

// StoreReport is the store's files of a StatsReport.
type StoreReport struct {
	DiskUsage     int64  `json:"diskUsage"`
	OldestSegment string `json:"oldestSegment,omitempty"`
	PinnedBy      string `json:"oldestSegmentDestination,omitempty"`
}

// StatsReport implements StatsReporter.
func (bb *BrokerBackend) StatsReport() any {
	m := bb.m
	var r StatsReport
	r.Destinations = m.DestinationStats()
	ds := m.DurableSubscriptions()
	r.Durables = make([]DurableReport, 0, len(ds)) // [] in the JSON when there are none
	for _, d := range ds {
		r.Durables = append(r.Durables, DurableReport{d, d.OfflineFor.Seconds()})
	}
	r.Memory.Used, r.Memory.Limit = m.MemoryUsage()
	if sr, ok := bb.o.Store.(persistence.SpaceReporter); ok {
		file, dest, _ := sr.OldestSegment()
		r.Store = &StoreReport{DiskUsage: sr.DiskUsage(), OldestSegment: file, PinnedBy: dest}
	}
	if bb.o.Security != nil {
		st := bb.o.Security.Stats()
		r.Security = &st
	}
	return r
}
