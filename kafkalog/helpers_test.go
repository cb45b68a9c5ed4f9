package kafkalog

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/stretchr/testify/require"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func memOpts(fs vfs.FS, c *clock) Options {
	return Options{FS: fs, Dir: "/log", SegmentBytes: 4096, IndexIntervalBytes: 256,
		RetentionCheckInterval: -1, Now: c.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func openT(t *testing.T, o Options) *Log {
	t.Helper()
	l, err := Open(o)
	require.NoError(t, err)
	return l
}

func rec(i int) Record {
	return Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "value-%06d", i),
		Headers: [][2]string{{"n", fmt.Sprint(i)}}}
}

// appendN appends n records in batches of size bs, numbering from first.
func appendN(t *testing.T, l *Log, topic string, part, first, n, bs int) {
	t.Helper()
	for i := first; i < first+n; i += bs {
		var recs []Record
		for j := i; j < min(i+bs, first+n); j++ {
			recs = append(recs, rec(j))
		}
		off, err := l.Append(topic, part, recs)
		require.NoError(t, err)
		require.Equal(t, int64(i), off)
	}
}

// readAll reads a partition from offset to the high watermark.
func readAll(t *testing.T, l *Log, topic string, part int, from int64) []Record {
	t.Helper()
	var out []Record
	for {
		recs, err := l.Read(topic, part, from, 1000)
		require.NoError(t, err)
		if len(recs) == 0 {
			return out
		}
		for _, r := range recs {
			require.Equal(t, from, r.Offset)
			from++
		}
		out = append(out, recs...)
	}
}

func checkRecs(t *testing.T, recs []Record, first int) {
	t.Helper()
	for i, r := range recs {
		want := rec(first + i)
		require.Equal(t, int64(first+i), r.Offset)
		require.Equal(t, want.Key, r.Key)
		require.Equal(t, want.Value, r.Value)
		require.Equal(t, want.Headers, r.Headers)
	}
}
