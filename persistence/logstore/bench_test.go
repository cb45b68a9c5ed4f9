package logstore

import (
	"fmt"
	"testing"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// benchStore opens a store with the defaults in a temporary directory on the real disk.
func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(b.Context(), Options{Dir: b.TempDir(), CheckpointInterval: -1, Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s
}

func reportRate(b *testing.B, msgs int, s *Store, before int64) {
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(msgs)/sec, "msgs/s")
	}
	if st, err := s.log.Stats(logTopic, 0); err == nil && msgs > 0 {
		b.ReportMetric(float64(st.Syncs-before)/float64(msgs), "fsyncs/msg")
	}
}

// BenchmarkCommitAsync pipelines CommitAsync from one producer, as a connection sending
// persistent messages does: the writer groups what queues up while it syncs. Sync waits
// for an fsync per round, Async for none.
func BenchmarkCommitAsync(b *testing.B) {
	for _, d := range []persistence.Durability{persistence.Sync, persistence.Async} {
		b.Run(map[persistence.Durability]string{persistence.Sync: "Sync", persistence.Async: "Async"}[d], func(b *testing.B) {
			s := benchStore(b)
			st, _ := s.log.Stats(logTopic, 0)
			shelltest.AppendLoop(b, s, testMsg("queue://bench.async", 0, 256), d, true, 0)
			reportRate(b, b.N, s, st.Syncs)
		})
	}
}

// BenchmarkScan pages through a deep queue, 1000 messages a page, as the broker's store
// cursor does: the cost of reading messages back from the log.
func BenchmarkScan(b *testing.B) {
	const n, page = 100_000, 1000
	s, err := Open(b.Context(), Options{Dir: "/bench", FS: vfs.NewMem(), CheckpointInterval: -1, Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const q = "queue://bench.scan"
	for from := uint64(1); from <= n; from += 100 {
		bt := s.Begin()
		for seq := from; seq < from+100; seq++ {
			bt.Add(testMsg(q, seq, 256))
		}
		if err := bt.Commit(b.Context(), persistence.Async); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(n * 256)
	for b.Loop() {
		var after uint64
		for {
			got := 0
			err := s.Scan(b.Context(), q, after, page, func(m *persistence.Message) error {
				after = m.Seq
				got++
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if got < page {
				break
			}
		}
		if after != n {
			b.Fatal(fmt.Sprintf("scan ended at %d", after))
		}
	}
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N*n)/sec, "msgs/s")
	}
}

// BenchmarkBatchRecord: the CPU a batch spends recording an Add and an Ack before the
// writer takes it (shelltest.RecordLoop).
func BenchmarkBatchRecord(b *testing.B) { shelltest.RecordLoop(b, &recAdapter) }
