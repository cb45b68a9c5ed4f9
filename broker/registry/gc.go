package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/broker/limits"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Limits on what clients make the broker keep: the number of destinations their SENDs
// and SUBSCRIBEs create (Config.MaxDestinations), and the removal of destinations
// nobody uses any more (ActiveMQ's gcInactiveDestinations with inactiveTimeoutBeforeGC,
// per destination policy).
//
// What counts against MaxDestinations: every queue and topic, temporary ones included,
// whoever made it, except the advisory topics (ActiveMQ.Advisory.>): those are the
// broker's, one or more per destination and connection that clients watch (a monitor
// subscribing to ActiveMQ.Advisory.Consumer.Queue.X for each queue X would otherwise
// spend two of the limit per queue), and are never refused. Dead-letter queues count
// (a dead-letter strategy names them as the configuration says, so they cannot be told
// from a client's queue, and a client may send to one) but are never refused either, nor
// are the destinations recovered from the store. An empty queue costs about 2.5 KB of
// memory and no goroutine, so the default, a million, bounds what a runaway client can
// take to a few GB while serving far more than ActiveMQ 5.17 does with its default heap.
//
// A destination is inactive while it holds no message (in memory, in the store or being
// stored) and has no subscriber, durable subscription or stream, and nothing is sent to
// it; the collector (Collect, every DestinationGCPeriod) removes one whose policy says
// so once it has been inactive for the policy's inactive timeout. Temporary
// destinations go with their connection instead. A destination is removed under the
// registry's lock and its own, and marked removed: a SEND or SUBSCRIBE that found it
// just before finds the mark and uses (creates) the destination of that name again.
// Sequence numbers of a destination created again continue above every removed
// destination's, so none is used twice.

// DefaultMaxDestinations is Config.MaxDestinations' default.
const DefaultMaxDestinations = limits.DefaultMaxDestinations

// DefaultDestinationGCPeriod is how often the broker runs Collect by default.
const DefaultDestinationGCPeriod = 10 * time.Second

// ErrTooManyDestinations: a SEND or SUBSCRIBE would create a destination past
// MaxDestinations.
var ErrTooManyDestinations = errors.New("broker: too many destinations")

// Admit makes the queues and topics of dests (resolved, as a client's SEND or
// SUBSCRIBE names them) that do not exist yet, for by (a connection and its user; the
// zero Creator: the broker), unless that would take the broker past MaxDestinations or
// by's user past its quota (quota.go), or one is a temporary destination's name
// (Reserved): then nothing is made and the client gets an ERROR.
func (r *Destinations) Admit(by Creator, dests []destinations.Name) error {
	absent := func(d destinations.Name) bool {
		switch {
		case d.IsWildcard(), advisory.IsAdvisory(d): // made on use, never refused
			return false
		case d.Kind == destinations.Queue:
			return r.queues[d.Name] == nil
		case d.Kind == destinations.Topic:
			return r.topics[d.Name] == nil
		}
		return false
	}
	missing := func() (int, destinations.Name, error) {
		n, first := 0, destinations.Name{}
		temps := r.ntemps.Load() > 0
		for _, d := range dests {
			if temps {
				if err := r.reservedLocked(d); err != nil {
					return 0, first, err
				}
			}
			if absent(d) {
				if n++; n == 1 {
					first = d
				}
			}
		}
		return n, first, nil
	}
	r.mu.RLock()
	n, _, err := missing()
	r.mu.RUnlock()
	if n == 0 || err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, first, err := missing()
	if n == 0 || err != nil {
		return err
	}
	if err := r.userRoomLocked(by, n, first); err != nil {
		return err
	}
	if err := r.roomLocked(n, dests); err != nil {
		return err
	}
	for _, d := range dests {
		if !absent(d) {
			continue
		}
		if d.Kind == destinations.Queue {
			r.queueLocked(d.Name, by.Conn)
		} else {
			r.topicLocked(d.Name, by.Conn)
		}
		r.createdLocked(by, d)
	}
	return nil
}

// countedLocked is the number of destinations that count against MaxDestinations. The
// caller holds r.mu.
func (r *Destinations) countedLocked() int {
	return len(r.queues) + len(r.topics) + len(r.temps) - r.advTopics
}

// WarnOverLimit logs, at start, that more destinations were recovered than
// MaxDestinations allows.
func (r *Destinations) WarnOverLimit() {
	r.mu.RLock()
	n := r.countedLocked()
	r.mu.RUnlock()
	if n > r.maxDests {
		r.log.Warn("more destinations recovered than maxDestinations allows: clients cannot create more until some are removed",
			slog.Int("destinations", n), slog.Int("maxDestinations", r.maxDests))
	}
}

// roomLocked refuses n more destinations past MaxDestinations. The caller holds r.mu.
func (r *Destinations) roomLocked(n int, dests []destinations.Name) error {
	have := r.countedLocked()
	if have+n <= r.maxDests {
		return nil
	}
	if now := time.Now(); now.Sub(r.destsLogged) > time.Minute {
		r.destsLogged = now
		r.log.Warn("destination limit reached: SENDs and SUBSCRIBEs that would create a destination are refused",
			slog.Int("destinations", have), slog.Int("maxDestinations", r.maxDests))
	}
	return &destinations.Error{Message: fmt.Sprintf("maximum number of destinations reached (systemUsage maxDestinations %d): %s not created",
		r.maxDests, dests[0]), Err: ErrTooManyDestinations}
}

// Collect removes the destinations whose policy collects them and that have been
// inactive for its InactiveTimeoutBeforeGC.
func (r *Destinations) Collect(ctx context.Context, now time.Time) {
	var removedQueues []*destinations.QueueDest
	var removedTopics []*destinations.TopicDest
	r.mu.Lock()
	for name, q := range r.queues {
		if !q.Policy().GCInactiveDestinations {
			continue
		}
		if q.Collectable(now) {
			delete(r.queues, name)
			r.forgetLocked(false, name)
			r.unregisterVirtual(q)
			removedQueues = append(removedQueues, q)
		}
	}
	for name, t := range r.topics {
		if !t.Collects() {
			continue
		}
		if t.Collectable(now) {
			r.dropTopicLocked(name)
			r.forgetLocked(true, name)
			removedTopics = append(removedTopics, t)
		}
	}
	if len(removedQueues)+len(removedTopics) > 0 {
		r.removals.Add(1)
	}
	for _, q := range removedQueues {
		r.raiseSeqFloor(q.NextSeq())
		r.host.Removed(destinations.Name{Kind: destinations.Queue, Name: q.Name()})
	}
	for _, t := range removedTopics {
		r.raiseSeqFloor(t.Seq() + 1)
		r.host.Removed(destinations.Name{Kind: destinations.Topic, Name: t.Name()})
	}
	r.mu.Unlock()
	r.gcSweeps.Add(1)
	if len(removedQueues)+len(removedTopics) == 0 {
		return
	}
	batch := r.env.Store.Begin()
	for _, q := range removedQueues {
		r.log.Debug("inactive destination removed", slog.String("dest", q.ClientName()))
		if q.MarkerWritten() {
			batch.Purge(q.MarkerDest())
		}
	}
	for _, t := range removedTopics {
		r.log.Debug("inactive destination removed", slog.String("dest", t.ClientName()))
	}
	r.log.Info("inactive destinations removed (gcInactiveDestinations)",
		slog.Int("queues", len(removedQueues)), slog.Int("topics", len(removedTopics)))
	if batch.Len() == 0 {
		batch.Rollback()
		return
	}
	if err := batch.Commit(ctx, persistence.Async); err != nil && ctx.Err() == nil {
		r.log.Error("removing the dispatch marks of removed queues failed", slog.Any("err", err))
	}
}

// GCSweeps is the number of passes of the collector so far.
func (r *Destinations) GCSweeps() int64 { return r.gcSweeps.Load() }
