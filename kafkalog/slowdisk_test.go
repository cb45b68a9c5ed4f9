package kafkalog

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
)

// slowDisk makes one kind of operation of a Mem wait, from the moment it is armed, until
// it is released: a disk stuck in an fsync or a deletion.
type slowDisk struct {
	fs      *vfs.Mem
	entered chan struct{} // closed when the first held operation starts waiting
	release chan struct{}
	once    sync.Once
	free    sync.Once
}

// hold arms d: from now on every op on a path that match accepts waits for release.
func holdDisk(t *testing.T, fs *vfs.Mem, op vfs.Op, match func(path string) bool) *slowDisk {
	d := &slowDisk{fs: fs, entered: make(chan struct{}), release: make(chan struct{})}
	fs.Inject(func(o vfs.Op, path string) error {
		if o != op || !match(path) {
			return nil
		}
		d.once.Do(func() { close(d.entered) })
		<-d.release
		return nil
	})
	t.Cleanup(d.unblock) // a failing test must not leave goroutines stuck
	return d
}

func (d *slowDisk) unblock() {
	d.free.Do(func() {
		d.fs.Inject(nil)
		close(d.release)
	})
}

// waitHeld waits until an operation is held.
func (d *slowDisk) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-d.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the held disk operation never started")
	}
}

// within requires f to return within a few seconds, without error.
func within(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s waited for the held disk operation", what)
	}
}

func anyPath(string) bool { return true }

// TestReadersNotHeldBySlowDisk: while retention, DeleteBefore or a segment roll waits on
// the disk (a file removal, an fsync, a directory sync), readers of the partition are
// served: the slow file work runs outside the partition's lock.
func TestReadersNotHeldBySlowDisk(t *testing.T) {
	logFile := func(p string) bool { return filepath.Ext(p) == logSuffix }
	cases := []struct {
		name  string
		op    vfs.Op
		match func(string) bool
		flush FlushPolicy
		// work is the operation that waits on the disk; it runs once the partition
		// holds several segments and the clock is past their retention.
		work func(l *Log) error
	}{
		{"retention removes a segment", vfs.OpRemove, logFile, FlushOS, func(l *Log) error { return l.EnforceRetention() }},
		{"retention syncs the directory", vfs.OpSyncDir, anyPath, FlushOS, func(l *Log) error { return l.EnforceRetention() }},
		{"delete-before removes a segment", vfs.OpRemove, logFile, FlushOS, func(l *Log) error {
			_, err := l.DeleteBefore("t", 0, 1<<40)
			return err
		}},
		{"roll fsyncs the sealed segment", vfs.OpSync, anyPath, FlushOS, appendBig},
		{"roll creates the new segment", vfs.OpCreate, anyPath, FlushOS, appendBig},
		{"roll syncs the directory", vfs.OpSyncDir, anyPath, FlushOS, appendBig},
		{"roll fsyncs, flush batch", vfs.OpSync, anyPath, FlushBatch, appendBig},
		{"append fsyncs, flush batch", vfs.OpSync, anyPath, FlushBatch, func(l *Log) error {
			_, err := l.Append("t", 0, []Record{rec(9999)})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			c := newClock()
			o := memOpts(fs, c)
			o.SegmentBytes = 1024
			o.Retention = time.Hour
			o.Flush = tc.flush
			l := openT(t, o)
			t.Cleanup(func() { _ = l.Close() }) // after the disk is released (cleanups run last first)
			require.NoError(t, l.CreateTopic("t", 1))
			appendN(t, l, "t", 0, 0, 100, 5)
			st, err := l.Stats("t", 0)
			require.NoError(t, err)
			require.Greater(t, st.Segments, 3)
			next, err := l.NextOffset("t", 0)
			require.NoError(t, err)
			c.Add(2 * time.Hour)

			d := holdDisk(t, fs, tc.op, tc.match)
			workErr := make(chan error, 1)
			go func() { workErr <- tc.work(l) }()
			d.waitHeld(t)

			within(t, "Read", func() error {
				recs, err := l.Read("t", 0, next-1, 1<<10)
				if err == nil && (len(recs) == 0 || recs[0].Offset != next-1) {
					err = fmt.Errorf("read at %d got %d records", next-1, len(recs))
				}
				return err
			})
			within(t, "OffsetForTime", func() error {
				_, err := l.OffsetForTime("t", 0, 0)
				return err
			})
			within(t, "OldestOffset and Stats", func() error {
				if _, err := l.OldestOffset("t", 0); err != nil {
					return err
				}
				_, err := l.Stats("t", 0)
				return err
			})

			d.unblock()
			select {
			case err := <-workErr:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the work did not finish once the disk was released")
			}
			oldest, err := l.OldestOffset("t", 0)
			require.NoError(t, err)
			require.Less(t, oldest, next)
			recs := readAll(t, l, "t", 0, oldest)
			require.GreaterOrEqual(t, int64(len(recs)), next-oldest)
			checkRecs(t, recs[:next-oldest], int(oldest))
		})
	}
}

// appendBig appends a batch that cannot fit in the active segment: the segment rolls.
func appendBig(l *Log) error {
	_, err := l.Append("t", 0, []Record{{Value: make([]byte, 900)}})
	return err
}
