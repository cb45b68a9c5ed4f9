package shelltest

import (
	"sync"
	"testing"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
	"github.com/activemq-go/broker/persistence/storetest"
)

// AppendLoop is the loop of a one-producer append benchmark on s: each op adds m (its
// Seq bumped) to a batch of its own and commits it with dur, through Commit or, async,
// through a CommitAsync pipeline with at most window commits outstanding (0: no bound,
// the store's queue pushes back), waiting for all of them at the end. It reports
// allocations and m's body as the bytes of an op.
func AppendLoop(b *testing.B, s persistence.Store, m *persistence.Message, dur persistence.Durability, async bool, window int) {
	var wg sync.WaitGroup
	var slots chan struct{}
	if window > 0 {
		slots = make(chan struct{}, window)
	}
	done := func(err error) {
		if err != nil {
			b.Error(err)
		}
		if slots != nil {
			<-slots
		}
		wg.Done()
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Body)))
	for b.Loop() {
		m.Seq++
		bt := s.Begin()
		bt.Add(m)
		if !async {
			if err := bt.Commit(b.Context(), dur); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if slots != nil {
			slots <- struct{}{}
		}
		wg.Add(1)
		bt.(persistence.AsyncBatch).CommitAsync(dur, done)
	}
	wg.Wait()
}

// RecordLoop is the loop of a benchmark of an adapter's batch recording alone, the CPU
// a batch spends before the writer takes it: each op records into a batch of its own
// (through a, as the adapter's Begin records) the Add of a queue message (storetest's
// BenchMessage) and the Ack of the one before, then rolls it back, so nothing is
// written. It reports allocations.
func RecordLoop[O any](b *testing.B, a *batchrec.Adapter[O]) {
	q := groupcommit.New[O](groupcommit.Config{})
	m := storetest.BenchMessage()
	m.Dest = "queue://bench"
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Body)))
	for b.Loop() {
		m.Seq++
		bt := new(batchrec.Batch[O])
		bt.Init(q, a)
		bt.Add(m)
		bt.Ack(m.Dest, m.Seq-1)
		if bt.Len() != 2 {
			b.Fatalf("recorded %d operations, want 2", bt.Len())
		}
		bt.Rollback()
	}
}
