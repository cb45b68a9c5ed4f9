package destinations

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/persistence"
)

// Env is what a destination needs of the broker that holds it, handed in when the
// destination is made instead of a pointer back to the broker: the store, the
// broker-wide memory accounting and the signal that wakes producers held for room,
// the logger, the policies, the goroutines the broker waits for at Close, and the few
// services of the broker a destination's own work calls on (the store commit, where
// dead-letter copies go, the stream log).
type Env struct {
	Store persistence.Store
	Log   *slog.Logger
	// Memory counts the bytes of messages held in memory, broker-wide (systemUsage
	// memoryUsage); Space is notified whenever some are released.
	Memory *Usage
	Space  *SpaceSignal
	// Policy picks the policy of a destination.
	Policy PolicyFunc
	// Background counts the goroutines the broker waits for before it closes the store
	// (page-ins, dispatch-mark writes, dead-lettering).
	Background *sync.WaitGroup
	// Commit runs a batch without blocking when the store can, and calls done with the
	// result.
	Commit func(batch persistence.Batch, d persistence.Durability, done func(error))
	// Stopping reports that the broker is closing: background retries end.
	Stopping func() bool
	// Done is closed when the broker closes (the watchers of slow subscribers end).
	Done <-chan struct{}
	// DeadLetter puts dead-letter copies on dlq as a SEND to it would (a topic's
	// durable subscriptions keep them), stored by batch, and returns what to settle
	// once batch commits.
	DeadLetter func(batch persistence.Batch, dlq Name, copies []*persistence.Message) []Accepted
	// Streams is the stream log of stream topics; nil refuses them.
	Streams *Streams
	// Counters are the broker-wide totals of expired, dead-lettered and discarded
	// messages; nil counts nothing.
	Counters *Counters
	// Advise hears of the events the broker's advisory messages tell of (a message
	// that expired or went to its dead-letter queue, a topic subscriber that fell
	// behind); nil when nobody hears them.
	Advise Advisor
	// Now is the clock of expiry, slow subscribers and durable subscriptions' offline
	// time; nil is time.Now. (Stream records take their times from the stream log's
	// clock.)
	Now func() time.Time
}

// Advisor hears of events of destinations that ActiveMQ announces on its advisory
// topics. Its methods are called with no destination lock held, and only for what
// the destination's policy asks to be announced.
type Advisor interface {
	// Expired: m, a message of dest (a queue, or the topic of a durable subscription
	// or of a plain subscriber), expired before it was consumed.
	Expired(dest Name, m *persistence.Message)
	// DeadLettered: m, a message of dest, was sent to its dead-letter destination
	// (a copy of it, that is: m is the message as it was).
	DeadLettered(dest Name, m *persistence.Message)
	// SlowConsumer: c, a subscriber of t, has more than its prefetch of messages
	// waiting (its policy's advisoryForSlowConsumers); told once until it catches up.
	SlowConsumer(t *TopicDest, c *Consumer)
}

// Time is the time by the environment's clock.
func (e *Env) Time() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Usage counts bytes against a limit, broker-wide.
type Usage struct {
	used  atomic.Int64
	limit int64
}

// NewUsage returns a Usage with the limit.
func NewUsage(limit int64) *Usage { return &Usage{limit: limit} }

// Add counts n more bytes (fewer when negative).
func (u *Usage) Add(n int64) { u.used.Add(n) }

// Fits reports whether n more bytes stay within the limit.
func (u *Usage) Fits(n int64) bool { return u.used.Load()+n <= u.limit }

// Over reports whether three quarters of the limit are in use: page-ins wait.
func (u *Usage) Over() bool { return u.used.Load() > u.limit/4*3 }

// Used reports the bytes in use and the limit.
func (u *Usage) Used() (used, limit int64) { return u.used.Load(), u.limit }

// SpaceSignal wakes the producers waiting for room. It costs one atomic load per release
// of memory while nobody waits.
type SpaceSignal struct {
	armed atomic.Bool
	mu    sync.Mutex
	ch    chan struct{}
}

// Wait returns a channel closed at the next Notify.
func (s *SpaceSignal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
		s.armed.Store(true)
	}
	return s.ch
}

// Notify wakes every waiter: some room was freed.
func (s *SpaceSignal) Notify() {
	if !s.armed.Load() {
		return
	}
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
		s.armed.Store(false)
	}
	s.mu.Unlock()
}

// Accepted is a message a queue (or a durable subscription's view) took whose store
// write is in flight: Settle tells the queue its outcome.
type Accepted struct {
	Q   *QueueDest
	E   *Entry // nil: paged out, in the store only
	Seq uint64
}

// Settle tells the queue the outcome of the store write.
func (a Accepted) Settle(err error) {
	if a.E != nil {
		a.Q.commitDone(a.E, err)
	} else {
		a.Q.pagedDone(a.Seq, err)
	}
}

// SettleAll settles each of as with err.
func SettleAll(as []Accepted, err error) {
	for _, a := range as {
		a.Settle(err)
	}
}
