package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/persistence"
)

// Dispatch markers. Each queue, and each durable subscription's view, keeps its dispatch
// high-water mark in the store (queue.writeMarkerLocked): a destination holding one
// message, sequence 1, whose body is the mark in decimal, replaced as the mark moves.
// After a restart the messages up to the mark come back flagged redelivered.
//
// The marker of a queue is markerPrefix + the queue's name; the marker of a durable
// subscription is subMarkerPrefix + its key's String(), whose escaped client-id keeps
// two subscriptions apart however their client-ids and names read.
//
// Stores written before subMarkerPrefix hold legacyViewMarkerPrefix + client-id + ":" +
// name instead, which is ambiguous ("a:b" + "c" and "a" + "b:c" share one) and may also
// be the marker of a queue whose name starts with "durable:". At recovery such a marker
// gives its mark to every subscription it may belong to that has no marker of its own
// (a mark too high only flags more messages redelivered); their own markers are then
// written, and the legacy one deleted unless a queue of that name may own it.
const (
	markerPrefix           = "meta://dispatched/"
	subMarkerPrefix        = "meta://dispatched-sub/"
	legacyViewMarkerPrefix = markerPrefix + "durable:"
)

// markerDest is the store destination of q's dispatch marker.
func (q *queue) markerDest() string {
	if q.sub != nil {
		return subMarkerPrefix + q.sub.String()
	}
	return markerPrefix + q.name
}

func markerMessage(dest string, hwm uint64) *persistence.Message {
	return &persistence.Message{Dest: dest, Seq: 1, ID: "marker",
		Body: strconv.AppendUint(nil, hwm, 10), Persistent: true, Priority: 4}
}

// recoverMarkers reads the dispatch markers among the recovered destinations into the
// queues and durable subscriptions (recovered before), migrating legacy ones.
func (b *Broker) recoverMarkers(ctx context.Context, dests []persistence.DestState) error {
	type legacyMarker struct {
		dest, key string // key: client-id + ":" + name, as once written
		hwm       uint64
	}
	var legacy []legacyMarker
	own := map[*queue]bool{}
	for _, d := range dests {
		var q *queue
		isLegacy := strings.HasPrefix(d.Name, legacyViewMarkerPrefix)
		switch {
		case strings.HasPrefix(d.Name, subMarkerPrefix):
			key, err := persistence.ParseSubKey(d.Name[len(subMarkerPrefix):])
			if err != nil {
				b.log.Error("ignoring a dispatch marker with a bad name", slog.String("dest", d.Name), slog.Any("err", err))
				continue
			}
			if ds := b.durables[key]; ds != nil {
				q = ds.view
			}
		case strings.HasPrefix(d.Name, markerPrefix):
			q = b.queues[d.Name[len(markerPrefix):]]
		}
		if (q == nil && !isLegacy) || d.Msgs == 0 {
			continue // not a marker, the marker of something gone, or a deleted one
		}
		hwm, err := b.readMarker(ctx, d.Name)
		if err != nil {
			return err
		}
		if q != nil {
			q.recoverHWM(hwm)
			own[q] = true
		}
		if isLegacy {
			legacy = append(legacy, legacyMarker{d.Name, d.Name[len(legacyViewMarkerPrefix):], hwm})
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	batch := b.store.Begin()
	migrated := map[*queue]bool{}
	purged := 0
	for _, l := range legacy {
		for _, ds := range b.durables {
			if q := ds.view; !own[q] && ds.info.Key.ClientID+":"+ds.info.Key.Name == l.key {
				q.recoverHWM(max(q.dispatchHWM, l.hwm))
				migrated[q] = true
			}
		}
		if b.queues[l.dest[len(markerPrefix):]] == nil {
			batch.Purge(l.dest)
			purged++
		}
	}
	for q := range migrated {
		batch.Add(markerMessage(q.markerDest(), q.dispatchHWM))
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
		hwm, _ = strconv.ParseUint(string(m.Body), 10, 64)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("broker: recover %s: %w", dest, err)
	}
	return hwm, nil
}

// recoverHWM sets q's dispatch high-water mark as recovered from its marker.
func (q *queue) recoverHWM(hwm uint64) {
	q.recoveredHWM, q.dispatchHWM, q.markerWritten = hwm, hwm, hwm
	// A message consumed before its store write (concurrent store and dispatch) left no
	// trace in the store but may be in the marker: sequences are never reused.
	q.nextSeq = max(q.nextSeq, hwm+1)
	q.hwmHint.Store(hwm)
}
