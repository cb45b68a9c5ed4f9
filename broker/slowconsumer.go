package broker

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/persistence"
)

// Non-durable topic subscribers that are behind, as ActiveMQ handles them.
//
// A topic message goes straight to each subscriber that has prefetch credit. One that
// has none (its client reads slower than the producers send) keeps the message in its
// overflow list. The bytes of a message waiting in one or more overflow lists count
// once against the topic's memoryLimit and the broker's memoryUsage; when either is
// full, the topic's producers are held (or refused, with sendFailIfNoSpace: true) until
// the subscribers catch up. By default nothing a live subscriber should get is dropped.
//
// Two policies change that, as in ActiveMQ:
//   - pendingMessageLimitStrategy (destinations.PendingLimit): a subscriber keeps at most this many
//     waiting messages; past it the oldest is dropped (and counted), so a slow
//     subscriber never holds producers back.
//   - slowConsumerStrategy (SlowConsumer, abortSlowConsumerStrategy): a subscriber
//     behind for longer than MaxSlowDuration, or that fell behind more than
//     MaxSlowCount times, is aborted: its subscription ends with an ERROR, or its whole
//     connection with AbortConnection.

// waiting is a topic message in the overflow of one or more subscribers. Its bytes are
// held against its topic from the first subscriber that keeps it until the last lets
// it go.
type waiting struct {
	t    *topic
	m    *persistence.Message
	refs atomic.Int32
	size int64
}

func (w *waiting) release() {
	if w.refs.Add(-1) == 0 {
		w.t.release(w.size)
	}
}

func (t *topic) hold(n int64) {
	t.memBytes.Add(n)
	t.b.mem.add(n)
}

func (t *topic) release(n int64) {
	t.memBytes.Add(-n)
	t.b.mem.add(-n)
	t.b.space.notify()
}

// full reports whether a message of size bytes finds no room in the topic's memory.
func (t *topic) full(size int64) bool {
	return t.memLimit > 0 && t.memBytes.Load()+size > t.memLimit
}

// offer gives m to s: at once if it has credit, else into its overflow, sharing w
// (made on first need) with the other subscribers that keep m. It returns w.
func (s *Subscription) offer(t *topic, m *persistence.Message, w *waiting) *waiting {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return w
	}
	if len(s.overflow) == 0 && s.credit.Load() > 0 {
		s.credit.Add(-1)
		s.conn.push(&Delivery{Sub: s, Msg: m, Destination: t.stomp, DeliveryCount: 1})
		return w
	}
	if w == nil {
		w = &waiting{t: t, m: m, size: int64(m.Size())}
		w.refs.Store(1) // the publisher's, released once every subscriber was offered m
		t.hold(w.size)
	}
	w.refs.Add(1)
	if len(s.overflow) == 0 {
		s.slowSince = time.Now()
		s.slowCount++
	}
	s.overflow = append(s.overflow, w)
	if limit := t.pending.Max(s.Prefetch); limit >= 0 && len(s.overflow) > limit {
		s.dropOldestLocked(len(s.overflow) - limit)
	}
	return w
}

// dropOldestLocked drops the n oldest waiting messages of s (pendingMessageLimitStrategy).
func (s *Subscription) dropOldestLocked(n int) {
	for _, w := range s.overflow[:n] {
		w.t.dropped.Add(1)
		w.release()
	}
	clear(s.overflow[:n])
	s.overflow = s.overflow[n:]
	s.dropped += int64(n)
	if now := time.Now(); now.Sub(s.droppedLogged) >= time.Minute {
		s.droppedLogged = now
		s.conn.b.log.Warn("slow topic subscriber: dropping its oldest waiting messages (pendingMessageLimitStrategy; logged once a minute per subscription)",
			slog.String("conn", s.conn.ID), slog.String("subscription", s.ID),
			slog.String("dest", s.Dest.String()), slog.Int64("dropped", s.dropped))
	}
}

// refill moves waiting messages to the connection while the subscriber has credit.
func (s *Subscription) refill() {
	s.mu.Lock()
	for len(s.overflow) > 0 && s.credit.Load() > 0 {
		w := s.overflow[0]
		s.overflow[0] = nil
		s.overflow = s.overflow[1:]
		s.credit.Add(-1)
		s.conn.push(&Delivery{Sub: s, Msg: w.m, Destination: w.t.stomp, DeliveryCount: 1})
		w.release()
	}
	if len(s.overflow) == 0 {
		s.overflow = nil
	}
	s.mu.Unlock()
}

// dropOverflow lets go of every waiting message of a subscription that ends; it gets
// no more.
func (s *Subscription) dropOverflow() {
	s.mu.Lock()
	s.ended = true
	for _, w := range s.overflow {
		w.release()
	}
	s.overflow = nil
	s.mu.Unlock()
}

// watchSlow checks t's slow subscribers every CheckPeriod until the broker closes or
// the topic is removed.
func (t *topic) watchSlow() {
	tk := time.NewTicker(t.slow.CheckPeriod)
	defer tk.Stop()
	for {
		select {
		case <-t.b.done:
			return
		case <-t.gone:
			return
		case now := <-tk.C:
			t.checkSlow(now)
		}
	}
}

// checkSlow aborts the subscribers of t that were behind too long or too often.
func (t *topic) checkSlow(now time.Time) {
	p := t.slow
	var slow []*Subscription
	t.mu.RLock()
	for _, s := range t.subs {
		s.mu.Lock()
		behind := len(s.overflow) > 0 && !s.ended
		if behind && ((p.MaxSlowDuration > 0 && now.Sub(s.slowSince) >= p.MaxSlowDuration) ||
			(p.MaxSlowCount >= 0 && s.slowCount > p.MaxSlowCount)) {
			slow = append(slow, s)
		}
		s.mu.Unlock()
	}
	t.mu.RUnlock()
	for _, s := range slow {
		t.abort(s, now)
	}
}

// abort ends a slow subscriber: its subscription, or its connection.
func (t *topic) abort(s *Subscription, now time.Time) {
	s.mu.Lock()
	behind := now.Sub(s.slowSince).Round(time.Millisecond)
	count := s.slowCount
	s.mu.Unlock()
	t.aborted.Add(1)
	t.b.log.Warn("aborting a slow topic subscriber (slowConsumerStrategy)",
		slog.String("conn", s.conn.ID), slog.String("subscription", s.ID), slog.String("dest", t.stomp),
		slog.Duration("behindFor", behind), slog.Int64("timesBehind", count), slog.Bool("abortConnection", t.slow.AbortConnection))
	reason := fmt.Sprintf("slow consumer: subscription %s on %s was behind for %s (%d times); aborted by the slowConsumerStrategy", s.ID, t.stomp, behind, count)
	if t.slow.AbortConnection {
		s.conn.kick(reason + ", with its connection")
		return
	}
	if s.t != nil {
		s.t.remove(s)
	} else {
		t.b.removeWildcard(s)
	}
	s.dropOverflow()
	s.conn.notify(&Error{Message: reason})
}
