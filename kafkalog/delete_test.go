package kafkalog

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
)

// segmentBases lists the base offsets of a partition's segment logs on disk.
func segmentBases(t *testing.T, fs vfs.FS, dir string) []int64 {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var bases []int64
	for _, n := range names {
		if base, suffix, ok := parseSegmentName(n); ok {
			require.Contains(t, []string{logSuffix, indexSuffix, timeIndexSuffix}, suffix)
			if suffix == logSuffix {
				bases = append(bases, base)
			}
		}
	}
	return bases
}

func TestDeleteBefore(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	o.SegmentBytes = 1024
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 2))
	appendN(t, l, "t", 0, 0, 200, 5)
	const dir = "/log/t-0"
	bases := segmentBases(t, fs, dir)
	require.Greater(t, len(bases), 5, "the test needs several segments")

	// Below the end of the first segment: nothing can go.
	n, err := l.DeleteBefore("t", 0, bases[1]-1)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, bases, segmentBases(t, fs, dir))

	// Exactly at the second segment's base: the first one holds only records below it.
	n, err = l.DeleteBefore("t", 0, bases[1])
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, bases[1:], segmentBases(t, fs, dir))
	oldest, err := l.OldestOffset("t", 0)
	require.NoError(t, err)
	require.Equal(t, bases[1], oldest)
	_, err = l.Read("t", 0, bases[1]-1, 1)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)

	// Inside the fourth segment: the second and third go, the fourth stays.
	n, err = l.DeleteBefore("t", 0, bases[3]+1)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, bases[3:], segmentBases(t, fs, dir))
	checkRecs(t, readAll(t, l, "t", 0, bases[3]), int(bases[3]))

	// Far beyond the end: every sealed segment goes, the active one stays and appends go on.
	n, err = l.DeleteBefore("t", 0, 1<<40)
	require.NoError(t, err)
	require.Equal(t, len(bases)-4, n)
	last := bases[len(bases)-1]
	require.Equal(t, []int64{last}, segmentBases(t, fs, dir))
	checkRecs(t, readAll(t, l, "t", 0, last), int(last))
	appendN(t, l, "t", 0, 200, 10, 5)
	checkRecs(t, readAll(t, l, "t", 0, last), int(last))

	// The other partition is untouched.
	require.Equal(t, []int64{0}, segmentBases(t, fs, "/log/t-1"))

	_, err = l.DeleteBefore("nope", 0, 1)
	require.ErrorIs(t, err, ErrUnknownTopic)
	_, err = l.DeleteBefore("t", 2, 1)
	require.ErrorIs(t, err, ErrUnknownPartition)

	// The deletion survives a reopen and a power cut: the directory was synced.
	require.NoError(t, l.Close())
	_, err = l.DeleteBefore("t", 0, 1<<40)
	require.ErrorIs(t, err, ErrClosed)
	for _, f := range []*vfs.Mem{fs, fs.CrashClone()} {
		o.FS = f
		l = openT(t, o)
		oldest, err = l.OldestOffset("t", 0)
		require.NoError(t, err)
		require.Equal(t, last, oldest)
		next, err := l.NextOffset("t", 0)
		require.NoError(t, err)
		require.Equal(t, int64(210), next)
		checkRecs(t, readAll(t, l, "t", 0, last), int(last))
		require.NoError(t, l.Close())
	}
}

// TestDeleteBeforeRemoveError: a failed removal is reported; the segments are gone from
// the partition either way, and what is left reads on.
func TestDeleteBeforeRemoveError(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	o.SegmentBytes = 1024
	l := openT(t, o)
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 1))
	appendN(t, l, "t", 0, 0, 100, 5)
	bases := segmentBases(t, fs, "/log/t-0")
	require.Greater(t, len(bases), 3)
	fs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && filepath.Ext(path) == indexSuffix {
			return vfs.ErrInjected
		}
		return nil
	})
	n, err := l.DeleteBefore("t", 0, bases[2])
	fs.Inject(nil)
	require.ErrorIs(t, err, vfs.ErrInjected)
	require.Equal(t, 2, n)
	oldest, err := l.OldestOffset("t", 0)
	require.NoError(t, err)
	require.Equal(t, bases[2], oldest)
	checkRecs(t, readAll(t, l, "t", 0, bases[2]), int(bases[2]))
}

// TestDeleteBeforeConcurrentReads deletes while readers read at and after the offset
// deleted before; run it under -race.
func TestDeleteBeforeConcurrentReads(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	o.SegmentBytes = 1024
	l := openT(t, o)
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 1))
	appendN(t, l, "t", 0, 0, 400, 4)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			for i := range 200 {
				from := int64(300 + (i*7+r)%100) // never below what is deleted
				recs, err := l.Read("t", 0, from, 512)
				if err == nil && (len(recs) == 0 || recs[0].Offset != from) {
					err = errors.New("read did not start at the offset asked for")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for off := int64(0); off <= 300; off += 20 {
		_, err := l.DeleteBefore("t", 0, off)
		require.NoError(t, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	oldest, err := l.OldestOffset("t", 0)
	require.NoError(t, err)
	require.LessOrEqual(t, oldest, int64(300))
	checkRecs(t, readAll(t, l, "t", 0, 300), 300)
}
