package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedeliveryDelay(t *testing.T) {
	def := DefaultRedelivery()
	exp := Redelivery{InitialRedeliveryDelay: time.Second, RedeliveryDelay: 3 * time.Second,
		UseExponentialBackOff: true, BackOffMultiplier: 2}
	capped := exp
	capped.MaximumRedeliveryDelay = 5 * time.Second
	capBelowRedelivery := exp
	capBelowRedelivery.MaximumRedeliveryDelay = 2500 * time.Millisecond
	fallback := Redelivery{InitialRedeliveryDelay: 0, RedeliveryDelay: 2 * time.Second, BackOffMultiplier: 5}
	fallbackExp := fallback
	fallbackExp.UseExponentialBackOff = true
	constant := Redelivery{InitialRedeliveryDelay: 10 * time.Second, RedeliveryDelay: time.Second, BackOffMultiplier: 5}
	multiplierOne := exp
	multiplierOne.BackOffMultiplier = 1
	huge := exp
	huge.BackOffMultiplier = 10
	cappedNotExp := constant
	cappedNotExp.MaximumRedeliveryDelay = 5 * time.Second
	none := Redelivery{BackOffMultiplier: 5, UseExponentialBackOff: true}

	tests := []struct {
		name    string
		p       Redelivery
		attempt int
		want    time.Duration
	}{
		{"defaults first", def, 1, time.Second},
		{"defaults later", def, 6, time.Second},
		{"no attempt", def, 0, 0},
		{"negative attempt", def, -3, 0},
		{"initial", constant, 1, 10 * time.Second},
		{"then redeliveryDelay", constant, 2, time.Second},
		{"and again", constant, 3, time.Second},
		{"cap is for back-off only", cappedNotExp, 1, 10 * time.Second},
		{"cap is for back-off only, later", cappedNotExp, 2, time.Second},
		{"fallback to redeliveryDelay", fallback, 1, 2 * time.Second},
		{"fallback later", fallback, 4, 2 * time.Second},
		{"exponential 1", exp, 1, time.Second},
		{"exponential 2", exp, 2, 2 * time.Second},
		{"exponential 3", exp, 3, 4 * time.Second},
		{"exponential 5", exp, 5, 16 * time.Second},
		{"exponential from redeliveryDelay", fallbackExp, 3, 50 * time.Second},
		{"capped below", capped, 3, 4 * time.Second},
		{"capped at", capped, 4, 5 * time.Second},
		{"capped far", capped, 1000, 5 * time.Second},
		{"a cap below redeliveryDelay caps at redeliveryDelay", capBelowRedelivery, 3, 3 * time.Second},
		{"multiplier 1 is no back-off", multiplierOne, 3, 3 * time.Second},
		{"fractional multiplier", Redelivery{InitialRedeliveryDelay: time.Second, UseExponentialBackOff: true, BackOffMultiplier: 1.5}, 3, 2250 * time.Millisecond},
		{"overflow saturates", huge, 100, math.MaxInt64},
		{"overflow to +Inf saturates", huge, 1 << 30, math.MaxInt64},
		{"all zero", none, 7, 0},
		{"all zero, far", none, 100000, 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.p.Delay(tt.attempt), tt.name)
	}
}

// activeMQDelays is ActiveMQ's own computation, transcribed from RedeliveryPolicy.java
// and RedeliveryPlugin.java (5.17), in milliseconds, without collision avoidance: the
// delays of redeliveries 1..n.
//
//	long delay = redeliveryPolicy.getInitialRedeliveryDelay();
//	for (int i = 0; i < redeliveryCount; i++) delay = redeliveryPolicy.getNextRedeliveryDelay(delay);
//
//	getNextRedeliveryDelay(previousDelay):
//	  nextDelay = redeliveryDelay
//	  if (previousDelay > 0 && useExponentialBackOff && backOffMultiplier > 1) {
//	    nextDelay = (long) (previousDelay * backOffMultiplier)
//	    if (maximumRedeliveryDelay != -1 && nextDelay > maximumRedeliveryDelay)
//	      nextDelay = Math.max(maximumRedeliveryDelay, redeliveryDelay)
//	  }
func activeMQDelays(initial, redelivery, maximum int64, exp bool, multiplier float64, n int) []int64 {
	var out []int64
	delay := initial
	for i := 0; i < n; i++ {
		if i > 0 {
			next := redelivery
			if delay > 0 && exp && multiplier > 1 {
				next = int64(float64(delay) * multiplier)
				if maximum != -1 && next > maximum {
					next = max(maximum, redelivery)
				}
			}
			delay = next
		}
		out = append(out, delay)
	}
	return out
}

// TestRedeliveryDelayIsActiveMQs compares Delay with ActiveMQ's computation over a grid
// of policies. One difference is deliberate: an initialRedeliveryDelay of 0 means
// "redeliveryDelay" here, as ActiveMQ documents it, where ActiveMQ's code redelivers
// the first time at once; the grid starts at 1ms.
func TestRedeliveryDelayIsActiveMQs(t *testing.T) {
	const n = 12
	for _, initial := range []int64{1, 100, 1000, 7000} {
		for _, redelivery := range []int64{0, 1, 500, 1000, 30000} {
			for _, maximum := range []int64{-1, 1, 600, 2000, 60000} {
				for _, exp := range []bool{false, true} {
					for _, m := range []float64{0.5, 1, 2, 3, 5} {
						p := Redelivery{
							InitialRedeliveryDelay: time.Duration(initial) * time.Millisecond,
							RedeliveryDelay:        time.Duration(redelivery) * time.Millisecond,
							UseExponentialBackOff:  exp,
							BackOffMultiplier:      m,
						}
						if maximum > 0 {
							p.MaximumRedeliveryDelay = time.Duration(maximum) * time.Millisecond
						}
						want := activeMQDelays(initial, redelivery, maximum, exp, m, n)
						for i, w := range want {
							require.Equal(t, time.Duration(w)*time.Millisecond, p.Delay(i+1), "%+v redelivery %d", p, i+1)
						}
					}
				}
			}
		}
	}
}

func TestRedeliveryCollisionAvoidance(t *testing.T) {
	p := Redelivery{InitialRedeliveryDelay: time.Second, RedeliveryDelay: 2 * time.Second,
		UseCollisionAvoidance: true, CollisionAvoidanceFactor: 0.15}
	assert.Equal(t, 1700*time.Millisecond, p.delay(2, 0), "u=0: -factor")
	assert.Equal(t, 2*time.Second, p.delay(2, 0.5), "u=0.5: unmoved")
	assert.InDelta(t, float64(2300*time.Millisecond), float64(p.delay(2, math.Nextafter(1, 0))), float64(time.Microsecond), "u→1: +factor")
	assert.Equal(t, time.Second, p.delay(1, 0), "the first redelivery keeps its delay, as in ActiveMQ")

	seen := map[time.Duration]bool{}
	for range 1000 {
		d := p.Delay(3)
		require.GreaterOrEqual(t, d, 1700*time.Millisecond)
		require.LessOrEqual(t, d, 2300*time.Millisecond)
		seen[d] = true
	}
	assert.Greater(t, len(seen), 100, "delays are spread")

	exp := p
	exp.UseExponentialBackOff, exp.BackOffMultiplier, exp.MaximumRedeliveryDelay = true, 2, 3*time.Second
	assert.Equal(t, 3*time.Second, exp.delay(3, 0.5), "capped, unmoved")
	assert.Equal(t, 2550*time.Millisecond, exp.delay(3, 0), "the capped delay moves too, as in ActiveMQ")

	off := p
	off.UseCollisionAvoidance = false
	assert.Equal(t, 2*time.Second, off.delay(2, 0), "factor without UseCollisionAvoidance does nothing")

	huge := Redelivery{InitialRedeliveryDelay: time.Second, UseExponentialBackOff: true, BackOffMultiplier: 10,
		UseCollisionAvoidance: true, CollisionAvoidanceFactor: 1}
	assert.Equal(t, time.Duration(math.MaxInt64), huge.delay(100, math.Nextafter(1, 0)), "saturates")
}

func TestRedeliveryExceeded(t *testing.T) {
	p := Redelivery{MaximumRedeliveries: 2}
	assert.False(t, p.Exceeded(1))
	assert.False(t, p.Exceeded(2), "delivered twice: the first delivery and one redelivery")
	assert.True(t, p.Exceeded(3))
	assert.True(t, Redelivery{MaximumRedeliveries: 0}.Exceeded(1), "0: never redelivered")
	assert.False(t, Redelivery{MaximumRedeliveries: -1}.Exceeded(math.MaxInt32), "-1: unlimited")
}

func TestDLQName(t *testing.T) {
	shared := DefaultDeadLetter()
	individual := DefaultDeadLetter()
	individual.Individual = true
	custom := DeadLetter{Individual: true, QueuePrefix: "DLQ.", TopicPrefix: "TDLQ."}
	discard := DeadLetter{Discard: true}
	tests := []struct {
		s     DeadLetter
		topic bool
		name  string
		want  string
	}{
		{shared, false, "A", "ActiveMQ.DLQ"},
		{shared, true, "T", "ActiveMQ.DLQ"},
		{individual, false, "ORDERS.EU", "ActiveMQ.DLQ.Queue.ORDERS.EU"},
		{individual, true, "PRICES", "ActiveMQ.DLQ.Topic.PRICES"},
		{custom, false, "A", "DLQ.A"},
		{custom, true, "A", "TDLQ.A"},
		{discard, false, "A", "ActiveMQ.DLQ"}, // DLQName ignores Discard
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.s.DLQName(tt.topic, tt.name), "%+v %v %s", tt.s, tt.topic, tt.name)
	}
}

// Suffixes, a durable subscriber's own dead-letter destination, and topics as
// dead-letter destinations (ActiveMQ's IndividualDeadLetterStrategy).
func TestDurableDLQName(t *testing.T) {
	s := DefaultDeadLetter()
	s.Individual, s.QueueSuffix, s.TopicSuffix = true, ".q", ".t"
	assert.Equal(t, "ActiveMQ.DLQ.Queue.A.q", s.DurableDLQName("A", false, "app:s1"), "queues have no subscriber")
	assert.Equal(t, "ActiveMQ.DLQ.Topic.T.t", s.DurableDLQName("T", true, "app:s1"))
	s.DestinationPerDurableSubscriber = true
	assert.Equal(t, "ActiveMQ.DLQ.Topic.T.app:s1.t", s.DurableDLQName("T", true, "app:s1"))
	assert.Equal(t, "ActiveMQ.DLQ.Topic.T.t", s.DurableDLQName("T", true, ""))
	assert.Equal(t, SharedDLQ, DefaultDeadLetter().DurableDLQName("T", true, "app:s1"))

	assert.False(t, s.ToTopic(false))
	assert.False(t, s.ToTopic(true))
	s.UseQueueForTopicMessages = false
	assert.True(t, s.ToTopic(true))
	assert.False(t, s.ToTopic(false))
	shared := DefaultDeadLetter()
	shared.UseQueueForQueueMessages = false
	assert.False(t, shared.ToTopic(false), "the shared strategy's ActiveMQ.DLQ is a queue")
}

func TestDefaults(t *testing.T) {
	assert.Equal(t, Redelivery{MaximumRedeliveries: 6, InitialRedeliveryDelay: time.Second, RedeliveryDelay: time.Second,
		BackOffMultiplier: 5, CollisionAvoidanceFactor: 0.15}, DefaultRedelivery())
	assert.Equal(t, DeadLetter{QueuePrefix: "ActiveMQ.DLQ.Queue.", TopicPrefix: "ActiveMQ.DLQ.Topic.", ProcessExpired: true,
		UseQueueForQueueMessages: true, UseQueueForTopicMessages: true}, DefaultDeadLetter())
}
