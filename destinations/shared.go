package destinations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// SharedQueues is the engine of queues served by several broker nodes over one database
// (persistenceAdapter.jdbc.mode: shared; package pgshared behind an adapter in
// cmd/broker). A shared queue keeps no messages of its own: a SEND is a Send, and the
// queue's waiting list on this node is filled by Claim, up to the room its local
// consumers' prefetch leaves. Each claimed message is leased to this node until it is
// acknowledged (Ack) or given back (Release).
type SharedQueues interface {
	// Send stores msgs, each to its Dest (a qualified queue name), in one transaction.
	Send(ctx context.Context, msgs []*persistence.Message) error
	// Claim leases up to max available messages of dest to this node, in order.
	Claim(ctx context.Context, dest string, max int) ([]SharedMessage, error)
	// Ack deletes the messages of leases; lost lists those this node no longer held
	// (they were given to another node).
	Ack(ctx context.Context, leases []Lease) (lost []Lease, err error)
	// Release gives leases back to every node, counted as a redelivery if redelivered.
	Release(ctx context.Context, leases []Lease, redelivered bool) (lost []Lease, err error)
	// ReleaseGroups gives up this node's ownership of message groups of dest.
	ReleaseGroups(ctx context.Context, dest string, groups []string) error
	// Notifications yields the qualified names of queues that may have new messages,
	// and "" when any queue may.
	Notifications() <-chan string
}

// Lease names one claimed message of a shared queue as this node holds it.
type Lease struct {
	ID    int64
	Epoch int64
}

// SharedMessage is one message taken by SharedQueues.Claim. Message.RedeliveryCount
// counts the times it was given back as possibly delivered; Group is its JMSXGroupID.
type SharedMessage struct {
	Lease   Lease
	Message *persistence.Message
	Group   string
}

// ErrLeaseLost is the error of an acknowledgement of a shared queue's message whose
// lease this node lost (it was given to another node, which may deliver it again).
var ErrLeaseLost = errors.New("destinations: the message's lease was lost: it was given to another broker node")

// sharedOpTimeout bounds one database call of a shared queue.
const sharedOpTimeout = 30 * time.Second

// sharedRetryDelay is the pause before a failed claim is tried again.
const sharedRetryDelay = 500 * time.Millisecond

// Share makes q a shared queue served through eng: the broker calls it on every queue
// it makes in shared mode (temporary queues stay local).
func (q *QueueDest) Share(eng SharedQueues) {
	q.mu.Lock()
	q.shared = eng
	q.mu.Unlock()
}

// ShareAs makes q, a durable subscription's view (NewView), a shared queue whose
// messages are those of container in eng (a durable subscription in shared mode).
func (q *QueueDest) ShareAs(eng SharedQueues, container string) {
	q.mu.Lock()
	q.shared, q.dest = eng, container
	q.mu.Unlock()
}

// Shared is the engine of a shared queue, nil for a local one.
func (q *QueueDest) Shared() SharedQueues {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shared
}

// sharedState is a shared queue's claim bookkeeping, guarded by the queue's lock.
type sharedState struct {
	claiming bool // a Claim is in flight (one at a time per queue: group order needs it)
	// again: a notification came while claiming, so a claim that found less than it
	// asked for must not conclude the queue is drained.
	again bool
	// drained: the last claim got less than it asked for and nothing was notified
	// since; credit coming back does not claim again until a notification.
	drained bool
	// ops are the releases waiting to run in order (a group's messages go back before
	// the group does); opsRunning while one goroutine works through them.
	ops        []func(ctx context.Context)
	opsRunning bool
	// gone are the groups of consumers removed since, released by ConsumerGone.
	gone map[*Consumer][]string
	// acks wait for the database while acking (ackLoop) runs.
	acks   []sharedAck
	acking bool
	// errLogged is the last claim error's log line.
	errLogged time.Time
}

// Notify tells a shared queue that messages may be waiting in the database.
func (q *QueueDest) Notify() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shared == nil {
		return
	}
	q.sh.drained = false
	if q.sh.claiming {
		q.sh.again = true
		return
	}
	q.claimLocked()
}

// claimLocked starts a claim when the local consumers have room beyond what waits.
func (q *QueueDest) claimLocked() {
	if q.shared == nil || q.sh.claiming || q.sh.drained || len(q.consumers) == 0 || q.env.Stopping() {
		return
	}
	var room int
	for _, s := range q.consumers {
		room += max(int(s.Credit.Load()), 0)
	}
	room -= q.pending.Len()
	if room <= 0 {
		return
	}
	q.sh.claiming, q.sh.again = true, false
	eng := q.shared
	q.env.Background.Add(1)
	go func() {
		defer q.env.Background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), sharedOpTimeout)
		got, err := eng.Claim(ctx, q.dest, room)
		cancel()
		q.mu.Lock()
		defer q.mu.Unlock()
		q.sh.claiming = false
		var dead []SharedMessage
		for _, c := range got {
			m := c.Message
			if q.policy.Redelivery.Exceeded(int(m.RedeliveryCount)) {
				dead = append(dead, c)
				continue
			}
			size := int64(m.Size())
			e := &Entry{Msg: m, Ready: true, Size: size, Redelivered: m.RedeliveryCount > 0,
				Deliveries: m.RedeliveryCount, lease: c.Lease, claimed: true}
			q.hold(size)
			q.pending.Push(e)
		}
		q.enqueued += int64(len(got))
		if len(dead) > 0 {
			q.deadLetterClaimedLocked(dead)
		}
		if len(q.consumers) == 0 {
			q.releasePendingLocked() // the consumers went while the claim ran
		}
		if err != nil {
			if now := q.env.Time(); now.Sub(q.sh.errLogged) > time.Minute {
				q.sh.errLogged = now
				q.env.Log.Error("claiming a shared queue's messages failed; trying again", slog.String("dest", q.client),
					slog.Duration("in", sharedRetryDelay), slog.Any("err", err))
			}
			q.env.Background.Add(1)
			time.AfterFunc(sharedRetryDelay, func() {
				defer q.env.Background.Done()
				q.Notify()
			})
		} else if len(got) < room && !q.sh.again {
			q.sh.drained = true
		}
		q.dispatchLocked()
	}()
}

// sharedDoLocked runs op after the shared queue's earlier ones, in a goroutine the
// broker waits for.
func (q *QueueDest) sharedDoLocked(op func(ctx context.Context)) {
	q.sh.ops = append(q.sh.ops, op)
	if q.sh.opsRunning {
		return
	}
	q.sh.opsRunning = true
	q.env.Background.Add(1)
	go func() {
		defer q.env.Background.Done()
		for {
			q.mu.Lock()
			if len(q.sh.ops) == 0 {
				q.sh.opsRunning = false
				q.mu.Unlock()
				return
			}
			op := q.sh.ops[0]
			q.sh.ops[0] = nil
			q.sh.ops = q.sh.ops[1:]
			q.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), sharedOpTimeout)
			op(ctx)
			cancel()
		}
	}()
}

// releaseLocked gives the leases of es back to the database (counted as redelivered
// if redelivered) and takes them out of the queue's memory; es are not pending.
func (q *QueueDest) releaseLocked(es []*Entry, redelivered bool) {
	if len(es) == 0 {
		return
	}
	leases := make([]Lease, len(es))
	for i, e := range es {
		leases[i] = e.lease
		q.release(e.Size)
	}
	eng, client := q.shared, q.client
	q.sharedDoLocked(func(ctx context.Context) {
		if _, err := eng.Release(ctx, leases, redelivered); err != nil {
			// The node's close or the reaper returns them in the end.
			q.env.Log.Error("giving a shared queue's messages back failed", slog.String("dest", client),
				slog.Int("messages", len(leases)), slog.Any("err", err))
		}
	})
}

// requeueShared is Requeue of a shared queue: delivered messages go back to the
// database counted redelivered, the others as they were.
func (q *QueueDest) requeueShared(ds []*Delivery) {
	var delivered, unwritten []*Entry
	for _, d := range ds {
		if d.Written {
			delivered = append(delivered, d.entry)
		} else {
			unwritten = append(unwritten, d.entry)
		}
	}
	q.inFlight -= len(ds)
	q.releaseLocked(delivered, true)
	q.releaseLocked(unwritten, false)
	q.claimLocked()
}

// removeConsumerShared is what RemoveConsumer adds for a shared queue: with no
// consumer left, the claimed messages waiting here go back as they were; the groups
// the consumer owned are kept for ConsumerGone to give up.
func (q *QueueDest) removeConsumerShared(s *Consumer, groups []string) {
	if len(groups) > 0 {
		if q.sh.gone == nil {
			q.sh.gone = map[*Consumer][]string{}
		}
		q.sh.gone[s] = groups
	}
	if len(q.consumers) > 0 {
		return
	}
	q.releasePendingLocked()
	q.sh.drained = false
}

// releasePendingLocked gives the claimed messages waiting here back as they were.
func (q *QueueDest) releasePendingLocked() {
	var back []*Entry
	q.pending.RemoveIf(func(e *Entry) bool {
		if e.claimed {
			back = append(back, e)
			return true
		}
		return false
	})
	q.releaseLocked(back, false)
}

// ConsumerGone is called once a removed consumer's unacknowledged messages were given
// back (Requeue): a shared queue then releases the message groups it owned, after the
// messages of those groups still waiting here, so that another node may take them.
func (q *QueueDest) ConsumerGone(s *Consumer) {
	q.mu.Lock()
	defer q.mu.Unlock()
	groups := q.sh.gone[s]
	delete(q.sh.gone, s)
	if q.shared == nil || len(groups) == 0 {
		return
	}
	set := make(map[string]bool, len(groups))
	for _, g := range groups {
		if q.groups[g] == nil { // not taken by another local consumer meanwhile
			set[g] = true
		}
	}
	if len(set) == 0 {
		return
	}
	var back []*Entry
	q.pending.RemoveIf(func(e *Entry) bool {
		g, _ := e.Msg.Headers.Get("JMSXGroupID")
		if e.claimed && set[g] {
			back = append(back, e)
			return true
		}
		return false
	})
	q.releaseLocked(back, false)
	released := make([]string, 0, len(set))
	for g := range set {
		released = append(released, g)
	}
	q.releaseGroupsLocked(released)
	q.sh.drained = false
	q.claimLocked()
}

// releaseGroupsLocked gives up this node's ownership of groups, after the releases
// queued before.
func (q *QueueDest) releaseGroupsLocked(groups []string) {
	eng, dest, client := q.shared, q.dest, q.client
	q.sharedDoLocked(func(ctx context.Context) {
		if err := eng.ReleaseGroups(ctx, dest, groups); err != nil {
			q.env.Log.Error("giving a shared queue's message groups back failed", slog.String("dest", client), slog.Any("err", err))
		}
	})
}

// SettleShared acknowledges (or rejects) ds, deliveries of the shared queue q, in the
// database, then calls done. An acknowledgement whose lease was lost fails with
// ErrLeaseLost. A rejected message follows the queue's NACK policy: the dead-letter
// queue (a copy is sent there, then the message acknowledged), redelivery (given back
// counted redelivered), or discard (acknowledged).
func (q *QueueDest) SettleShared(ds []*Delivery, ack bool, done func(error)) {
	q.mu.Lock()
	eng := q.shared
	q.mu.Unlock()
	leases := make([]Lease, len(ds))
	var bytes int64
	for i, d := range ds {
		leases[i] = d.entry.lease
		bytes += d.entry.Size
	}
	if !ack && q.policy.NackPolicy == policy.NackRedeliver {
		q.mu.Lock()
		q.requeueShared(ds)
		q.mu.Unlock()
		done(nil)
		return
	}
	var copies []*persistence.Message
	if !ack && q.policy.NackPolicy != policy.NackDiscard { // policy.NackDLQ, or unset
		strategy := q.policy.DeadLetter
		dlq := q.deadLetterDest()
		for _, d := range ds {
			if strategy.Discard || (!d.Msg.Persistent && !strategy.ProcessNonPersistent) || dlq == q.origin || dlq.Kind != Queue {
				continue
			}
			c := deadLetter(d.Msg, q.client, poisonCause)
			c.Dest = dlq.Qualified()
			copies = append(copies, c)
		}
		q.env.Counters.deadLettered(DeadLetterNack, len(copies))
		q.env.Counters.discarded(DiscardDeadLetterStrategy, len(ds)-len(copies))
	} else if !ack {
		q.env.Counters.discarded(DiscardNack, len(ds))
	}
	req := sharedAck{ds: ds, leases: leases, bytes: bytes, done: done}
	if len(copies) == 0 {
		// Acknowledgements waiting at once go to the database together.
		q.mu.Lock()
		q.sh.acks = append(q.sh.acks, req)
		if q.sh.acking {
			q.mu.Unlock()
			return
		}
		q.sh.acking = true
		q.mu.Unlock()
		q.env.Background.Add(1)
		go q.ackLoop(eng)
		return
	}
	q.env.Background.Add(1)
	go func() {
		defer q.env.Background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), sharedOpTimeout)
		defer cancel()
		var lost []Lease
		err := eng.Send(ctx, copies) // before the Ack: at least once
		if err == nil {
			lost, err = eng.Ack(ctx, leases)
		}
		q.acked([]sharedAck{req}, lost, err)
	}()
}

// sharedAck is one acknowledgement of shared queue messages waiting for the database.
type sharedAck struct {
	ds     []*Delivery
	leases []Lease
	bytes  int64
	done   func(error)
}

// ackLoop acknowledges what waits in q.sh.acks, all of it in one Ack each round,
// until nothing does.
func (q *QueueDest) ackLoop(eng SharedQueues) {
	defer q.env.Background.Done()
	for {
		q.mu.Lock()
		reqs := q.sh.acks
		q.sh.acks = nil
		if len(reqs) == 0 {
			q.sh.acking = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		var all []Lease
		for _, r := range reqs {
			all = append(all, r.leases...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedOpTimeout)
		lost, err := eng.Ack(ctx, all)
		cancel()
		q.acked(reqs, lost, err)
	}
}

// acked settles reqs after their Ack: lost leases fail their request with
// ErrLeaseLost; a failed Ack gives the messages back (their leases stand).
func (q *QueueDest) acked(reqs []sharedAck, lost []Lease, err error) {
	lostSet := make(map[Lease]bool, len(lost))
	for _, l := range lost {
		lostSet[l] = true
	}
	for _, r := range reqs {
		rerr, n := err, 0
		if err == nil {
			for _, l := range r.leases {
				if lostSet[l] {
					n++
				}
			}
			if n > 0 {
				q.env.Log.Warn("acknowledgement of messages whose lease was lost: they went to another broker node",
					slog.String("dest", q.client), slog.Int("messages", n))
				rerr = fmt.Errorf("%w (%d of %d messages)", ErrLeaseLost, n, len(r.leases))
			}
		}
		q.mu.Lock()
		if rerr != nil && n == 0 {
			// Not acknowledged: the lease stands, so the message is given back.
			q.requeueShared(r.ds)
		} else {
			q.dequeued += int64(len(r.ds))
			q.inFlight -= len(r.ds)
			q.release(r.bytes)
			q.claimLocked()
		}
		q.mu.Unlock()
		r.done(rerr)
	}
}

// ShutdownShared gives the claimed messages still waiting on this node back as they
// were, for the broker's close (the consumers are gone by then).
func (q *QueueDest) ShutdownShared() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shared == nil {
		return
	}
	q.releasePendingLocked()
}

// splitClaimed parts ds into the deliveries of local messages and those of claimed ones.
func splitClaimed(ds []*Delivery) (local, claimed []*Delivery) {
	for _, d := range ds {
		if d.entry != nil && d.entry.claimed {
			claimed = append(claimed, d)
		} else {
			local = append(local, d)
		}
	}
	return local, claimed
}

// Claimed reports whether every delivery of ds is of a message claimed from a shared
// queue (SettleShared settles them).
func Claimed(ds []*Delivery) bool {
	for _, d := range ds {
		if !d.Claimed() {
			return false
		}
	}
	return len(ds) > 0
}

// expireClaimedLocked drops the claimed messages of es, which expired before
// dispatch: they are acknowledged in the database (not dead-lettered in this mode). It
// returns the others.
func (q *QueueDest) expireClaimedLocked(es []*Entry) []*Entry {
	var leases []Lease
	rest := es[:0:0]
	for _, e := range es {
		if !e.claimed {
			rest = append(rest, e)
			continue
		}
		leases = append(leases, e.lease)
		q.release(e.Size)
	}
	if len(leases) == 0 {
		return rest
	}
	q.expired += int64(len(leases))
	q.dequeued += int64(len(leases))
	q.env.Counters.expired(len(leases))
	eng, client := q.shared, q.client
	q.sharedDoLocked(func(ctx context.Context) {
		if _, err := eng.Ack(ctx, leases); err != nil {
			q.env.Log.Error("dropping a shared queue's expired messages failed", slog.String("dest", client), slog.Any("err", err))
		}
	})
	return rest
}

// Claimed reports whether d is of a message claimed from a shared queue.
func (d *Delivery) Claimed() bool { return d.entry != nil && d.entry.claimed }

// deadLetterClaimedLocked moves claimed messages that were redelivered more often than
// the redelivery policy allows to the dead-letter queue: a copy is sent there (a
// shared queue too), then the message acknowledged, in that order (at least once).
// Messages the dead-letter strategy drops are just acknowledged.
func (q *QueueDest) deadLetterClaimedLocked(ms []SharedMessage) {
	strategy := q.policy.DeadLetter
	dlq := q.deadLetterDest()
	reason := fmt.Sprintf("maximum redeliveries (%d) exceeded", q.policy.Redelivery.MaximumRedeliveries)
	leases := make([]Lease, len(ms))
	var copies []*persistence.Message
	for i, c := range ms {
		leases[i] = c.Lease
		m := c.Message
		if strategy.Discard || (!m.Persistent && !strategy.ProcessNonPersistent) || dlq == q.origin || dlq.Kind != Queue {
			continue
		}
		cp := deadLetter(m, q.client, reason)
		cp.Dest = dlq.Qualified()
		copies = append(copies, cp)
	}
	q.dequeued += int64(len(ms))
	q.env.Counters.deadLettered(DeadLetterMaxRedeliveries, len(copies))
	q.env.Counters.discarded(DiscardDeadLetterStrategy, len(ms)-len(copies))
	eng, client := q.shared, q.client
	q.sharedDoLocked(func(ctx context.Context) {
		err := eng.Send(ctx, copies)
		if err == nil {
			_, err = eng.Ack(ctx, leases)
		}
		if err != nil {
			// Unacknowledged, they come back to some node (this one's close, or the
			// reaper), which tries again.
			q.env.Log.Error("dead-lettering a shared queue's messages failed", slog.String("dest", client), slog.Any("err", err))
		}
	})
}
