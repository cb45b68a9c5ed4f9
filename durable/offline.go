package durable

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Offline marks. How long a subscription has been offline survives a restart: while it
// is offline, the store holds its offline mark, a destination holding one message
// (sequence 1) whose body is the time it went offline, in milliseconds since the epoch
// (the form of a dispatch marker, destinations.MarkerMessage). Detaching its consumer
// writes the mark, attaching one deletes it, and so does removing the subscription. A
// broker stopped cleanly detaches every consumer first, so each subscription that was
// attached then is offline from the stop on.
//
// A recovered subscription without a mark (stored by a version before the marks, or
// attached when the broker crashed) counts as offline from the recovery, which writes its
// mark: later restarts count from there. The time is never taken earlier than it is
// known, so a restart never makes offlineDurableSubscriberTimeout remove a subscription
// sooner than it would have without one.
//
// The mark costs one store write when a consumer detaches (not waiting for the disk) and
// one when it attaches again (waiting for the disk: a mark left behind by a crash would
// make the subscription older than it is), and one Scan of one message per offline
// subscription at recovery.

// OfflinePrefix starts the store name of a durable subscription's offline mark:
// OfflinePrefix + its key's String().
const OfflinePrefix = "meta://offline-sub/"

// offlineDest is the store destination of d's offline mark.
func (d *Sub) offlineDest() string { return OfflinePrefix + d.info.Key.String() }

// markOffline stores since as the time d went offline. The caller holds d.rec.
func (d *Sub) markOffline(since time.Time) {
	env := d.view.Env()
	batch := env.Store.Begin()
	batch.Add(destinations.MarkerMessage(d.offlineDest(), uint64(since.UnixMilli())))
	if err := batch.Commit(context.Background(), persistence.Async); err != nil {
		// The subscription then counts as offline from the next start on.
		env.Log.Warn("storing when a durable subscription went offline failed", slog.String("clientID", d.info.Key.ClientID),
			slog.String("name", d.info.Key.Name), slog.Any("err", err))
		return
	}
	d.offlineStored = true
}

// clearOffline deletes d's offline mark, if the store holds one, before a consumer is
// attached. The caller holds d.rec.
func (d *Sub) clearOffline(ctx context.Context) error {
	if !d.offlineStored {
		return nil
	}
	batch := d.view.Env().Store.Begin()
	batch.Purge(d.offlineDest())
	if err := batch.Commit(ctx, persistence.Sync); err != nil {
		return err
	}
	d.offlineStored = false
	return nil
}

// recoverOffline reads the offline marks among the recovered destinations into the
// subscriptions of r (recovered before), and stores one for each subscription that has
// none, offline from now; it deletes the marks of subscriptions that are gone.
func (r *Registry) recoverOffline(ctx context.Context, dests []persistence.DestState) error {
	now := r.env.Time()
	batch := r.env.Store.Begin()
	for _, ds := range dests {
		if !strings.HasPrefix(ds.Name, OfflinePrefix) || ds.Msgs == 0 {
			continue
		}
		key, err := persistence.ParseSubKey(ds.Name[len(OfflinePrefix):])
		d := r.subs[key]
		if err != nil || d == nil {
			batch.Purge(ds.Name) // the mark of a subscription that is gone
			continue
		}
		err = r.env.Store.Scan(ctx, ds.Name, 0, 1, func(m *persistence.Message) error {
			d.offlineSince = time.UnixMilli(int64(destinations.ParseMarker(m)))
			d.offlineStored = true
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, d := range r.subs {
		if !d.offlineStored {
			d.offlineSince = now
			batch.Add(destinations.MarkerMessage(d.offlineDest(), uint64(now.UnixMilli())))
			d.offlineStored = true
		}
	}
	if batch.Len() == 0 {
		batch.Rollback()
		return nil
	}
	return batch.Commit(ctx, persistence.Async)
}
