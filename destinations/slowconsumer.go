package destinations

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
//   - pendingMessageLimitStrategy (policy.PendingLimit): a subscriber keeps at most this many
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
	t    *TopicDest
	m    *persistence.Message
	refs atomic.Int32
	size int64
}

func (w *waiting) release() {
	if w.refs.Add(-1) == 0 {
		w.t.release(w.size)
	}
}

func (t *TopicDest) hold(n int64) {
	t.memBytes.Add(n)
	t.env.Memory.Add(n)
}

func (t *TopicDest) release(n int64) {
	t.memBytes.Add(-n)
	t.env.Memory.Add(-n)
	t.env.Space.Notify()
}

// Full reports whether a message of size bytes finds no room in the topic's memory.
func (t *TopicDest) Full(size int64) bool {
	return t.memLimit > 0 && t.memBytes.Load()+size > t.memLimit
}

// offer gives m to s: at once if it has credit, else into its overflow, sharing w
// (made on first need) with the other subscribers that keep m. It returns w, and
// whether s has just fallen behind for the SlowConsumer advisory.
func (s *Consumer) offer(t *TopicDest, m *persistence.Message, w *waiting) (*waiting, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return w, false
	}
	if len(s.overflow) == 0 && s.Credit.Load() > 0 {
		s.Credit.Add(-1)
		s.Sink.Push(&Delivery{Sub: s, Msg: m, Destination: t.client, DeliveryCount: 1})
		return w, false
	}
	if w == nil {
		w = &waiting{t: t, m: m, size: int64(m.Size())}
		w.refs.Store(1) // the publisher's, released once every subscriber was offered m
		t.hold(w.size)
	}
	w.refs.Add(1)
	if len(s.overflow) == 0 {
		s.slowSince = t.env.Time()
		s.slowCount++
	}
	s.overflow = append(s.overflow, w)
	if limit := t.pending.Max(s.Prefetch); limit >= 0 && len(s.overflow) > limit {
		s.dropOldestLocked(t.env.Log, len(s.overflow)-limit)
	}
	// As ActiveMQ's TopicSubscription: slow once more than its prefetch waits.
	slow := t.slowAdvisory && !s.advisedSlow && s.Prefetch > 1 && len(s.overflow) > int(s.Prefetch)
	if slow {
		s.advisedSlow = true
	}
	return w, slow
}

// dropOldestLocked drops the n oldest waiting messages of s (pendingMessageLimitStrategy).
func (s *Consumer) dropOldestLocked(log *slog.Logger, n int) {
	for _, w := range s.overflow[:n] {
		w.t.dropped.Add(1)
		w.t.env.Counters.discarded(DiscardSlowConsumer, 1)
		w.release()
	}
	clear(s.overflow[:n])
	s.overflow = s.overflow[n:]
	s.dropped += int64(n)
	if now := time.Now(); now.Sub(s.droppedLogged) >= time.Minute {
		s.droppedLogged = now
		log.Warn("slow topic subscriber: dropping its oldest waiting messages (pendingMessageLimitStrategy; logged once a minute per subscription)",
			slog.String("conn", s.Sink.ConnectionID()), slog.String("subscription", s.ID),
			slog.String("dest", s.Dest.String()), slog.Int64("dropped", s.dropped))
	}
}

// Refill moves waiting messages to the connection while the subscriber has credit.
func (s *Consumer) Refill() {
	s.mu.Lock()
	for len(s.overflow) > 0 && s.Credit.Load() > 0 {
		w := s.overflow[0]
		s.overflow[0] = nil
		s.overflow = s.overflow[1:]
		s.Credit.Add(-1)
		s.Sink.Push(&Delivery{Sub: s, Msg: w.m, Destination: w.t.client, DeliveryCount: 1})
		w.release()
	}
	if len(s.overflow) == 0 {
		s.overflow = nil
		s.advisedSlow = false
	}
	s.mu.Unlock()
}

// Waiting is the number of topic messages waiting for the subscriber beyond its
// prefetch credit.
func (s *Consumer) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.overflow)
}

// DropOverflow lets go of every waiting message of a subscription that ends; it gets
// no more.
func (s *Consumer) DropOverflow() {
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
func (t *TopicDest) watchSlow() {
	tk := time.NewTicker(t.slow.CheckPeriod)
	defer tk.Stop()
	for {
		select {
		case <-t.env.Done:
			return
		case <-t.gone:
			return
		case now := <-tk.C:
			t.CheckSlow(now)
		}
	}
}

// CheckSlow aborts the subscribers of t that were behind too long or too often.
func (t *TopicDest) CheckSlow(now time.Time) {
	p := t.slow
	var slow []*Consumer
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
func (t *TopicDest) abort(s *Consumer, now time.Time) {
	s.mu.Lock()
	behind := now.Sub(s.slowSince).Round(time.Millisecond)
	count := s.slowCount
	s.mu.Unlock()
	t.aborted.Add(1)
	t.env.Log.Warn("aborting a slow topic subscriber (slowConsumerStrategy)",
		slog.String("conn", s.Sink.ConnectionID()), slog.String("subscription", s.ID), slog.String("dest", t.client),
		slog.Duration("behindFor", behind), slog.Int64("timesBehind", count), slog.Bool("abortConnection", t.slow.AbortConnection))
	reason := fmt.Sprintf("slow consumer: subscription %s on %s was behind for %s (%d times); aborted by the slowConsumerStrategy", s.ID, t.client, behind, count)
	if t.slow.AbortConnection {
		s.Sink.AbortConsumer(s, reason+", with its connection", true)
		return
	}
	s.Sink.AbortConsumer(s, reason, false)
}

// MemoryUsed reports the bytes of the messages the topic's subscribers keep waiting,
// and the topic's limit (0: none of its own).
func (t *TopicDest) MemoryUsed() (used, limit int64) { return t.memBytes.Load(), t.memLimit }
