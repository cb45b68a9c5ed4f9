package shelltest

import (
	"sync"
	"testing"

	"github.com/activemq-go/broker/persistence"
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
