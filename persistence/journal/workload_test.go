package journal

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// TestWorkloadWithCompactionAndReopen runs random workloads on a store with small
// segments and compares it with the memory store after every batch, while cleanups
// (checkpoint, compaction with Move records, deletion of dead segments) run every few
// batches and the store is closed and reopened now and then: from its checkpoint, or
// after a crash (nothing closed: the records since the last checkpoint are replayed).
func TestWorkloadWithCompactionAndReopen(t *testing.T) {
	seeds, steps := []uint64{21, 22, 23, 24, 25, 26}, 400
	if testing.Short() {
		seeds, steps = seeds[:1], 120
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newWorkload(t, seed, steps)
			fs := vfs.NewMem()
			o := memOptions(fs)
			o.MaxFileLength = 4 * MinFileLength
			o.CompactLiveRatio = 0.5
			s := mustOpen(t, o)
			moved, inMoved := 0, int64(0)
			for k, step := range w.Steps {
				b := s.Begin()
				step(b)
				require.NoError(t, b.Commit(t.Context(), persistence.Sync))
				require.Equal(t, w.States[k+1], dump(t, s), "after step %d", k)
				switch {
				case k%7 == 6:
					require.NoError(t, s.checkpoint(true))
					n, err := s.compact()
					require.NoError(t, err)
					moved += n
					s.shell.Mu.RLock()
					for _, d := range s.idx.dests {
						for _, e := range d.moved {
							inMoved = max(inMoved, e.n)
						}
					}
					s.shell.Mu.RUnlock()
					require.NoError(t, s.checkpoint(true))
					require.Equal(t, w.States[k+1], dump(t, s), "after cleanup at step %d", k)
				case k%50 == 25:
					require.NoError(t, s.Close())
					s = mustOpen(t, o)
					require.Equal(t, w.States[k+1], dump(t, s), "after reopening at step %d", k)
				case k%50 == 45: // a crash: the open store is abandoned, its files kept
					crashed := fs.CrashClone()
					require.NoError(t, s.Close()) // writes to the old file system only
					fs = crashed
					o.FS = fs
					s = mustOpen(t, o)
					require.Equal(t, w.States[k+1], dump(t, s), "after a crash at step %d", k)
				}
			}
			require.NoError(t, s.Close())
			require.Positive(t, moved, "the compactor moved messages")
			require.Positive(t, inMoved, "the compactor's copies went to moved extents")
			t.Logf("seed %d: %d messages moved by the compactor, up to %d in one moved extent", seed, moved, inMoved)
		})
	}
}

// TestScanAcrossMovedExtents stores a queue and a topic with one durable subscription
// in small segments, acknowledges nine messages in ten out of order, compacts (the
// stuck messages are copied into moved extents of the active segment) while new
// messages are appended to the same segment, and scans both with rounds of several
// sizes: every stored message comes back once, in order, with its own body, before
// and after a reopen and a second compaction.
func TestScanAcrossMovedExtents(t *testing.T) {
	const q, topic = "queue://m", "topic://m"
	sub := persistence.SubKey{ClientID: "c", Name: "s"}
	fs := vfs.NewMem()
	o := memOptions(fs)
	o.MaxFileLength = 4 * MinFileLength
	s := mustOpen(t, o)
	b := s.Begin()
	b.AddSub(persistence.SubInfo{Key: sub, Dest: topic})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	msg := func(dest string, seq uint64) *persistence.Message {
		return &persistence.Message{Dest: dest, Seq: seq, ID: fmt.Sprint(seq),
			Body: bytes.Repeat([]byte{byte(seq)}, 90+int(seq%7)), Subs: []persistence.SubKey{sub}}
	}
	var want []uint64
	add := func(from, to uint64) {
		for seq := from; seq <= to; seq += 5 {
			b := s.Begin()
			for k := seq; k < seq+5 && k <= to; k++ {
				b.Add(msg(q, k))
				b.Add(msg(topic, k))
			}
			require.NoError(t, b.Commit(t.Context(), persistence.Sync))
		}
	}
	add(1, 600)
	b = s.Begin()
	for seq := uint64(1); seq <= 600; seq++ {
		if seq%10 == 3 {
			want = append(want, seq)
			continue
		}
		b.Ack(q, seq)
		b.AckSub(sub, seq)
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	check := func(what string) {
		t.Helper()
		for _, max := range []int{0, 1, 7, 50} {
			for _, scan := range []func(uint64, int, func(*persistence.Message) error) error{
				func(after uint64, max int, fn func(*persistence.Message) error) error {
					return s.Scan(t.Context(), q, after, max, fn)
				},
				func(after uint64, max int, fn func(*persistence.Message) error) error {
					return s.ScanSub(t.Context(), sub, after, max, fn)
				},
			} {
				var got []uint64
				after := uint64(0)
				for {
					n := 0
					require.NoError(t, scan(after, max, func(m *persistence.Message) error {
						require.Equal(t, bytes.Repeat([]byte{byte(m.Seq)}, 90+int(m.Seq%7)), m.Body, "%s: body of %d", what, m.Seq)
						got = append(got, m.Seq)
						after = m.Seq
						n++
						return nil
					}))
					if max == 0 || n < max {
						break
					}
				}
				require.Equal(t, want, got, "%s: max %d", what, max)
			}
		}
	}
	check("before compaction")
	require.NoError(t, s.checkpoint(true))
	moved, err := s.compact()
	require.NoError(t, err)
	require.Positive(t, moved)
	add(601, 700) // into the segment the copies went to
	for seq := uint64(601); seq <= 700; seq++ {
		want = append(want, seq)
	}
	s.shell.Mu.RLock()
	inMoved := int64(0)
	for _, e := range s.idx.dests[q].moved {
		inMoved += e.n
	}
	s.shell.Mu.RUnlock()
	require.Positive(t, inMoved, "copies in moved extents")
	check("after compaction")
	require.NoError(t, s.Close())
	s = mustOpen(t, o)
	check("after reopening")
	require.NoError(t, s.cleanup())
	check("after a second compaction")
	require.NoError(t, s.Close())
}
