package logstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

const logPartDir = testDir + "/" + logDir + "/" + logTopic + "-0"

// segmentLogs lists the log's segment files.
func segmentLogs(t *testing.T, fs vfs.FS) []string {
	return shelltest.Files(t, fs, logPartDir, func(n string) bool { return strings.HasSuffix(n, ".log") })
}

func commitRange(t testing.TB, s persistence.Store, dest string, from, to uint64, bodyLen int) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		commit(t, s, func(b persistence.Batch) { b.Add(testMsg(dest, seq, bodyLen)) })
	}
}

// TestAckedSegmentsAreDeleted: acknowledging everything lets the next checkpoint delete
// every sealed segment, and the space reports follow; one stuck message pins its
// segment and every later one, and OldestSegment names it.
func TestAckedSegmentsAreDeleted(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	const q, dlq = "queue://orders", "queue://DLQ.orders"
	commit(t, s, func(b persistence.Batch) { b.Add(testMsg(dlq, 1, 100)) })
	commitRange(t, s, q, 1, 200, 500)
	require.Greater(t, len(segmentLogs(t, fs)), 20, "segments roll at SegmentBytes")
	before := s.DiskUsage()
	require.Greater(t, before, int64(200*500))

	file, dest, ok := s.OldestSegment()
	require.True(t, ok)
	require.Equal(t, dlq, dest, "the DLQ message pins the low-water mark")
	require.Equal(t, filepath.Join(logPartDir, fmt.Sprintf("%020d.log", 0)), file)

	b := s.Begin()
	for seq := uint64(1); seq <= 200; seq++ {
		b.Ack(q, seq)
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.NoError(t, s.checkpoint())
	require.Greater(t, len(segmentLogs(t, fs)), 20, "the DLQ message still pins every segment")

	commit(t, s, func(b persistence.Batch) { b.Ack(dlq, 1) })
	_, _, ok = s.OldestSegment()
	require.False(t, ok, "nothing is stored")
	require.Greater(t, len(segmentLogs(t, fs)), 20, "acks alone delete nothing")
	require.NoError(t, s.checkpoint())
	require.Len(t, segmentLogs(t, fs), 1, "after the checkpoint only the active segment is left")
	require.Less(t, s.DiskUsage(), before/10)

	// The store keeps working across the deletion, and nothing acknowledged comes back.
	commitRange(t, s, q, 201, 210, 500)
	require.NoError(t, s.checkpoint()) // deletes the segment that holds only the acks
	file, dest, ok = s.OldestSegment()
	require.True(t, ok)
	require.Equal(t, q, dest)
	require.Equal(t, filepath.Join(logPartDir, segmentLogs(t, fs)[0]), file)
	require.NoError(t, s.Close())
	for _, f := range []*vfs.Mem{fs, fs.CrashClone()} {
		s = mustOpen(t, memOptions(f))
		require.Equal(t, shelltest.SeqRange(201, 210), scanSeqs(t, s, q))
		require.Empty(t, scanSeqs(t, s, dlq))
		rec, err := s.Recover(t.Context())
		require.NoError(t, err)
		require.Equal(t, []persistence.DestState{{Name: dlq, LastSeq: 1}, {Name: q, LastSeq: 210, Msgs: 10, Bytes: 5000}},
			rec.Destinations)
		require.LessOrEqual(t, s.Recovery().ReplayedRecords, 10, "replay starts at the low-water mark")
		require.NoError(t, s.Close())
	}
}

// TestBackgroundCheckpointDeletesSegments: with a checkpoint interval the store gives
// the space back by itself.
func TestBackgroundCheckpointDeletesSegments(t *testing.T) {
	fs := vfs.NewMem()
	o := memOptions(fs)
	o.CheckpointInterval = 5 * time.Millisecond
	s := mustOpen(t, o)
	defer s.Close()
	commitRange(t, s, "queue://q", 1, 100, 500)
	b := s.Begin()
	for seq := uint64(1); seq <= 100; seq++ {
		b.Ack("queue://q", seq)
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.Eventually(t, func() bool { return len(segmentLogs(t, fs)) == 1 }, 10*time.Second, time.Millisecond)
}

// TestDeepQueuePaging pages through a deep queue as the broker's store cursor does,
// afterSeq the last seq seen, while acking what it read and adding more: every message
// comes once, in order, and the pages cost a handful of log reads, not one per message.
func TestDeepQueuePaging(t *testing.T) {
	fs := vfs.NewMem()
	o := memOptions(fs)
	o.SegmentBytes = 1 << 20 // a read does not cross segments
	s := mustOpen(t, o)
	defer s.Close()
	const q, other, n, page = "queue://deep", "queue://other", 20_000, 500
	// Batches of 100, with another queue's messages in between, as concurrent producers
	// leave them.
	for from := uint64(1); from <= n; from += 100 {
		commit(t, s, func(b persistence.Batch) {
			for seq := from; seq < from+100; seq++ {
				b.Add(testMsg(q, seq, 64))
			}
		})
		commit(t, s, func(b persistence.Batch) { b.Add(testMsg(other, from, 64)) })
	}
	var reads atomic.Int64
	fs.Inject(func(op vfs.Op, _ string) error {
		if op == vfs.OpRead {
			reads.Add(1)
		}
		return nil
	})
	var after uint64
	seen := 0
	for {
		var got []uint64
		err := s.Scan(t.Context(), q, after, page, func(m *persistence.Message) error {
			require.Equal(t, q, m.Dest)
			require.Len(t, m.Body, 64)
			require.Equal(t, testMsg(q, m.Seq, 64).Body, m.Body)
			got = append(got, m.Seq)
			return nil
		})
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		require.LessOrEqual(t, len(got), page)
		require.Equal(t, shelltest.SeqRange(after+1, after+uint64(len(got))), got, "page after %d", after)
		seen += len(got)
		after = got[len(got)-1]
		if after <= n/2 { // the consumer acks the first half while paging
			commit(t, s, func(b persistence.Batch) {
				for _, seq := range got {
					b.Ack(q, seq)
				}
			})
		}
	}
	fs.Inject(nil)
	require.Equal(t, n, seen)
	t.Logf("%d messages in pages of %d: %d file reads", n, page, reads.Load())
	require.Less(t, reads.Load(), int64(n/50), "file reads for %d messages", n)
	msgs, _ := s.Stats(q)
	require.Equal(t, int64(n/2), msgs)
	require.Equal(t, shelltest.SeqRange(n/2+1, n/2+3), func() []uint64 {
		var first []uint64
		require.NoError(t, s.Scan(t.Context(), q, 0, 3, func(m *persistence.Message) error {
			first = append(first, m.Seq)
			return nil
		}))
		return first
	}())
}

// TestGroupCommit: concurrent Sync commits share appends and fsyncs; Async commits are
// appended in rounds too but not synced under FlushBatch; a Sync commit after them
// syncs them as well.
func TestGroupCommit(t *testing.T) {
	fs := vfs.NewMem()
	var syncs atomic.Int64
	fs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			syncs.Add(1)
			time.Sleep(200 * time.Microsecond) // a disk's fsync, so committers pile up
		}
		return nil
	})
	o := memOptions(fs)
	o.SegmentBytes = 1 << 20 // no segment roll, which syncs too
	s := mustOpen(t, o)
	defer s.Close()
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			q := fmt.Sprintf("queue://g%d", w)
			for seq := uint64(1); seq <= each; seq++ {
				b := s.Begin()
				b.Add(testMsg(q, seq, 50))
				if err := b.Commit(t.Context(), persistence.Sync); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st, err := s.log.Stats(logTopic, 0)
	require.NoError(t, err)
	t.Logf("%d Sync commits: %d appends, %d fsyncs", writers*each, st.Appends, syncs.Load())
	require.Less(t, st.Appends, int64(writers*each/2), "appends are shared")
	require.Less(t, syncs.Load(), int64(writers*each/2), "fsyncs are shared")

	before := syncs.Load()
	var done sync.WaitGroup
	for seq := uint64(1); seq <= 100; seq++ {
		b := s.Begin()
		b.Add(testMsg("queue://async", seq, 50))
		done.Add(1)
		b.(persistence.AsyncBatch).CommitAsync(persistence.Async, func(err error) {
			if err != nil {
				t.Error(err)
			}
			done.Done()
		})
	}
	done.Wait()
	require.Equal(t, before, syncs.Load(), "Async commits are not synced")
	crashed := fs.CrashClone()
	commit(t, s, func(persistence.Batch) {}) // an empty Sync batch is a barrier
	require.Greater(t, syncs.Load(), before)
	synced := fs.CrashClone()
	for name, f := range map[string]*vfs.Mem{"before the barrier": crashed, "after the barrier": synced} {
		o.FS = f
		s2 := mustOpen(t, o)
		n, _ := s2.Stats("queue://async")
		if name == "after the barrier" {
			require.Equal(t, int64(100), n, name)
		} else {
			require.Less(t, n, int64(100), name)
		}
		require.NoError(t, s2.Close())
	}
}

// TestWriteFailureFailsStore: after an append error every commit fails with ErrFailed,
// reads go on, Close reports it, and a reopen recovers what was acknowledged.
func TestWriteFailureFailsStore(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitRange(t, s, "queue://q", 1, 3, 10)
	fs.Inject(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite {
			return vfs.ErrInjected
		}
		return nil
	})
	b := s.Begin()
	b.Add(testMsg("queue://q", 4, 10))
	err := b.Commit(t.Context(), persistence.Sync)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, vfs.ErrInjected)
	fs.Inject(nil)
	b = s.Begin()
	b.Add(testMsg("queue://q", 5, 10))
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), ErrFailed, "the failure sticks")
	got := make(chan error, 1)
	b = s.Begin()
	b.Add(testMsg("queue://q", 5, 10))
	b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { got <- err })
	require.ErrorIs(t, <-got, ErrFailed)
	require.Equal(t, shelltest.SeqRange(1, 3), scanSeqs(t, s, "queue://q"))
	require.ErrorIs(t, s.Close(), ErrFailed)
	s = mustOpen(t, memOptions(fs))
	require.Equal(t, shelltest.SeqRange(1, 3), scanSeqs(t, s, "queue://q"))
	require.NoError(t, s.Close())
}

func TestOpenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Open(ctx, memOptions(vfs.NewMem()))
	require.ErrorIs(t, err, context.Canceled)
	_, err = Open(t.Context(), Options{})
	require.ErrorIs(t, err, ErrOption)
	_, err = Open(t.Context(), Options{Dir: "/x", FS: vfs.NewMem(), SegmentBytes: 1})
	require.ErrorIs(t, err, ErrOption)
}

// TestRegistered opens the adapter by its configuration name, on the real file system
// below the broker's data directory.
func TestRegistered(t *testing.T) {
	dir := t.TempDir()
	require.Contains(t, persistence.Adapters(), "kafkalog")
	st, err := persistence.Open(t.Context(), "kafkalog", persistence.Options{DataDirectory: dir,
		Raw: map[string]any{"segmentbytes": "64kb", "flush": "batch"}})
	require.NoError(t, err)
	commit(t, st, func(b persistence.Batch) { b.Add(testMsg("queue://q", 1, 10)) })
	require.NoError(t, st.Close())
	st, err = persistence.Open(t.Context(), "kafkalog", persistence.Options{DataDirectory: dir})
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, scanSeqs(t, st, "queue://q"))
	require.NoError(t, st.Close())
	_, err = persistence.Open(t.Context(), "kafkalog", persistence.Options{DataDirectory: dir,
		Raw: map[string]any{"nope": 1}})
	require.ErrorIs(t, err, ErrOption)
}

// TestCloseDuringScans: Close waits for scans reading the log; a scan either completes
// or fails with ErrClosed.
func TestCloseDuringScans(t *testing.T) {
	s := mustOpen(t, memOptions(vfs.NewMem()))
	commitRange(t, s, "queue://q", 1, 300, 100)
	var wg sync.WaitGroup
	var scans atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				err := s.Scan(t.Context(), "queue://q", 0, 0, func(*persistence.Message) error { return nil })
				if err != nil {
					if !errors.Is(err, persistence.ErrClosed) {
						t.Errorf("scan during Close: %v", err)
					}
					return
				}
				scans.Add(1)
			}
		})
	}
	require.Eventually(t, func() bool { return scans.Load() >= 8 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	wg.Wait()
}

// TestFlushPolicies: what a power cut keeps of Sync commits under FlushInterval (all of
// them, once an interval has passed) and FlushOS (what a checkpoint synced).
func TestFlushPolicies(t *testing.T) {
	stored := func(t *testing.T, f *vfs.Mem, o Options) int64 {
		t.Helper()
		o.FS = f
		s := mustOpen(t, o)
		defer s.Close()
		n, _ := s.Stats("queue://q")
		return n
	}
	t.Run("interval", func(t *testing.T) {
		fs := vfs.NewMem()
		o := memOptions(fs)
		o.SegmentBytes, o.Flush, o.FlushInterval = 1<<20, FlushInterval, 5*time.Millisecond
		s := mustOpen(t, o)
		defer s.Close()
		commitRange(t, s, "queue://q", 1, 10, 100)
		require.Eventually(t, func() bool { return stored(t, fs.CrashClone(), o) == 10 }, 10*time.Second, time.Millisecond)
	})
	t.Run("os", func(t *testing.T) {
		fs := vfs.NewMem()
		o := memOptions(fs)
		o.SegmentBytes, o.Flush = 1<<20, FlushOS
		s := mustOpen(t, o)
		defer s.Close()
		commitRange(t, s, "queue://q", 1, 10, 100)
		require.Less(t, stored(t, fs.CrashClone(), o), int64(10), "Sync commits are not synced")
		require.NoError(t, s.checkpoint())
		require.Equal(t, int64(10), stored(t, fs.CrashClone(), o), "a checkpoint syncs the log")
	})
}

// With StoreBeforeDispatch a batch cannot be withdrawn: CommitCancelable commits as
// CommitAsync and returns nil.
func TestStoreBeforeDispatch(t *testing.T) {
	s, err := Open(t.Context(), Options{Dir: t.TempDir(), Logger: quietLog, StoreBeforeDispatch: true})
	require.NoError(t, err)
	defer s.Close()
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://q", Seq: 1, Persistent: true})
	done := make(chan error, 1)
	cancel := b.(persistence.CancelableBatch).CommitCancelable(persistence.Sync, func(err error) { done <- err })
	require.Nil(t, cancel)
	require.NoError(t, <-done)
	msgs, _ := s.Stats("queue://q")
	require.EqualValues(t, 1, msgs)
}
