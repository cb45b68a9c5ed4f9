package destinations

import (
	"fmt"
	"time"
)

// maxScan bounds how many waiting messages one dispatch pass looks at past messages no
// consumer can take (selectors, groups, delays), as ActiveMQ's maxPageSize does.
const maxScan = 1000

type take struct {
	e *Entry
	s *Consumer
}

// Dispatch hands waiting messages to consumers with credit.
func (q *QueueDest) Dispatch() {
	q.mu.Lock()
	q.dispatchLocked()
	q.mu.Unlock()
}

func (q *QueueDest) dispatchLocked() {
	if len(q.consumers) > 0 && q.pending.Len() > 0 {
		q.dispatchPass()
	}
	q.maybePageInLocked()
	if q.shared != nil {
		q.claimLocked()
	}
}

// dispatchPass hands waiting messages to consumers in order. A message no consumer may
// take now (selector, group owner without credit, redelivery delay) is passed over and
// later ones go ahead; a message whose store write is in flight stops the pass, so
// consumers never see messages out of order.
func (q *QueueDest) dispatchPass() {
	var now, wake int64
	takes := q.scratch[:0]
	var expired []*Entry
	skipped := 0
	q.pending.Each(func(e *Entry) bool {
		if e.Failed {
			expired = append(expired, e) // dropped below, without dead-lettering
			return true
		}
		if !e.Ready {
			return false
		}
		if e.Msg.Expires != 0 || e.NotBefore != 0 {
			if now == 0 {
				now = q.env.Time().UnixNano()
			}
			if e.Msg.Expires != 0 && e.Msg.Expires*int64(time.Millisecond) <= now {
				expired = append(expired, e)
				return true
			}
			if e.NotBefore > now {
				if wake == 0 || e.NotBefore < wake {
					wake = e.NotBefore
				}
				skipped++
				return skipped < maxScan
			}
		}
		s := q.pickFor(e)
		if s == nil {
			skipped++
			return skipped < maxScan && q.anyCredit()
		}
		s.Credit.Add(-1)
		if s.Quota != nil {
			s.Quota.Take(e.Size)
		}
		takes = append(takes, take{e, s})
		return true
	})
	for _, t := range takes {
		e, s := t.e, t.s
		q.pending.Remove(e)
		e.Deliveries++
		e.NotBefore = 0
		d := &Delivery{Sub: s, Msg: e.Msg, Destination: q.client, Redelivered: e.Redelivered, DeliveryCount: e.Deliveries, entry: e, Queue: q}
		if gid, ok := e.Msg.Headers.Get("JMSXGroupID"); ok {
			if q.groups[gid] != s {
				q.groups[gid] = s
				d.GroupFirst = true
			}
			if seq, ok := e.Msg.Headers.Get("JMSXGroupSeq"); ok && len(seq) > 0 && seq[0] == '-' {
				delete(q.groups, gid) // a negative sequence closes the group
				if q.shared != nil {
					q.releaseGroupsLocked([]string{gid})
				}
			}
		}
		s.Sink.Push(d)
	}
	q.dispatched += int64(len(takes))
	q.inFlight += len(takes)
	clear(takes)
	q.scratch = takes[:0]
	var dead []*Entry
	for _, e := range expired {
		q.pending.Remove(e)
		if e.Failed {
			q.release(e.Size)
			continue
		}
		dead = append(dead, e)
	}
	if len(dead) > 0 {
		q.expire(dead)
	}
	if wake != 0 {
		q.wakeAt(wake)
	}
}

// pickFor chooses the consumer for e: the owner of its message group if it has one;
// otherwise, among the consumers allowed (only the exclusive one if there is one), the
// highest-priority one with credit whose selector matches, round-robin among equals.
func (q *QueueDest) pickFor(e *Entry) *Consumer {
	m := e.Msg
	if gid, ok := m.Headers.Get("JMSXGroupID"); ok {
		if s := q.groups[gid]; s != nil {
			if s.ready() && s.Selector.MatchesMessage(m, e.Deliveries+1) {
				return s
			}
			return nil
		}
	}
	if x := q.exclusiveLocked(); x != nil {
		if x.ready() && x.Selector.MatchesMessage(m, e.Deliveries+1) {
			return x
		}
		return nil
	}
	n := len(q.consumers)
	var best *Consumer
	bestIdx := 0
	for i := 0; i < n; i++ {
		idx := (q.rr + i) % n
		s := q.consumers[idx]
		if !s.ready() || (best != nil && s.Priority <= best.Priority) {
			continue
		}
		if s.Selector != nil && !s.Selector.MatchesMessage(m, e.Deliveries+1) {
			continue
		}
		best, bestIdx = s, idx
	}
	if best != nil {
		q.rr = (bestIdx + 1) % n
	}
	return best
}

// exclusiveLocked is the consumer that takes everything, if any consumer asked to be
// exclusive (or the policy makes all of them exclusive): the highest-priority one, the
// earliest among equals.
func (q *QueueDest) exclusiveLocked() *Consumer {
	var x *Consumer
	for _, s := range q.consumers {
		if (s.Exclusive || q.policy.AllConsumersExclusiveByDefault) && (x == nil || s.Priority > x.Priority) {
			x = s
		}
	}
	return x
}

func (q *QueueDest) anyCredit() bool {
	for _, s := range q.consumers {
		if s.ready() {
			return true
		}
	}
	return false
}

// wakeAt makes sure dispatch runs again at t (ns since the epoch).
func (q *QueueDest) wakeAt(t int64) {
	if q.timer != nil && q.timerAt != 0 && q.timerAt <= t {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.timerAt = t
	q.timer = time.AfterFunc(time.Until(time.Unix(0, t)), func() {
		q.mu.Lock()
		q.timerAt = 0
		q.dispatchLocked()
		q.mu.Unlock()
	})
}

// Requeue gives dispatched entries back; delivered ones come back flagged redelivered.
// They go before every later message, so other consumers get them first. Every
// redelivery counts: a message delivered more often than the redelivery policy allows
// goes to the dead-letter queue instead. With delay, a redelivered message waits the
// policy's redelivery delay first (a NACK under the redeliver policy).
func (q *QueueDest) Requeue(ds []*Delivery, delay bool) {
	q.mu.Lock()
	if q.shared != nil {
		var claimed []*Delivery
		ds, claimed = splitClaimed(ds)
		q.requeueShared(claimed)
	}
	q.inFlight -= len(ds)
	var dead []*Entry
	now := q.env.Time()
	for _, d := range ds {
		e := d.entry
		if !d.Written {
			e.Deliveries--
			q.pending.Requeue(e)
			continue
		}
		e.Redelivered = true
		if q.sub == nil { // a durable subscription's message is shared with other subscriptions
			e.Msg.RedeliveryCount = e.Deliveries
		}
		if q.policy.Redelivery.Exceeded(int(e.Deliveries)) {
			dead = append(dead, e)
			continue
		}
		if delay {
			if d := q.policy.Redelivery.Delay(int(e.Deliveries)); d > 0 {
				e.NotBefore = now.Add(d).UnixNano()
			}
		}
		q.pending.Requeue(e)
	}
	if len(dead) > 0 {
		q.retire(dead, fmt.Sprintf("maximum redeliveries (%d) exceeded", q.policy.Redelivery.MaximumRedeliveries), true, DeadLetterMaxRedeliveries)
	}
	q.dispatchLocked()
	q.mu.Unlock()
}
