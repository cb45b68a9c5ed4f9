package durable

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Dispatch markers (see destinations/marker.go) of queues and durable subscriptions.

// RecoverMarkers reads the dispatch markers among the recovered destinations into the
// queues (queue finds one by name, nil if there is none) and the durable subscriptions'
// views (recovered before, by Recover), and rewrites the legacy markers of durable
// subscriptions in the current format. Markers are recovered here, where both the
// queues and the subscriptions are known.
func (r *Registry) RecoverMarkers(ctx context.Context, dests []persistence.DestState, queue func(name string) *destinations.QueueDest) error {
	type legacyMarker struct {
		dest, key string // key: client-id + ":" + name, as once written
		hwm       uint64
	}
	var legacy []legacyMarker
	own := map[*destinations.QueueDest]bool{}
	for _, d := range dests {
		var q *destinations.QueueDest
		isLegacy := strings.HasPrefix(d.Name, destinations.LegacyViewMarkerPrefix)
		switch {
		case strings.HasPrefix(d.Name, destinations.SubMarkerPrefix):
			key, err := persistence.ParseSubKey(d.Name[len(destinations.SubMarkerPrefix):])
			if err != nil {
				r.env.Log.Error("ignoring a dispatch marker with a bad name", slog.String("dest", d.Name), slog.Any("err", err))
				continue
			}
			if ds := r.Get(key); ds != nil {
				q = ds.View()
			}
		case strings.HasPrefix(d.Name, destinations.MarkerPrefix):
			q = queue(d.Name[len(destinations.MarkerPrefix):])
		}
		if (q == nil && !isLegacy) || d.Msgs == 0 {
			continue // not a marker, the marker of something gone, or a deleted one
		}
		hwm, err := ReadMarker(ctx, r.env.Store, d.Name)
		if err != nil {
			return err
		}
		if q != nil {
			q.RecoverHWM(hwm)
			own[q] = true
		}
		if isLegacy {
			legacy = append(legacy, legacyMarker{d.Name, d.Name[len(destinations.LegacyViewMarkerPrefix):], hwm})
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	batch := r.env.Store.Begin()
	migrated := map[*destinations.QueueDest]bool{}
	purged := 0
	for _, l := range legacy {
		for _, ds := range r.All() {
			if q, k := ds.View(), ds.Key(); !own[q] && k.ClientID+":"+k.Name == l.key {
				q.RecoverHWM(max(q.DispatchHWM(), l.hwm))
				migrated[q] = true
			}
		}
		if queue(l.dest[len(destinations.MarkerPrefix):]) == nil {
			batch.Purge(l.dest)
			purged++
		}
	}
	for q := range migrated {
		batch.Add(destinations.MarkerMessage(q.MarkerDest(), q.DispatchHWM()))
	}
	if batch.Len() == 0 {
		batch.Rollback()
		return nil
	}
	if err := batch.Commit(ctx, persistence.Sync); err != nil {
		return fmt.Errorf("durable: rewrite the dispatch markers of durable subscriptions: %w", err)
	}
	r.env.Log.Info("durable subscriptions' dispatch markers rewritten in the current format",
		slog.Int("subscriptions", len(migrated)), slog.Int("legacyMarkersDeleted", purged))
	return nil
}

// ReadMarker returns the mark stored in st's marker destination dest.
func ReadMarker(ctx context.Context, st persistence.Store, dest string) (uint64, error) {
	var hwm uint64
	err := st.Scan(ctx, dest, 0, 1, func(m *persistence.Message) error {
		hwm = destinations.ParseMarker(m)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("durable: recover %s: %w", dest, err)
	}
	return hwm, nil
}
