package journal

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLenTableRandom adds seqs with gaps, runs of equal lengths, varied body lengths
// (across the uvarint prefix's 1-2 and 2-3 byte limits) and overheads to a table,
// trimming its head now and then, and checks every lookup (alone, and in order with
// one reader), its walk, and that a table rebuilt by walk's tail goes on as the original.
func TestLenTableRandom(t *testing.T) {
	for seed := range 20 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 16))
			var tb lenTable
			type lens struct{ n, body uint32 }
			want := map[uint64]lens{}
			var order []uint64
			seq, head := uint64(1+rng.IntN(200)), 0
			body, over := uint32(100), uint32(40)
			for range 3000 {
				switch r := rng.IntN(100); {
				case r < 5:
					seq += uint64(1 + rng.IntN(300)) // a gap
				case r < 8:
					over = uint32(rng.IntN(200))
				case r < 40:
					body = uint32([]int{rng.IntN(300), 16380 + rng.IntN(10), 1 << 20}[rng.IntN(3)])
				}
				n := body + over + uint32(uvarintLen(body))
				if rng.IntN(50) == 0 {
					n = body // no overhead at all (negative by this table's count)
				}
				tb.add(seq, n, body)
				want[seq] = lens{n, body}
				order = append(order, seq)
				seq++
				if rng.IntN(40) == 0 { // the head acknowledged
					head = min(len(order)-1, head+rng.IntN(200))
					tb.trim(order[head] &^ 63)
				}
			}
			var r lenReader
			for _, s := range order[head:] {
				n, b := tb.get(s)
				require.Equal(t, want[s], lens{n, b}, "seq %d", s)
				n, b = r.get(&tb, s)
				require.Equal(t, want[s], lens{n, b}, "seq %d in order", s)
			}
			for range 200 { // random order, one reader
				s := order[head+rng.IntN(len(order)-head)]
				n, b := r.get(&tb, s)
				require.Equal(t, want[s], lens{n, b}, "seq %d", s)
			}
			c := tb.clone()
			c.tail = lenTail{}
			got := map[uint64]lens{}
			require.True(t, c.walk(func(from, to uint64, n, body uint32) {
				for s := from; s < to; s++ {
					got[s] = lens{n, body}
				}
			}))
			require.Equal(t, tb.tail, c.tail, "the tail rebuilt by walk")
			for _, s := range order[head:] {
				require.Equal(t, want[s], got[s], "seq %d walked", s)
			}
			for i := range 100 {
				tb.add(seq+uint64(i), 300, uint32(200+i%3))
				c.add(seq+uint64(i), 300, uint32(200+i%3))
			}
			require.Equal(t, tb.items, c.items)
			require.Equal(t, tb.chunks, c.chunks)
		})
	}
}

// TestLenTableSizes: equal lengths cost a few bytes a chunk, varied body lengths below
// 8192 bytes two bytes each.
func TestLenTableSizes(t *testing.T) {
	var eq, varied lenTable
	rng := rand.New(rand.NewPCG(1, 2))
	for seq := uint64(1); seq <= 64000; seq++ {
		eq.add(seq, 200, 128)
		b := uint32(64 + rng.IntN(384))
		varied.add(seq, b+40+uint32(uvarintLen(b)), b)
	}
	require.Len(t, eq.chunks, 1001)
	require.LessOrEqual(t, len(eq.items), 6*1001)
	require.LessOrEqual(t, len(varied.items), 2*64000+2*1001)
}

func BenchmarkLenTableGet(b *testing.B) {
	var tb lenTable
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 16
	for seq := uint64(1); seq <= n; seq++ {
		body := uint32(64 + rng.IntN(384))
		tb.add(seq, body+40, body)
	}
	b.Run("random", func(b *testing.B) {
		seqs := make([]uint64, 1024)
		for i := range seqs {
			seqs[i] = 1 + uint64(rng.IntN(n))
		}
		i := 0
		for b.Loop() {
			tb.get(seqs[i%len(seqs)])
			i++
		}
	})
	b.Run("in-order", func(b *testing.B) {
		var r lenReader
		seq := uint64(0)
		for b.Loop() {
			seq = seq%n + 1
			r.get(&tb, seq)
		}
	})
}

// TestLenTableRuns: a table holds runs while the lengths change fewer than maxLenRuns
// times, then changes to chunks holding the seqs still stored (an acknowledged seq
// needs no lengths).
func TestLenTableRuns(t *testing.T) {
	var tb lenTable
	type lens struct{ n, body uint32 }
	want := map[uint64]lens{}
	var stored []uint64
	each := func(fn func(uint64) bool) {
		for _, s := range stored {
			if !fn(s) {
				return
			}
		}
	}
	seq := uint64(100)
	for run := range maxLenRuns {
		for range 50 {
			tb.set(seq, uint32(200+run), 150, each)
			want[seq] = lens{uint32(200 + run), 150}
			if seq%3 != 0 {
				stored = append(stored, seq)
			}
			seq += 1 + seq%2
		}
	}
	require.Equal(t, maxLenRuns, tb.runs)
	require.Empty(t, tb.chunks)
	for _, s := range stored {
		n, b := tb.get(s)
		require.Equal(t, want[s], lens{n, b}, "seq %d in runs", s)
	}
	tb.set(seq, 7, 5, each)
	want[seq] = lens{7, 5}
	stored = append(stored, seq)
	require.NotEmpty(t, tb.chunks)
	require.Zero(t, tb.runs)
	var r lenReader
	for _, s := range stored {
		n, b := r.get(&tb, s)
		require.Equal(t, want[s], lens{n, b}, "seq %d in chunks", s)
	}
}
