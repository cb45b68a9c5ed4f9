package durable

import (
	"log/slog"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// set is a topic's durable subscriptions: the destinations.DurableRouter the registry
// installs on the topic. It is replaced, never changed, under the topic's publish lock.
type set []*Sub

var _ destinations.DurableRouter = set(nil)

func (s set) Len() int { return len(s) }

// addTo adds d to its topic's set.
func addTo(t *destinations.TopicDest, d *Sub) {
	t.UpdateDurables(func(cur destinations.DurableRouter) destinations.DurableRouter {
		s, _ := cur.(set)
		return append(s[:len(s):len(s)], d)
	})
}

// removeFrom takes d out of its topic's set.
func removeFrom(t *destinations.TopicDest, d *Sub) {
	t.UpdateDurables(func(cur destinations.DurableRouter) destinations.DurableRouter {
		s, _ := cur.(set)
		for i, x := range s {
			if x == d {
				return append(s[:i:i], s[i+1:]...)
			}
		}
		return s
	})
}

// Route gives a topic message to the durable subscriptions that want it: to be stored
// once (store) for the persistent ones, kept in memory for active ones otherwise. Called
// with the topic's publish lock held, after the message got its sequence.
func (s set) Route(m *persistence.Message) ([]destinations.Accepted, bool) {
	if len(s) == 0 {
		return nil, false
	}
	var views []*Sub
	for _, d := range s {
		if !d.sel.MatchesMessage(m, 1) {
			continue
		}
		active, _ := d.attached()
		if !m.Persistent && active == nil {
			continue // non-persistent messages are not kept for offline subscribers
		}
		if active == nil && d.overLimit(m) {
			continue
		}
		views = append(views, d)
	}
	if len(views) == 0 {
		return nil, false
	}
	var entries []destinations.Accepted
	if m.Persistent {
		m.Subs = make([]persistence.SubKey, len(views))
		for i, d := range views {
			m.Subs[i] = d.info.Key
		}
	}
	for _, d := range views {
		e := d.view.AcceptView(m, !m.Persistent)
		if m.Persistent {
			entries = append(entries, destinations.Accepted{Q: d.view, E: e, Seq: m.Seq})
		}
	}
	return entries, m.Persistent
}

// RouteTo gives m to the subscription key alone, whatever its selector and limits: a
// message of its backlog imported from another broker (a migration), which chose it
// there. A persistent m is stored for it; a non-persistent one is kept in memory, as
// the source kept it. False if the topic has no such subscription.
func (s set) RouteTo(m *persistence.Message, key persistence.SubKey) ([]destinations.Accepted, bool, bool) {
	for _, d := range s {
		if d.info.Key != key {
			continue
		}
		e := d.view.AcceptView(m, !m.Persistent)
		if !m.Persistent {
			return nil, false, true
		}
		m.Subs = []persistence.SubKey{key}
		return []destinations.Accepted{{Q: d.view, E: e, Seq: m.Seq}}, true, true
	}
	return nil, false, false
}

// overLimit applies the policy's offline pending limits: past them a message is not
// kept for this offline subscription, with a log line (at most once a minute). The
// caller holds the topic's publish lock.
func (d *Sub) overLimit(m *persistence.Message) bool {
	env := d.view.Env()
	p := env.Policy(destinations.Topic, d.topic.Name())
	if p.MaxPendingMessages <= 0 && p.MaxPendingBytes <= 0 {
		return false
	}
	backlog, bytes := d.view.Backlog() // the whole backlog, in memory or not
	over := (p.MaxPendingMessages > 0 && backlog >= p.MaxPendingMessages) ||
		(p.MaxPendingBytes > 0 && bytes+int64(m.Size()) > int64(p.MaxPendingBytes))
	if over {
		dropped := d.dropped.Add(1)
		if now := time.Now(); now.Sub(d.dropLogged) > time.Minute {
			d.dropLogged = now
			env.Log.Warn("offline durable subscription over its pending limit: new messages are not kept for it",
				slog.String("clientID", d.info.Key.ClientID), slog.String("name", d.info.Key.Name),
				slog.Int64("backlog", backlog), slog.Int64("backlogBytes", bytes), slog.Int64("maxPendingMessages", p.MaxPendingMessages),
				slog.Int64("maxPendingBytes", int64(p.MaxPendingBytes)), slog.Int64("dropped", dropped))
		}
	}
	return over
}
