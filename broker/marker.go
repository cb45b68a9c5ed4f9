package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Dispatch markers (see destinations/marker.go) are recovered here, where the queues and
// durable subscriptions they belong to are known.

// recoverMarkers reads the dispatch markers among the recovered destinations into the
// queues and durable subscriptions (recovered before), migrating legacy ones.
func (b *Broker) recoverMarkers(ctx context.Context, dests []persistence.DestState) error {
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
				b.log.Error("ignoring a dispatch marker with a bad name", slog.String("dest", d.Name), slog.Any("err", err))
				continue
			}
			if ds := b.durables.Get(key); ds != nil {
				q = ds.View()
			}
		case strings.HasPrefix(d.Name, destinations.MarkerPrefix):
			q = b.dests.FindQueue(d.Name[len(destinations.MarkerPrefix):])
		}
		if (q == nil && !isLegacy) || d.Msgs == 0 {
			continue // not a marker, the marker of something gone, or a deleted one
		}
		hwm, err := b.readMarker(ctx, d.Name)
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
	batch := b.store.Begin()
	migrated := map[*destinations.QueueDest]bool{}
	purged := 0
	for _, l := range legacy {
		for _, ds := range b.durables.All() {
			if q, k := ds.View(), ds.Key(); !own[q] && k.ClientID+":"+k.Name == l.key {
				q.RecoverHWM(max(q.DispatchHWM(), l.hwm))
				migrated[q] = true
			}
		}
		if b.dests.FindQueue(l.dest[len(destinations.MarkerPrefix):]) == nil {
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
		return fmt.Errorf("broker: rewrite the dispatch markers of durable subscriptions: %w", err)
	}
	b.log.Info("durable subscriptions' dispatch markers rewritten in the current format",
		slog.Int("subscriptions", len(migrated)), slog.Int("legacyMarkersDeleted", purged))
	return nil
}

// readMarker returns the mark stored in the marker destination dest.
func (b *Broker) readMarker(ctx context.Context, dest string) (uint64, error) {
	var hwm uint64
	err := b.store.Scan(ctx, dest, 0, 1, func(m *persistence.Message) error {
		hwm = destinations.ParseMarker(m)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("broker: recover %s: %w", dest, err)
	}
	return hwm, nil
}
