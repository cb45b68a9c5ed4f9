package journal

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkLog asserts that l holds exactly model and that its tombstones stay bounded.
func checkLog(t *testing.T, l *seqLog[loc], model map[uint64]loc) {
	t.Helper()
	require.Equal(t, len(model), l.Len())
	var got []uint64
	l.After(0, func(seq uint64, v *loc) bool {
		require.Equal(t, model[seq], *v, "value of %d", seq)
		got = append(got, seq)
		return true
	})
	require.Equal(t, slices.Sorted(maps.Keys(model)), got)
	checkBlocks(t, l)
	keys, vals := l.appendLive(nil, nil)
	require.Equal(t, got, append([]uint64(nil), keys...))
	require.Len(t, vals, len(keys))
}

func TestSeqLogRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l seqLog[loc]
	model := map[uint64]loc{}
	next := uint64(1)
	for i := range 10000 {
		v := loc{seg: uint32(i), off: uint32(i * 3)}
		switch r := rng.IntN(10); {
		case r < 4: // append
			l.Put(next, v)
			model[next] = v
			next++
		case r < 5: // insert before the tail, if free
			seq := 1 + rng.Uint64N(next)
			if _, ok := model[seq]; ok {
				require.True(t, l.Contains(seq))
				continue
			}
			l.Put(seq, v)
			model[seq] = v
			next = max(next, seq+1)
		case r < 7: // remove near the head: one of the three lowest seqs
			var low []uint64
			for seq := range model {
				low = append(low, seq)
				slices.Sort(low)
				low = low[:min(3, len(low))]
			}
			if len(low) == 0 {
				continue
			}
			seq := low[rng.IntN(len(low))]
			got, ok := l.Remove(seq)
			require.True(t, ok)
			require.Equal(t, model[seq], got)
			delete(model, seq)
		case r < 8: // update in place
			for seq := range model { // a random one
				*l.Ptr(seq) = v
				model[seq] = v
				break
			}
		default: // remove anywhere, maybe something absent
			seq := rng.Uint64N(next + 2)
			got, ok := l.Remove(seq)
			want, had := model[seq]
			require.Equal(t, had, ok)
			require.Equal(t, want, got)
			delete(model, seq)
		}
		if i%97 == 0 {
			checkLog(t, &l, model)
			after := rng.Uint64N(next + 1)
			var got, want []uint64
			l.After(after, func(seq uint64, _ *loc) bool { got = append(got, seq); return true })
			for _, seq := range slices.Sorted(maps.Keys(model)) {
				if seq > after {
					want = append(want, seq)
				}
			}
			require.Equal(t, want, got, "After(%d)", after)
		}
	}
	checkLog(t, &l, model)
}

func TestSeqLogQueuePatternStaysSmall(t *testing.T) {
	var l seqLog[struct{}]
	for seq := uint64(1); seq <= 100_000; seq++ {
		l.Put(seq, struct{}{})
		if seq > 10 {
			_, ok := l.Remove(seq - 10)
			require.True(t, ok)
		}
	}
	require.Equal(t, 10, l.Len())
	require.LessOrEqual(t, logCap(&l), 64, "consumed slots are not reclaimed")
	for seq := uint64(99_991); seq <= 100_000; seq++ {
		_, ok := l.Remove(seq)
		require.True(t, ok)
	}
	require.Zero(t, l.Len())
	require.Empty(t, l.blocks)
}

func TestSeqLogBounds(t *testing.T) {
	var l seqLog[struct{}]
	l.Put(math.MaxInt64, struct{}{})
	l.After(math.MaxUint64, func(uint64, *struct{}) bool { t.Fatal("After(MaxUint64) yielded"); return false })
	l.After(math.MaxInt64, func(uint64, *struct{}) bool { t.Fatal("After(MaxInt64) yielded"); return false })
	n := 0
	l.After(math.MaxInt64-1, func(uint64, *struct{}) bool { n++; return true })
	require.Equal(t, 1, n)
	require.True(t, l.Contains(math.MaxInt64))
	require.False(t, l.Contains(math.MaxUint64))
}

// checkBlocks asserts a seqLog's structure: non-empty blocks of at most seqBlockMax
// entries, keys increasing across them, as many values as keys, live counted right.
func checkBlocks[V any](t *testing.T, l *seqLog[V]) {
	t.Helper()
	n := 0
	prev := uint64(0)
	for b, blk := range l.blocks {
		require.NotEmpty(t, blk.keys, "block %d", b)
		require.LessOrEqual(t, len(blk.keys), seqBlockMax, "block %d", b)
		require.Len(t, blk.vals, len(blk.keys), "block %d", b)
		for i, k := range blk.keys {
			require.Greater(t, k, prev, "keys not sorted at block %d slot %d", b, i)
			prev = k
		}
		n += len(blk.keys)
	}
	require.Equal(t, l.live, n)
}

// logCap is the slots a seqLog has allocated.
func logCap[V any](l *seqLog[V]) int {
	n := 0
	for _, blk := range l.blocks {
		n += cap(blk.keys)
	}
	return n
}

// TestSeqLogRandomMillion inserts a million seqs in random order (scheduled jobs' due
// times): each insertion shifts within one block, so this takes well under a second
// where sorted slices took minutes, and the blocks keep their slack small.
func TestSeqLogRandomMillion(t *testing.T) {
	const n = 1_000_000
	perm := rand.New(rand.NewPCG(7, 8)).Perm(n)
	var l seqLog[loc]
	for _, p := range perm {
		l.Put(uint64(p+1)<<21, loc{seg: uint32(p)})
	}
	checkBlocks(t, &l)
	require.Equal(t, n, l.Len())
	slots := logCap(&l)
	perEntry := float64(slots)*24/n + float64(cap(l.blocks))*48/n
	t.Logf("%d entries: %d slots, %d blocks, %.1f bytes/entry", n, slots, len(l.blocks), perEntry)
	require.LessOrEqual(t, perEntry, 30.0, "bytes per entry")
	want, bad := uint64(0), 0
	l.After(0, func(seq uint64, v *loc) bool {
		want += 1 << 21
		if seq != want || v.seg != uint32(seq>>21-1) {
			bad++
		}
		return true
	})
	require.Zero(t, bad, "entries out of order or with the wrong value")
	// Acknowledge in due order, as the scheduler does: the blocks empty and go.
	for seq := uint64(1); seq <= n; seq++ {
		if _, ok := l.Remove(seq << 21); !ok {
			bad++
		}
	}
	require.Zero(t, bad, "entries not found")
	require.Zero(t, l.Len())
	require.Empty(t, l.blocks)
}
