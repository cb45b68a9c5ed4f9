package destinations

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// countingSink takes deliveries and gives the consumer its credit back at once, as an
// auto-acknowledging connection that keeps up does.
type countingSink struct{ n int }

func (s *countingSink) Push(d *Delivery) {
	s.n++
	d.Sub.Credit.Add(1)
}
func (s *countingSink) PushAll(ds []*Delivery) {
	for _, d := range ds {
		s.Push(d)
	}
}
func (s *countingSink) AbortConsumer(*Consumer, string, bool) {}
func (s *countingSink) ConnectionID() string                  { return "bench" }

func benchEnv(b *testing.B) *Env {
	var wg sync.WaitGroup
	b.Cleanup(wg.Wait)
	return &Env{
		Store: memstore.New(), Log: slog.New(slog.DiscardHandler), Memory: NewUsage(1 << 30),
		Space: &SpaceSignal{}, Policy: func(Kind, string) policy.Policy { return policy.Default(true) },
		Background: &wg, Stopping: func() bool { return false }, Done: make(chan struct{}),
		Commit: func(batch persistence.Batch, d persistence.Durability, done func(error)) {
			done(batch.Commit(context.Background(), d))
		},
	}
}

// BenchmarkTopicPublish is the fan-out hot path: one non-persistent message to 8
// subscribers with credit (reported per delivery).
func BenchmarkTopicPublish(b *testing.B) {
	env := benchEnv(b)
	t := NewTopic(env, "bench", policy.Default(true), 0, false)
	sink := &countingSink{}
	for range 8 {
		c := &Consumer{Sink: sink, ID: "s", Prefetch: 100}
		c.Credit.Store(100)
		t.Add(c)
	}
	m := &persistence.Message{Body: make([]byte, 256), Priority: 4}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t.Publish(m, nil)
	}
	b.ReportMetric(float64(b.N*8)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkTopicPublishBehind is the path of a subscriber that is behind: each message
// waits in its overflow (held against the topic's memory) and is then handed over
// once credit comes back, as Refill does.
func BenchmarkTopicPublishBehind(b *testing.B) {
	env := benchEnv(b)
	p := policy.Default(true)
	p.MemoryLimit = 0
	t := NewTopic(env, "bench", p, 0, false)
	c := &Consumer{Sink: &holdingSink{}, ID: "slow", Prefetch: 1}
	t.Add(c)
	m := &persistence.Message{Body: make([]byte, 256), Priority: 4}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t.Publish(m, nil) // no credit: it waits
		c.Credit.Add(1)
		c.Refill()
	}
	if t.memBytes.Load() != 0 {
		b.Fatalf("%d bytes still held", t.memBytes.Load())
	}
}

// holdingSink takes deliveries and keeps the credit: a subscriber that is behind.
type holdingSink struct{ n int }

func (s *holdingSink) Push(*Delivery) { s.n++ }
func (s *holdingSink) PushAll(ds []*Delivery) {
	for _, d := range ds {
		s.Push(d)
	}
}
func (s *holdingSink) AbortConsumer(*Consumer, string, bool) {}
func (s *holdingSink) ConnectionID() string                  { return "bench" }
