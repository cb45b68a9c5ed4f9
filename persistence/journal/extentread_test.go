package journal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// TestScanLargeRecords scans a queue stored in batches of 1000 messages (records of
// about 290 KiB, larger than one read of the segment, and ending off the window's
// alignment) from several starting points and in several round sizes: every message
// comes back once, in order, after a reopen too.
func TestScanLargeRecords(t *testing.T) {
	const n = 20_000
	o := Options{Dir: t.TempDir(), Logger: quietLog, CheckpointInterval: -1, CleanupInterval: -1}
	s := mustOpen(t, o)
	m := &persistence.Message{Dest: "queue://big", ID: "x", Body: make([]byte, 251)}
	for seq := 1; seq <= n; seq += 1000 {
		b := s.Begin()
		for i := range 1000 {
			m.Seq = uint64(seq + i)
			m.Body[0] = byte(m.Seq)
			b.Add(m)
		}
		require.NoError(t, b.Commit(t.Context(), persistence.Async))
	}
	check := func(s *Store) {
		for _, c := range []struct {
			after uint64
			max   int
		}{{0, 0}, {0, 7}, {999, 130}, {1000, 1}, {12_345, 0}, {n - 3, 0}} {
			want := c.after + 1
			require.NoError(t, s.Scan(t.Context(), "queue://big", c.after, c.max, func(m *persistence.Message) error {
				require.Equal(t, want, m.Seq)
				require.Equal(t, byte(m.Seq), m.Body[0])
				want++
				return nil
			}))
			got := int(want - c.after - 1)
			if c.max > 0 {
				require.Equal(t, min(c.max, n-int(c.after)), got, "after %d max %d", c.after, c.max)
			} else {
				require.Equal(t, n-int(c.after), got, "after %d", c.after)
			}
		}
	}
	check(s)
	require.NoError(t, s.Close())
	s = mustOpen(t, o)
	check(s)
	require.NoError(t, s.Close())
}

// TestDrainVariedSizes acknowledges, from the head, a queue whose messages all differ in
// length (one length run per message): the tables are trimmed as the head moves, in
// time linear in the messages, and Stats stay exact throughout.
func TestDrainVariedSizes(t *testing.T) {
	const n = 200_000
	x := newIndex()
	var body int64
	for seq := uint64(1); seq <= n; seq++ {
		l := loc{seg: 1 + uint32(seq/50_000), off: uint32(16 + seq*64), n: uint32(40 + seq%97), body: uint32(10 + seq%97)}
		x.apply(&op{Op: batchrec.Op{Kind: batchrec.OpAdd, Dest: "queue://v", Seq: seq}, loc: l, msgOff: 16})
		body += int64(l.body)
	}
	d := x.dests["queue://v"]
	require.Len(t, d.ext, 5)
	require.Equal(t, body, d.bytes)
	for seq := uint64(1); seq <= n; seq++ {
		x.apply(&op{Op: batchrec.Op{Kind: batchrec.OpAck, Dest: "queue://v", Seq: seq}})
		body -= int64(10 + seq%97)
		if seq%10_007 == 0 {
			require.Equal(t, body, d.bytes)
			require.Equal(t, int64(n-seq), d.msgs)
		}
	}
	require.Equal(t, int64(0), d.bytes)
	require.Zero(t, d.log.Len())
}
