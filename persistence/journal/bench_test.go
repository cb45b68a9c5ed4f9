package journal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
	"github.com/activemq-go/broker/persistence/journal"
)

// syncCounter is the real file system, counting fsyncs of files.
type syncCounter struct {
	vfs.FS
	syncs atomic.Int64
}

type countedFile struct {
	vfs.File
	n *atomic.Int64
}

func (f countedFile) Sync() error { f.n.Add(1); return f.File.Sync() }

func (c *syncCounter) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return countedFile{f, &c.syncs}, nil
}

func (c *syncCounter) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return countedFile{f, &c.syncs}, nil
}

// benchJournal opens a journal in a temporary directory on the real disk with the
// default options; checkpoints are left to Close so they do not blur the numbers.
func benchJournal(b *testing.B) (*journal.Store, *syncCounter) {
	b.Helper()
	fs := &syncCounter{FS: vfs.OS}
	s, err := journal.Open(b.Context(), journal.Options{
		Dir: b.TempDir(), FS: fs, Logger: quiet, CheckpointInterval: -1, CleanupInterval: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s, fs
}

func benchMessage(dest string, size int) *persistence.Message {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	return &persistence.Message{Dest: dest, ID: "ID:bench", Headers: persistence.Headers{"content-type", "text/plain"},
		Body: body, Persistent: true, Priority: 4}
}

func report(b *testing.B, msgs int64, fs *syncCounter, syncs0 int64) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(msgs)/s, "msgs/s")
	}
	if msgs > 0 {
		b.ReportMetric(float64(fs.syncs.Load()-syncs0)/float64(msgs), "fsyncs/msg")
	}
}

// BenchmarkJournalAppend: one writer, one 256-byte message per Commit(Sync): one fsync
// per commit, the latency floor of the disk.
func BenchmarkJournalAppend(b *testing.B) {
	s, fs := benchJournal(b)
	syncs0 := fs.syncs.Load()
	shelltest.AppendLoop(b, s, benchMessage("queue://bench", 256), persistence.Sync, false, 0)
	report(b, int64(b.N), fs, syncs0)
}

// BenchmarkJournalAppendParallel: N writers, each committing one 256-byte message per
// Commit(Sync) to its own queue: group commit makes them share fsyncs.
func BenchmarkJournalAppendParallel(b *testing.B) {
	for _, writers := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s, fs := benchJournal(b)
			syncs0 := fs.syncs.Load()
			var next atomic.Int64
			b.ReportAllocs()
			b.SetBytes(256)
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					m := benchMessage(fmt.Sprint("queue://bench.", w), 256)
					for next.Add(1) <= int64(b.N) {
						m.Seq++
						bt := s.Begin()
						bt.Add(m)
						if err := bt.Commit(b.Context(), persistence.Sync); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			report(b, int64(b.N), fs, syncs0)
		})
	}
}

// BenchmarkJournalAppendAsync: one writer, 256-byte messages, Commit(Async) (returns
// once written, not synced) and a CommitAsync(Sync) pipeline (one connection sending
// persistent messages without waiting for each receipt).
func BenchmarkJournalAppendAsync(b *testing.B) {
	b.Run("Commit(Async)", func(b *testing.B) {
		s, fs := benchJournal(b)
		syncs0 := fs.syncs.Load()
		shelltest.AppendLoop(b, s, benchMessage("queue://bench", 256), persistence.Async, false, 0)
		report(b, int64(b.N), fs, syncs0)
	})
	b.Run("CommitAsync(Sync)", func(b *testing.B) {
		s, fs := benchJournal(b)
		syncs0 := fs.syncs.Load()
		// receipts outstanding bounded as a broker bounds them
		shelltest.AppendLoop(b, s, benchMessage("queue://bench", 256), persistence.Sync, true, 1000)
		report(b, int64(b.N), fs, syncs0)
	})
}

// BenchmarkReopen1M stores one million 1 KiB messages (once, about 1.1 GB on disk), then
// measures reopening the store until Recover returns: after a clean Close (checkpoint
// load only) and without any checkpoint (replay of the whole journal, the worst case
// after a crash). It reports the index's heap per message. Run it with
//
//	go test -run XXX -bench Reopen1M -benchtime 3x ./persistence/journal/
func BenchmarkReopen1M(b *testing.B) {
	const n, perBatch = 1_000_000, 1000
	dir := b.TempDir()
	o := journal.Options{Dir: dir, Logger: quiet, CheckpointInterval: -1, CleanupInterval: -1}
	start := time.Now()
	s, err := journal.Open(b.Context(), o)
	if err != nil {
		b.Fatal(err)
	}
	m := benchMessage("queue://reopen", 1024)
	for seq := 1; seq <= n; seq += perBatch {
		bt := s.Begin()
		for i := range perBatch {
			m.Seq = uint64(seq + i)
			bt.Add(m)
		}
		if err := bt.Commit(b.Context(), persistence.Sync); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("stored %d messages in %v", n, time.Since(start).Round(time.Millisecond))

	reopen := func(b *testing.B, removeCheckpoints bool) {
		var heap uint64
		for b.Loop() {
			b.StopTimer()
			if removeCheckpoints {
				names, _ := filepath.Glob(filepath.Join(dir, "index-*.ckpt"))
				for _, name := range names {
					os.Remove(name)
				}
			}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			b.StartTimer()
			s, err := journal.Open(b.Context(), o)
			if err != nil {
				b.Fatal(err)
			}
			rec, err := s.Recover(b.Context())
			if err != nil || len(rec.Destinations) != 1 || rec.Destinations[0].Msgs != n {
				b.Fatalf("Recover: %v %+v", err, rec)
			}
			b.StopTimer()
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			heap = after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)
			if !removeCheckpoints && s.Recovery().ReplayedRecords != 0 {
				b.Fatalf("replayed %d records after a clean Close", s.Recovery().ReplayedRecords)
			}
			runtime.KeepAlive(s)
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/reopen")
		b.ReportMetric(float64(heap)/n, "index-bytes/msg")
	}
	b.Run("checkpoint", func(b *testing.B) { reopen(b, false) })
	b.Run("replay", func(b *testing.B) { reopen(b, true) })
	// Writing a checkpoint of the million messages (what every checkpointInterval costs
	// once anything changed), timed through Close, which writes one.
	b.Run("write-checkpoint", func(b *testing.B) {
		seq := uint64(n)
		for b.Loop() {
			b.StopTimer()
			s, err := journal.Open(b.Context(), o)
			if err != nil {
				b.Fatal(err)
			}
			seq++
			m.Seq = seq
			bt := s.Begin()
			bt.Add(m)
			if err := bt.Commit(b.Context(), persistence.Sync); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/checkpoint")
	})
}

// BenchmarkJournalScan reads back 100,000 stored 256-byte messages per op with Scan: the
// cost of paging messages in from the segment files (page cache warm).
func BenchmarkJournalScan(b *testing.B) {
	const n = 100_000
	s, _ := benchJournal(b)
	m := benchMessage("queue://scan", 256)
	for seq := 1; seq <= n; seq += 1000 {
		bt := s.Begin()
		for i := range 1000 {
			m.Seq = uint64(seq + i)
			bt.Add(m)
		}
		if err := bt.Commit(b.Context(), persistence.Async); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(n * 256)
	for b.Loop() {
		got := 0
		if err := s.Scan(b.Context(), "queue://scan", 0, 0, func(*persistence.Message) error {
			got++
			return nil
		}); err != nil || got != n {
			b.Fatalf("scan: %v, %d messages", err, got)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msgs/s")
}

// TestBenchHelpers keeps the benchmark helpers honest in the default test run.
func TestBenchHelpers(t *testing.T) {
	fs := &syncCounter{FS: vfs.OS}
	s, err := journal.Open(t.Context(), journal.Options{Dir: t.TempDir(), FS: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	bt := s.Begin()
	bt.Add(benchMessage("queue://x", 10))
	bt.Add(&persistence.Message{Dest: "queue://x", Seq: 1})
	if err := bt.Commit(t.Context(), persistence.Sync); err == nil || !strings.Contains(err.Error(), "Seq") {
		t.Fatalf("invalid batch: %v", err)
	}
	bt = s.Begin()
	m := benchMessage("queue://x", 10)
	m.Seq = 1
	bt.Add(m)
	if err := bt.Commit(t.Context(), persistence.Sync); err != nil {
		t.Fatal(err)
	}
	if fs.syncs.Load() == 0 {
		t.Fatal("fsyncs are not counted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
