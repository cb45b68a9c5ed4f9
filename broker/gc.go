package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Limits on what clients make the broker keep: the number of destinations their SENDs
// and SUBSCRIBEs create (Options.MaxDestinations), and the removal of destinations
// nobody uses any more (ActiveMQ's gcInactiveDestinations with inactiveTimeoutBeforeGC,
// per destination policy).
//
// A destination is inactive while it holds no message (in memory, in the store or being
// stored) and has no subscriber, durable subscription or stream, and nothing is sent to
// it; the collector, every Options.DestinationGCPeriod, removes one whose policy says so
// once it has been inactive for the policy's InactiveTimeout. Temporary destinations go
// with their connection instead. A destination is removed under the broker's lock and
// its own, and marked removed: a SEND or SUBSCRIBE that found it just before finds the
// mark and uses (creates) the destination of that name again. Sequence numbers of a
// destination created again continue above every removed destination's, so none is
// used twice.

// DefaultMaxDestinations is Options.MaxDestinations' default.
const DefaultMaxDestinations = 10000

// DefaultDestinationGCPeriod is Options.DestinationGCPeriod's default.
const DefaultDestinationGCPeriod = 10 * time.Second

// gcState is a destination's state for the collector.
type gcState struct {
	removed atomic.Bool
	used    atomic.Bool // looked up or sent to since the collector last looked
	// idleSince is when the collector first found the destination inactive (zero: it
	// was active); only the collector uses it.
	idleSince time.Time
}

// touch records that the destination is in use now.
func (g *gcState) touch() {
	if !g.used.Load() {
		g.used.Store(true)
	}
}

// errDestinationRemoved is what a queue removed by the collector answers: the caller
// looks the name up again.
var errDestinationRemoved = fmt.Errorf("broker: destination removed")

// admitDestinations makes the queues and topics of dests (resolved, as a client's SEND
// or SUBSCRIBE names them) that do not exist yet, unless that would take the broker past
// MaxDestinations: then nothing is made and the client gets an ERROR.
func (b *Broker) admitDestinations(dests []destinations.Name) error {
	missing := func() int {
		n := 0
		for _, d := range dests {
			switch {
			case d.IsWildcard():
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
		case d.IsWildcard():
		case d.Kind == destinations.Queue:
			b.queueLocked(d.Name)
		case d.Kind == destinations.Topic:
			b.topicLocked(d.Name)
		}
	}
	return nil
}

// roomForDestinationsLocked refuses n more destinations past MaxDestinations. The caller
// holds b.mu.
func (b *Broker) roomForDestinationsLocked(n int, dests []destinations.Name) error {
	have := len(b.queues) + len(b.topics)
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

// runDestinationGC removes inactive destinations every period.
func (b *Broker) runDestinationGC(ctx context.Context, every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.collectInactive(ctx, time.Now())
		}
	}
}

// collectInactive removes the destinations whose policy collects them and that have
// been inactive for its InactiveTimeout.
func (b *Broker) collectInactive(ctx context.Context, now time.Time) {
	var removedQueues []*queue
	var removedTopics []*topic
	b.mu.Lock()
	for name, q := range b.queues {
		if b.temps[tempKey{false, name}] != nil || !q.policy.GCInactive {
			continue
		}
		if q.collectable(now) {
			delete(b.queues, name)
			b.unregisterVirtual(q)
			removedQueues = append(removedQueues, q)
		}
	}
	for name, t := range b.topics {
		if b.temps[tempKey{true, name}] != nil || t.gcTimeout <= 0 {
			continue
		}
		if t.collectable(now) {
			delete(b.topics, name)
			removedTopics = append(removedTopics, t)
		}
	}
	for _, q := range removedQueues {
		b.seqFloor.Store(max(b.seqFloor.Load(), q.nextSeq))
	}
	for _, t := range removedTopics {
		b.seqFloor.Store(max(b.seqFloor.Load(), t.seq.Load()+1))
	}
	b.mu.Unlock()
	b.gcSweeps.Add(1)
	if len(removedQueues)+len(removedTopics) == 0 {
		return
	}
	batch := b.store.Begin()
	for _, q := range removedQueues {
		b.log.Debug("inactive destination removed", slog.String("dest", q.stomp))
		if q.markerWritten > 0 {
			batch.Purge(markerPrefix + q.name)
		}
	}
	for _, t := range removedTopics {
		b.log.Debug("inactive destination removed", slog.String("dest", t.stomp))
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

// collectable reports whether the queue has been inactive for its policy's timeout, and
// if so marks it removed. The caller holds b.mu.
func (q *queue) collectable(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	used := q.gc.used.Swap(false)
	if used || len(q.consumers) > 0 || q.pending.Len() > 0 || q.pagedOut > 0 || len(q.inflight) > 0 || q.memBytes > 0 {
		q.gc.idleSince = time.Time{}
		return false
	}
	if q.gc.idleSince.IsZero() {
		q.gc.idleSince = now
	}
	if now.Sub(q.gc.idleSince) < q.policy.InactiveTimeout {
		return false
	}
	q.gc.removed.Store(true)
	if q.timer != nil {
		q.timer.Stop()
	}
	return true
}

// collectable reports whether the topic has been inactive for its policy's timeout, and
// if so marks it removed. The caller holds b.mu.
func (t *topic) collectable(now time.Time) bool {
	if t.isStream || t.st.Load() != nil {
		return false
	}
	// The subscribers are checked and the mark set under mu (t.add takes it), then the
	// durable subscriptions under pubMu, without holding both: should one have come,
	// the mark is taken back. A subscriber that saw the mark meanwhile looks the topic
	// up again, which waits for b.mu and finds this one.
	t.mu.Lock()
	used := t.gc.used.Swap(false)
	if used || len(t.subs) > 0 {
		t.gc.idleSince = time.Time{}
		t.mu.Unlock()
		return false
	}
	if t.gc.idleSince.IsZero() {
		t.gc.idleSince = now
	}
	if now.Sub(t.gc.idleSince) < t.gcTimeout {
		t.mu.Unlock()
		return false
	}
	t.gc.removed.Store(true)
	t.mu.Unlock()
	t.pubMu.Lock()
	durable := len(t.durables) > 0
	t.pubMu.Unlock()
	if durable {
		t.gc.removed.Store(false)
		t.gc.idleSince = time.Time{}
		return false
	}
	return true
}

// unregisterVirtual forgets a removed virtual topic consumer queue. Called with b.mu held.
func (b *Broker) unregisterVirtual(q *queue) {
	topic, ok := b.virtual.virtualTopicOf(q.name)
	if !ok {
		return
	}
	qs := b.vtQueues[topic]
	for i, n := range qs {
		if n.Name == q.name {
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
