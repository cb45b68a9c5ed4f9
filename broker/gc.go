package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Limits on what clients make the broker keep: the number of destinations their SENDs
// and SUBSCRIBEs create (Options.MaxDestinations), and the removal of destinations
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
// it; the collector, every Options.DestinationGCPeriod, removes one whose policy says so
// once it has been inactive for the policy's inactive timeout. Temporary destinations go
// with their connection instead. A destination is removed under the broker's lock and
// its own, and marked removed: a SEND or SUBSCRIBE that found it just before finds the
// mark and uses (creates) the destination of that name again. Sequence numbers of a
// destination created again continue above every removed destination's, so none is
// used twice.

// DefaultMaxDestinations is Options.MaxDestinations' default.
const DefaultMaxDestinations = 1_000_000

// DefaultDestinationGCPeriod is Options.DestinationGCPeriod's default.
const DefaultDestinationGCPeriod = 10 * time.Second

// admitDestinations makes the queues and topics of dests (resolved, as a client's SEND
// or SUBSCRIBE names them) that do not exist yet, unless that would take the broker past
// MaxDestinations: then nothing is made and the client gets an ERROR.
func (b *Broker) admitDestinations(by *Conn, dests []destinations.Name) error {
	missing := func() int {
		n := 0
		for _, d := range dests {
			switch {
			case d.IsWildcard(), advisory.IsAdvisory(d): // made on use, never refused
			case d.Kind == destinations.Queue && b.queues[d.Name] == nil:
				n++
			case d.Kind == destinations.Topic && b.topics[d.Name] == nil:
				n++
			}
		}
		return n
	}
	b.mu.RLock()
	n := missing()
	b.mu.RUnlock()
	if n == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n = missing(); n == 0 {
		return nil
	}
	if err := b.roomForDestinationsLocked(n, dests); err != nil {
		return err
	}
	for _, d := range dests {
		switch {
		case d.IsWildcard(), advisory.IsAdvisory(d):
		case d.Kind == destinations.Queue:
			b.queueLocked(d.Name, by)
		case d.Kind == destinations.Topic:
			b.topicLocked(d.Name, by)
		}
	}
	return nil
}

// countedDestinationsLocked is the number of destinations that count against
// MaxDestinations. The caller holds b.mu.
func (b *Broker) countedDestinationsLocked() int {
	return len(b.queues) + len(b.topics) - b.advTopics
}

// dropTopicLocked takes the topic called name out of b.topics. The caller holds b.mu.
func (b *Broker) dropTopicLocked(name string) {
	if _, ok := b.topics[name]; !ok {
		return
	}
	delete(b.topics, name)
	if advisory.IsAdvisory(destinations.Name{Kind: destinations.Topic, Name: name}) {
		b.advTopics--
	}
}

// roomForDestinationsLocked refuses n more destinations past MaxDestinations. The caller
// holds b.mu.
func (b *Broker) roomForDestinationsLocked(n int, dests []destinations.Name) error {
	have := b.countedDestinationsLocked()
	if have+n <= b.maxDests {
		return nil
	}
	if now := time.Now(); now.Sub(b.destsLogged) > time.Minute {
		b.destsLogged = now
		b.log.Warn("destination limit reached: SENDs and SUBSCRIBEs that would create a destination are refused",
			slog.Int("destinations", have), slog.Int("maxDestinations", b.maxDests))
	}
	return errorf(ErrTooManyDestinations, "maximum number of destinations reached (systemUsage maxDestinations %d): %s not created",
		b.maxDests, dests[0])
}

// collectInactive removes the destinations whose policy collects them and that have
// been inactive for its InactiveTimeoutBeforeGC.
func (b *Broker) collectInactive(ctx context.Context, now time.Time) {
	var removedQueues []*destinations.QueueDest
	var removedTopics []*destinations.TopicDest
	b.mu.Lock()
	for name, q := range b.queues {
		if b.temps[tempKey{false, name}] != nil || !q.Policy().GCInactiveDestinations {
			continue
		}
		if q.Collectable(now) {
			delete(b.queues, name)
			b.unregisterVirtual(q)
			removedQueues = append(removedQueues, q)
		}
	}
	for name, t := range b.topics {
		if b.temps[tempKey{true, name}] != nil || !t.Collects() {
			continue
		}
		if t.Collectable(now) {
			b.dropTopicLocked(name)
			removedTopics = append(removedTopics, t)
		}
	}
	if len(removedQueues)+len(removedTopics) > 0 {
		b.removals.Add(1)
	}
	for _, q := range removedQueues {
		b.seqFloor.Store(max(b.seqFloor.Load(), q.NextSeq()))
		b.adviseRemovedLocked(destinations.Name{Kind: destinations.Queue, Name: q.Name()})
	}
	for _, t := range removedTopics {
		b.seqFloor.Store(max(b.seqFloor.Load(), t.Seq()+1))
		b.adviseRemovedLocked(destinations.Name{Kind: destinations.Topic, Name: t.Name()})
	}
	b.mu.Unlock()
	b.gcSweeps.Add(1)
	if len(removedQueues)+len(removedTopics) == 0 {
		return
	}
	batch := b.store.Begin()
	for _, q := range removedQueues {
		b.log.Debug("inactive destination removed", slog.String("dest", q.ClientName()))
		if q.MarkerWritten() {
			batch.Purge(q.MarkerDest())
		}
	}
	for _, t := range removedTopics {
		b.log.Debug("inactive destination removed", slog.String("dest", t.ClientName()))
	}
	b.log.Info("inactive destinations removed (gcInactiveDestinations)",
		slog.Int("queues", len(removedQueues)), slog.Int("topics", len(removedTopics)))
	if batch.Len() == 0 {
		batch.Rollback()
		return
	}
	if err := batch.Commit(ctx, persistence.Async); err != nil && ctx.Err() == nil {
		b.log.Error("removing the dispatch marks of removed queues failed", slog.Any("err", err))
	}
}

// unregisterVirtual forgets a removed virtual topic consumer queue. Called with b.mu held.
func (b *Broker) unregisterVirtual(q *destinations.QueueDest) {
	topic, ok := b.virtual.virtualTopicOf(q.Name())
	if !ok {
		return
	}
	qs := b.vtQueues[topic]
	for i, n := range qs {
		if n.Name == q.Name() {
			qs = append(qs[:i:i], qs[i+1:]...)
			break
		}
	}
	if len(qs) == 0 {
		delete(b.vtQueues, topic)
	} else {
		b.vtQueues[topic] = qs
	}
}
