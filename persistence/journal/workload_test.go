package journal

import (
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
			for k, step := range w.steps {
				b := s.Begin()
				step(b)
				require.NoError(t, b.Commit(t.Context(), persistence.Sync))
				require.Equal(t, w.dumps[k+1], dump(t, s), "after step %d", k)
				switch {
				case k%7 == 6:
					require.NoError(t, s.checkpoint(true))
					n, err := s.compact()
					require.NoError(t, err)
					moved += n
					s.mu.RLock()
					for _, d := range s.idx.dests {
						for _, e := range d.moved {
							inMoved = max(inMoved, e.n)
						}
					}
					s.mu.RUnlock()
					require.NoError(t, s.checkpoint(true))
					require.Equal(t, w.dumps[k+1], dump(t, s), "after cleanup at step %d", k)
				case k%50 == 25:
					require.NoError(t, s.Close())
					s = mustOpen(t, o)
					require.Equal(t, w.dumps[k+1], dump(t, s), "after reopening at step %d", k)
				case k%50 == 45: // a crash: the open store is abandoned, its files kept
					crashed := fs.CrashClone()
					require.NoError(t, s.Close()) // writes to the old file system only
					fs = crashed
					o.FS = fs
					s = mustOpen(t, o)
					require.Equal(t, w.dumps[k+1], dump(t, s), "after a crash at step %d", k)
				}
			}
			require.NoError(t, s.Close())
			require.Positive(t, moved, "the compactor moved messages")
			require.Positive(t, inMoved, "the compactor's copies went to moved extents")
			t.Logf("seed %d: %d messages moved by the compactor, up to %d in one moved extent", seed, moved, inMoved)
		})
	}
}
