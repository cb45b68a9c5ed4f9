package journal_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/journal"
)

// indexMsgs is how many messages BenchmarkIndexMemory stores per shape. The default
// keeps a run short; the figures settle from about a million:
//
//	go test ./persistence/journal/ -run XXX -bench IndexMemory -benchtime 1x -args -journal.index-msgs=1000000
var indexMsgs = flag.Int("journal.index-msgs", 50_000, "messages BenchmarkIndexMemory stores per shape")

// indexShape is a backlog BenchmarkIndexMemory measures the index of.
type indexShape struct {
	name string
	// fill stores n 128-byte messages and acknowledges some; it returns how many are
	// left stored.
	fill func(tb testing.TB, s *journal.Store, n int) int
}

var (
	shapeSubA = persistence.SubKey{ClientID: "c", Name: "a"}
	shapeSubB = persistence.SubKey{ClientID: "c", Name: "b"}
)

var indexShapes = []indexShape{
	// A queue that piled up: appended in order, nothing acknowledged.
	{"queue", func(tb testing.TB, s *journal.Store, n int) int {
		storeSeqs(tb, s, "queue://deep", n, func(i int) uint64 { return uint64(i + 1) }, nil)
		return n
	}},
	// The same queue after every 10th message was acknowledged out of order (a slow
	// consumer among fast ones, selectors): holes an index of runs pays for.
	{"queue-holes", func(tb testing.TB, s *journal.Store, n int) int {
		storeSeqs(tb, s, "queue://deep", n, func(i int) uint64 { return uint64(i + 1) }, nil)
		acked := 0
		commitEach(tb, s, n, func(b persistence.Batch, i int) {
			if i%10 == 9 {
				b.Ack("queue://deep", uint64(i+1))
				acked++
			}
		})
		return n - acked
	}},
	// A queue of messages whose bodies differ in size (64-447 bytes, e.g. JSON
	// documents): an extent keeps about two bytes of lengths a message.
	{"queue-varied-sizes", func(tb testing.TB, s *journal.Store, n int) int {
		rng := rand.New(rand.NewPCG(3, 4))
		commitEach(tb, s, n, func(b persistence.Batch, i int) {
			m := benchMessage("queue://varied", 64+rng.IntN(384))
			m.Seq = uint64(i + 1)
			b.Add(m)
		})
		return n
	}},
	// Four queues filled at once by producers whose batches hold ten messages: each
	// queue's messages are spread over every segment among the others' records.
	{"queues-interleaved", func(tb testing.TB, s *journal.Store, n int) int {
		dests := []string{"queue://i0", "queue://i1", "queue://i2", "queue://i3"}
		for lo := 0; lo < n; lo += 1000 {
			b := s.Begin()
			for i := lo; i < min(lo+1000, n); i++ {
				if i > lo && i%10 == 0 {
					if err := b.Commit(tb.Context(), persistence.Async); err != nil {
						tb.Fatal(err)
					}
					b = s.Begin()
				}
				m := benchMessage(dests[i/10%4], 128)
				m.Seq = uint64(i/40*10 + i%10 + 1)
				b.Add(m)
			}
			if err := b.Commit(tb.Context(), persistence.Async); err != nil {
				tb.Fatal(err)
			}
		}
		return n
	}},
	// A topic whose two durable subscriptions both owe every message.
	{"topic-2-subs", func(tb testing.TB, s *journal.Store, n int) int {
		b := s.Begin()
		b.AddSub(persistence.SubInfo{Key: shapeSubA, Dest: "topic://t", Created: 1})
		b.AddSub(persistence.SubInfo{Key: shapeSubB, Dest: "topic://t", Created: 2})
		if err := b.Commit(tb.Context(), persistence.Sync); err != nil {
			tb.Fatal(err)
		}
		storeSeqs(tb, s, "topic://t", n, func(i int) uint64 { return uint64(i + 1) }, []persistence.SubKey{shapeSubA, shapeSubB})
		return n
	}},
	// Scheduled jobs: keys in due-time order, appended in arrival order (random delays).
	{"scheduler", func(tb testing.TB, s *journal.Store, n int) int {
		perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
		storeSeqs(tb, s, "scheduler://jobs", n, func(i int) uint64 { return uint64(perm[i]+1) << 21 }, nil)
		return n
	}},
}

// storeSeqs stores n 128-byte messages on dest, the i-th under seq(i), 1000 a batch.
func storeSeqs(tb testing.TB, s *journal.Store, dest string, n int, seq func(int) uint64, subs []persistence.SubKey) {
	tb.Helper()
	commitEach(tb, s, n, func(b persistence.Batch, i int) {
		m := benchMessage(dest, 128)
		m.Seq, m.Subs = seq(i), subs
		b.Add(m)
	})
}

// commitEach calls op for i in [0, n), committing every 1000.
func commitEach(tb testing.TB, s *journal.Store, n int, op func(persistence.Batch, int)) {
	tb.Helper()
	for lo := 0; lo < n; lo += 1000 {
		b := s.Begin()
		for i := lo; i < min(lo+1000, n); i++ {
			op(b, i)
		}
		if err := b.Commit(tb.Context(), persistence.Async); err != nil {
			tb.Fatal(err)
		}
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// indexMemory is what one shape costs, per message still stored.
type indexMemory struct {
	stored    int
	live      float64 // heap of the open store after the writes, bytes/msg
	reopened  float64 // heap of the store reopened from its checkpoint, bytes/msg
	ckpt      float64 // checkpoint file, bytes/msg
	reopen    time.Duration
	fill      time.Duration // storing the shape (commits, not the final Close)
	emptyHeap uint64
}

// measureIndex stores a shape in a fresh directory and measures its index: the heap of
// the open store above that of an open empty store, while it is written and after a
// clean reopen (checkpoint load only).
func measureIndex(tb testing.TB, sh indexShape, n int) indexMemory {
	tb.Helper()
	open := func(dir string) *journal.Store {
		s, err := journal.Open(tb.Context(), journal.Options{Dir: dir, Logger: quiet, CheckpointInterval: -1, CleanupInterval: -1})
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}
	var r indexMemory
	base := liveHeap()
	empty := open(tb.TempDir())
	h := liveHeap()
	r.emptyHeap = h - min(base, h)
	if err := empty.Close(); err != nil {
		tb.Fatal(err)
	}

	dir := tb.TempDir()
	base = liveHeap()
	s := open(dir)
	start := time.Now()
	r.stored = sh.fill(tb, s, n)
	r.fill = time.Since(start)
	live := liveHeap()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	perMsg := func(h uint64) float64 {
		return float64(h-min(h, base+r.emptyHeap)) / float64(max(r.stored, 1))
	}
	r.live = perMsg(live)

	names, _ := filepath.Glob(filepath.Join(dir, "index-*.ckpt"))
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			r.ckpt = max(r.ckpt, float64(fi.Size())/float64(max(r.stored, 1)))
		}
	}

	base = liveHeap()
	start = time.Now()
	s = open(dir)
	rec, err := s.Recover(tb.Context())
	r.reopen = time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	if s.Recovery().ReplayedRecords != 0 {
		tb.Fatalf("%s: replayed %d records after a clean Close", sh.name, s.Recovery().ReplayedRecords)
	}
	r.reopened = perMsg(liveHeap())
	runtime.KeepAlive(rec)
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return r
}

// BenchmarkIndexMemory reports what the journal's in-memory index costs per stored
// message for backlogs of several shapes: index-bytes/msg after a clean reopen (what a
// restarted broker holds), live-bytes/msg while the store that wrote them is open
// (slices grown by appending), ckpt-bytes/msg of the checkpoint file, the reopen
// time and the time storing the backlog took. Issue 16 measures its index redesign with it.
func BenchmarkIndexMemory(b *testing.B) {
	for _, sh := range indexShapes {
		b.Run(sh.name, func(b *testing.B) {
			var r indexMemory
			for b.Loop() {
				r = measureIndex(b, sh, *indexMsgs)
			}
			b.ReportMetric(r.reopened, "index-bytes/msg")
			b.ReportMetric(r.live, "live-bytes/msg")
			b.ReportMetric(r.ckpt, "ckpt-bytes/msg")
			b.ReportMetric(float64(r.reopen.Microseconds())/1000, "ms/reopen")
			b.ReportMetric(r.fill.Seconds(), "s/store")
		})
	}
}

// TestIndexMemory runs BenchmarkIndexMemory's measurement at a small size and holds the
// index to its cost: messages appended in order live in extents (under 2 bytes a
// message when they are of equal sizes, under 3 when their sizes vary at random), each
// subscription that owes a message adds a bit (its pending set), and
// scheduled jobs, whose seqs are not appended in order, are in run files once their
// segment is sealed or the store closed (a bit, a filter byte and a fence a job); with
// room for slice growth and measurement noise.
func TestIndexMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of 50,000 stored messages per shape")
	}
	bounds := map[string]float64{"queue": 2, "queue-holes": 2, "queues-interleaved": 2, "queue-varied-sizes": 3, "topic-2-subs": 2, "scheduler": 3}
	for _, sh := range indexShapes {
		t.Run(sh.name, func(t *testing.T) {
			r := measureIndex(t, sh, 50_000)
			t.Logf("%s: %d stored, index %.1f B/msg after reopen, %.1f B/msg live, checkpoint %.1f B/msg, reopen %v",
				sh.name, r.stored, r.reopened, r.live, r.ckpt, r.reopen)
			if r.reopened <= 0 || r.reopened > bounds[sh.name] {
				t.Errorf("index after reopen: %.1f bytes/msg, want (0, %.0f]", r.reopened, bounds[sh.name])
			}
			if r.ckpt <= 0 {
				t.Errorf("checkpoint: %.1f bytes/msg, want > 0", r.ckpt)
			}
		})
	}
}

// TestSchedulerMillion stores a million scheduled jobs with random delays (their seqs
// in random order): in seconds (an insert shifts one block of the log, never all of
// it), and a store reopened after Close, which moved them to run files, holds at most
// 2 bytes a job.
func TestSchedulerMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("stores a million messages")
	}
	var sh indexShape
	for _, s := range indexShapes {
		if s.name == "scheduler" {
			sh = s
		}
	}
	r := measureIndex(t, sh, 1_000_000)
	t.Logf("%d jobs stored in %v, index %.2f B/job after reopen (%.1f live), reopen %v",
		r.stored, r.fill, r.reopened, r.live, r.reopen)
	// How long storing them took (2-3 s, 25 s under -race; minutes with the sorted
	// slices before seqLog's blocks) is logged, not asserted (issue 27): the bound on the
	// work is TestSeqLogRandomMillion's, each insertion shifting within one block of at
	// most seqBlockMax entries, and the time is BenchmarkIndexMemory's s/store.
	if r.reopened <= 0 || r.reopened > 2 {
		t.Errorf("index after reopen: %.2f bytes/job, want (0, 2]", r.reopened)
	}
}

// BenchmarkSchedulerRuns measures what the scheduler asks of a store holding a
// million jobs in run files (after a reopen): storedKey's Scan(k-1, 1) for a new key,
// and an Ack of a stored job (a Sync commit each, so mostly the fsync).
func BenchmarkSchedulerRuns(b *testing.B) {
	dir := b.TempDir()
	o := journal.Options{Dir: dir, Logger: quiet, CheckpointInterval: -1, CleanupInterval: -1}
	s, err := journal.Open(b.Context(), o)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1_000_000
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	key := func(i int) uint64 { return uint64(perm[i]+1) << 21 }
	storeSeqs(b, s, "scheduler://jobs", n, key, nil)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = journal.Open(b.Context(), o); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	b.Run("scan-next", func(b *testing.B) { // what the scheduler asked before Contains
		for b.Loop() {
			k := rng.Uint64N(n)<<21 + 1<<20 // between two stored keys
			err := s.Scan(b.Context(), "scheduler://jobs", k-1, 1, func(*persistence.Message) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("contains-free", func(b *testing.B) { // the scheduler's check of a new key
		for b.Loop() {
			k := rng.Uint64N(n)<<21 + 1<<20
			if ok, err := s.Contains(b.Context(), "scheduler://jobs", k); err != nil || ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("contains-stored", func(b *testing.B) {
		for b.Loop() {
			if ok, err := s.Contains(b.Context(), "scheduler://jobs", key(int(rng.Uint64N(n)))); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("ack", func(b *testing.B) {
		i := 0
		for b.Loop() {
			batch := s.Begin()
			batch.Ack("scheduler://jobs", key(i%n))
			i++
			if err := batch.Commit(b.Context(), persistence.Sync); err != nil {
				b.Fatal(err)
			}
		}
	})
}
