package memstore

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// checkLog asserts that l holds exactly model and that its tombstones stay bounded.
func checkLog(t *testing.T, l *seqLog, model map[uint64]*entry) {
	t.Helper()
	require.Equal(t, len(model), l.Len())
	want := slices.Sorted(maps.Keys(model))
	var got []uint64
	for seq, e := range l.After(0) {
		require.Same(t, model[seq], e, "entry of seq %d", seq)
		got = append(got, seq)
	}
	require.Equal(t, len(want), len(got))
	require.Equal(t, want, append([]uint64(nil), got...))
	require.LessOrEqual(t, len(l.slots)-l.live, l.live+compactSlack, "tombstones unbounded")
	for i := l.head + 1; i < len(l.slots); i++ {
		require.Less(t, l.slots[i-1].seq, l.slots[i].seq, "slots not sorted at %d", i)
	}
}

func newEntry(seq uint64) *entry {
	return &entry{msg: persistence.Message{Seq: seq}}
}

func TestSeqLogRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l seqLog
	model := map[uint64]*entry{}
	next := uint64(1)
	for i := range 20000 {
		switch r := rng.IntN(10); {
		case r < 4: // append at the tail
			e := newEntry(next)
			l.Put(next, e)
			model[next] = e
			next++
		case r < 5: // insert somewhere before the tail, if that seq is free
			seq := rng.Uint64N(next + 1)
			if seq == 0 || model[seq] != nil {
				continue
			}
			require.Nil(t, l.Get(seq))
			e := newEntry(seq)
			l.Put(seq, e)
			model[seq] = e
			next = max(next, seq+1)
		case r < 7: // remove near the head
			keys := slices.Sorted(maps.Keys(model))
			if len(keys) == 0 {
				continue
			}
			seq := keys[rng.IntN(min(3, len(keys)))]
			require.Same(t, model[seq], l.Remove(seq))
			delete(model, seq)
		default: // remove anywhere, maybe something absent
			seq := rng.Uint64N(next + 2)
			require.Same(t, model[seq], l.Remove(seq))
			delete(model, seq)
		}
		if i%97 == 0 {
			checkLog(t, &l, model)
			after := rng.Uint64N(next + 1)
			var got []uint64
			for seq := range l.After(after) {
				got = append(got, seq)
			}
			var want []uint64
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
	var l seqLog
	for seq := uint64(1); seq <= 100_000; seq++ {
		l.Put(seq, newEntry(seq))
		if seq > 10 {
			require.NotNil(t, l.Remove(seq-10))
		}
	}
	require.Equal(t, 10, l.Len())
	require.LessOrEqual(t, cap(l.slots), 4*(10+compactSlack), "consumed slots are not reclaimed")
	for seq := uint64(99_991); seq <= 100_000; seq++ {
		require.NotNil(t, l.Remove(seq))
	}
	require.Zero(t, l.Len())
	require.Empty(t, l.slots)
}

func TestSeqLogAfterMax(t *testing.T) {
	var l seqLog
	l.Put(math.MaxInt64, newEntry(math.MaxInt64))
	for range l.After(math.MaxUint64) {
		t.Fatal("After(MaxUint64) yielded an entry")
	}
	n := 0
	for range l.After(math.MaxInt64 - 1) {
		n++
	}
	require.Equal(t, 1, n)
}
