package kafkalog

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTripAcrossRolls(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushOS, FlushBatch, FlushInterval} {
		t.Run(policy.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			o := memOpts(fs, newClock())
			o.Flush = policy
			l := openT(t, o)
			require.NoError(t, l.CreateTopic("t", 2))
			appendN(t, l, "t", 1, 0, 1000, 7)
			st, err := l.Stats("t", 1)
			require.NoError(t, err)
			require.Greater(t, st.Segments, 5, "segments rolled")
			recs := readAll(t, l, "t", 1, 0)
			require.Len(t, recs, 1000)
			checkRecs(t, recs, 0)
			// every offset is found through the sparse index
			for off := range 1000 {
				got, err := l.Read("t", 1, int64(off), 1)
				require.NoError(t, err)
				require.NotEmpty(t, got)
				checkRecs(t, got[:1], off)
			}
			next, _ := l.NextOffset("t", 1)
			require.Equal(t, int64(1000), next)
			empty, err := l.NextOffset("t", 0)
			require.NoError(t, err)
			require.Zero(t, empty)
			require.NoError(t, l.Close())

			l = openT(t, o) // clean reopen
			recs = readAll(t, l, "t", 1, 0)
			checkRecs(t, recs, 0)
			require.Len(t, recs, 1000)
			appendN(t, l, "t", 1, 1000, 10, 3)
			checkRecs(t, readAll(t, l, "t", 1, 995), 995)
			require.NoError(t, l.Close())
		})
	}
}

func TestReadErrorsAndLimits(t *testing.T) {
	l := openT(t, memOpts(vfs.NewMem(), newClock()))
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 1))
	require.ErrorIs(t, l.CreateTopic("t", 1), ErrTopicExists)
	require.ErrorIs(t, l.CreateTopic("a/b", 1), ErrInvalidTopic)
	_, err := l.Append("nope", 0, []Record{rec(0)})
	require.ErrorIs(t, err, ErrUnknownTopic)
	_, err = l.Append("t", 1, []Record{rec(0)})
	require.ErrorIs(t, err, ErrUnknownPartition)
	_, err = l.Append("t", 0, nil)
	require.ErrorIs(t, err, ErrEmptyBatch)
	appendN(t, l, "t", 0, 0, 100, 10)
	_, err = l.Read("t", 0, 101, 100)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	recs, err := l.Read("t", 0, 100, 100)
	require.NoError(t, err)
	require.Empty(t, recs)
	recs, err = l.Read("t", 0, 5, 1) // at least one record
	require.NoError(t, err)
	require.Len(t, recs, 5) // the rest of the batch 0..9
	checkRecs(t, recs, 5)
}

func TestOffsetForTime(t *testing.T) {
	c := newClock()
	l := openT(t, memOpts(vfs.NewMem(), c))
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 1))
	base := c.Now().UnixMilli()
	for i := range 300 {
		r := rec(i)
		r.Timestamp = base + int64(i)*10
		_, err := l.Append("t", 0, []Record{r})
		require.NoError(t, err)
	}
	for i := range 300 {
		off, err := l.OffsetForTime("t", 0, base+int64(i)*10-5)
		require.NoError(t, err)
		require.Equal(t, int64(i), off)
		off, err = l.OffsetForTime("t", 0, base+int64(i)*10)
		require.NoError(t, err)
		require.Equal(t, int64(i), off)
	}
	off, err := l.OffsetForTime("t", 0, base+1_000_000)
	require.NoError(t, err)
	require.Equal(t, int64(300), off)
	off, err = l.OffsetForTime("t", 0, 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), off)
}

func TestRetentionByTimeAndSize(t *testing.T) {
	c := newClock()
	o := memOpts(vfs.NewMem(), c)
	o.Retention = time.Hour
	l := openT(t, o)
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 1))
	appendN(t, l, "t", 0, 0, 200, 10)
	c.Add(2 * time.Hour)
	appendN(t, l, "t", 0, 200, 200, 10)
	st, _ := l.Stats("t", 0)
	before := st.Segments
	require.NoError(t, l.EnforceRetention())
	oldest, _ := l.OldestOffset("t", 0)
	require.Greater(t, oldest, int64(0))
	require.LessOrEqual(t, oldest, int64(200), "segments holding new records are kept")
	st, _ = l.Stats("t", 0)
	require.Less(t, st.Segments, before)
	_, err := l.Read("t", 0, 0, 100)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	checkRecs(t, readAll(t, l, "t", 0, oldest), int(oldest))

	// Everything expired: only the active segment stays.
	c.Add(2 * time.Hour)
	require.NoError(t, l.EnforceRetention())
	st, _ = l.Stats("t", 0)
	require.Equal(t, 1, st.Segments)
	next, _ := l.NextOffset("t", 0)
	require.Equal(t, int64(400), next)
	appendN(t, l, "t", 0, 400, 10, 10)

	// By size.
	o2 := memOpts(vfs.NewMem(), c)
	o2.RetentionBytes = 3 * 4096
	l2 := openT(t, o2)
	defer l2.Close()
	require.NoError(t, l2.CreateTopic("t", 1))
	appendN(t, l2, "t", 0, 0, 1000, 10)
	require.NoError(t, l2.EnforceRetention())
	st, _ = l2.Stats("t", 0)
	require.LessOrEqual(t, st.Bytes, int64(3*4096))
	oldest, _ = l2.OldestOffset("t", 0)
	checkRecs(t, readAll(t, l2, "t", 0, oldest), int(oldest))
}

func TestSegmentRollByAge(t *testing.T) {
	c := newClock()
	o := memOpts(vfs.NewMem(), c)
	o.SegmentBytes = 1 << 20
	o.SegmentAge = time.Minute
	l := openT(t, o)
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 1))
	appendN(t, l, "t", 0, 0, 10, 5)
	c.Add(2 * time.Minute)
	appendN(t, l, "t", 0, 10, 10, 5)
	st, _ := l.Stats("t", 0)
	require.Equal(t, 2, st.Segments)
}

func TestConcurrentAppenders(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushOS, FlushBatch} {
		t.Run(policy.String(), func(t *testing.T) {
			o := memOpts(vfs.NewMem(), newClock())
			o.Flush = policy
			o.SegmentBytes = 64 << 10
			l := openT(t, o)
			require.NoError(t, l.CreateTopic("t", 1))
			const writers, per = 8, 200
			var wg sync.WaitGroup
			seen := make([][]int64, writers)
			for w := range writers {
				wg.Go(func() {
					for i := range per {
						off, err := l.Append("t", 0, []Record{{Value: []byte{byte(w), byte(i)}}})
						assert.NoError(t, err)
						seen[w] = append(seen[w], off)
					}
				})
			}
			// a concurrent reader follows
			wg.Go(func() {
				var from int64
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				for from < writers*per {
					if err := l.Wait(ctx, "t", 0, from); !assert.NoError(t, err) {
						return
					}
					recs, err := l.Read("t", 0, from, 4096)
					assert.NoError(t, err)
					from += int64(len(recs))
				}
			})
			wg.Wait()
			recs := readAll(t, l, "t", 0, 0)
			require.Len(t, recs, writers*per)
			for w := range writers {
				for i, off := range seen[w] {
					require.Equal(t, []byte{byte(w), byte(i)}, recs[off].Value)
				}
			}
			st, _ := l.Stats("t", 0)
			if policy == FlushBatch {
				require.LessOrEqual(t, st.Syncs, st.Appends)
				t.Logf("appends %d, syncs %d", st.Appends, st.Syncs)
			}
			require.NoError(t, l.Close())
			_, err := l.Append("t", 0, []Record{rec(0)})
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}

func TestLockedDirectory(t *testing.T) {
	o := memOpts(vfs.NewMem(), newClock())
	l := openT(t, o)
	_, err := Open(o)
	require.ErrorIs(t, err, vfs.ErrLocked)
	require.NoError(t, l.Close())
	require.NoError(t, openT(t, o).Close())
}

func TestSyncErrorFailsPartition(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	o.Flush = FlushBatch
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 1))
	appendN(t, l, "t", 0, 0, 5, 5)
	fs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync {
			return vfs.ErrInjected
		}
		return nil
	})
	_, err := l.Append("t", 0, []Record{rec(5)})
	require.ErrorIs(t, err, vfs.ErrInjected)
	fs.Inject(nil)
	_, err = l.Append("t", 0, []Record{rec(5)})
	require.ErrorIs(t, err, ErrPartitionFailed)
	require.NoError(t, l.Close()) // closes without a clean checkpoint
	l = openT(t, o)
	defer l.Close()
	next, _ := l.NextOffset("t", 0)
	require.GreaterOrEqual(t, next, int64(5))
}
