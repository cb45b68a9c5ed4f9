package kafkalog

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/stretchr/testify/require"
)

// crashPoint is the state a power cut left, with what had been acknowledged by then.
type crashPoint struct {
	fs    *vfs.Mem
	acked int64
}

// TestCrashRecovery cuts the power at random mutating operations of a workload of
// FlushBatch appends (with torn writes and with or without directory write-back) and
// checks every clone: all acknowledged records are there, the tail is cut at a batch
// boundary, offsets are dense and continue densely after new appends.
func TestCrashRecovery(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushBatch, FlushOS} {
		t.Run(policy.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(policy)))
			fs := vfs.NewMem()
			o := memOpts(fs, newClock())
			o.Flush = policy
			o.SegmentBytes = 2048
			l := openT(t, o)
			require.NoError(t, l.CreateTopic("t", 1))
			var acked atomic.Int64
			var points []crashPoint
			fs.Inject(func(op vfs.Op, path string) error {
				if op.Mutating() && rng.IntN(4) == 0 {
					c := fs.CrashCloneWith(vfs.CrashOptions{
						FlushDirs: rng.IntN(2) == 0,
						KeepData:  func(_ string, n int) int { return rng.IntN(n + 1) },
					})
					points = append(points, crashPoint{c, acked.Load()})
				}
				return nil
			})
			const total, bs = 400, 4
			for i := 0; i < total; i += bs {
				appendN(t, l, "t", 0, i, bs, bs)
				if policy == FlushBatch {
					acked.Store(int64(i + bs))
				} else if i%40 == 0 {
					require.NoError(t, l.Flush())
					acked.Store(int64(i + bs))
				}
			}
			fs.Inject(nil)
			require.NoError(t, l.Close())
			require.NotEmpty(t, points)
			for _, p := range points {
				o := o
				o.FS = p.fs
				l, err := Open(o)
				require.NoError(t, err, "acked %d\n%s", p.acked, p.fs)
				recs := readAll(t, l, "t", 0, 0)
				require.GreaterOrEqual(t, int64(len(recs)), p.acked, "acknowledged records lost")
				require.Zero(t, len(recs)%bs, "tail cut inside a batch")
				checkRecs(t, recs, 0)
				next, _ := l.NextOffset("t", 0)
				require.Equal(t, int64(len(recs)), next)
				appendN(t, l, "t", 0, len(recs), 8, 4)
				require.NoError(t, l.Close())
				l = openT(t, o) // and once more, after a clean close
				checkRecs(t, readAll(t, l, "t", 0, 0), 0)
				require.NoError(t, l.Close())
			}
			t.Logf("%d crash points checked", len(points))
		})
	}
}

// TestIndexRebuild damages index files; the log still reads at every offset.
func TestIndexRebuild(t *testing.T) {
	fs := vfs.NewMem()
	c := newClock()
	o := memOpts(fs, c)
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 1))
	for i := range 300 {
		r := rec(i)
		r.Timestamp = 1000 + int64(i)
		_, err := l.Append("t", 0, []Record{r})
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	dir := "/log/t-0"
	names, err := fs.List(dir)
	require.NoError(t, err)
	var idx, tidx []string
	for _, n := range names {
		switch filepath.Ext(n) {
		case indexSuffix:
			idx = append(idx, n)
		case timeIndexSuffix:
			tidx = append(tidx, n)
		}
	}
	require.Greater(t, len(idx), 3)
	require.NoError(t, fs.Remove(filepath.Join(dir, idx[0])))                                                // missing
	require.NoError(t, fs.WriteFile(filepath.Join(dir, idx[1]), []byte{1, 2, 3}))                            // torn
	require.NoError(t, fs.WriteFile(filepath.Join(dir, tidx[2]), make([]byte, 24)))                          // non-increasing
	require.NoError(t, fs.WriteFile(filepath.Join(dir, idx[len(idx)-1]), []byte{0, 0, 0, 1, 0xff, 0, 0, 0})) // out of range
	l = openT(t, o)
	defer l.Close()
	for off := range 300 {
		recs, err := l.Read("t", 0, int64(off), 1)
		require.NoError(t, err)
		checkRecs(t, recs[:1], off)
		got, err := l.OffsetForTime("t", 0, 1000+int64(off))
		require.NoError(t, err)
		require.Equal(t, int64(off), got)
	}
}

// TestCorruptTail overwrites the end of the active segment with garbage after a crash.
func TestCorruptTail(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	o.SegmentBytes = 1 << 20
	o.Flush = FlushBatch
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 1))
	appendN(t, l, "t", 0, 0, 100, 10)
	crashed := fs.CrashClone()
	require.NoError(t, l.Close())
	path := "/log/t-0/" + "00000000000000000000.log"
	data, err := crashed.ReadFile(path)
	require.NoError(t, err)
	// flip a byte inside the last batch: it and nothing before must go
	data[len(data)-5] ^= 0xff
	require.NoError(t, crashed.WriteFile(path, slices.Concat(data, []byte("garbage"))))
	o.FS = crashed
	l = openT(t, o)
	defer l.Close()
	recs := readAll(t, l, "t", 0, 0)
	require.Len(t, recs, 90)
	checkRecs(t, recs, 0)
	appendN(t, l, "t", 0, 90, 10, 10)
	checkRecs(t, readAll(t, l, "t", 0, 0), 0)
}
