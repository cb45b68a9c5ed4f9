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
	require.LessOrEqual(t, len(l.keys)-l.live, l.live+seqLogSlack, "tombstones unbounded")
	require.Equal(t, len(l.keys), len(l.vals))
	for i := l.head + 1; i < len(l.keys); i++ {
		require.Less(t, l.keys[i-1]&^deadBit, l.keys[i]&^deadBit, "keys not sorted at %d", i)
	}
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
	require.LessOrEqual(t, cap(l.keys), 4*(10+seqLogSlack), "consumed slots are not reclaimed")
	for seq := uint64(99_991); seq <= 100_000; seq++ {
		_, ok := l.Remove(seq)
		require.True(t, ok)
	}
	require.Zero(t, l.Len())
	require.Empty(t, l.keys)
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
	require.False(t, l.Contains(math.MaxInt64|deadBit))
}
