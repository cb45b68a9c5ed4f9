package logstore

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeqIndexRandom checks seqIndex against a map under a mix shaped like the store's
// use: appends at the tail, out-of-order inserts, deletions mostly at the head, reads
// from a seq.
func TestSeqIndexRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x seqIndex[uint64]
	ref := map[uint64]uint64{}
	var tail uint64
	check := func() {
		t.Helper()
		keys := slices.Sorted(func(yield func(uint64) bool) {
			for k := range ref {
				if !yield(k) {
					return
				}
			}
		})
		require.Equal(t, len(keys), x.Len())
		after := uint64(0)
		if len(keys) > 0 && rng.IntN(2) == 0 {
			after = keys[rng.IntN(len(keys))]
		}
		var got []uint64
		x.After(after, func(seq uint64, v *uint64) bool {
			require.Equal(t, ref[seq], *v)
			got = append(got, seq)
			return true
		})
		i, _ := slices.BinarySearch(keys, after+1)
		require.True(t, slices.Equal(keys[i:], got), "after %d: got %v, want %v", after, got, keys[i:])
		require.LessOrEqual(t, len(x.slots), 2*x.Len()+compactSlack+1, "tombstones are bounded")
	}
	for i := range 20_000 {
		switch r := rng.IntN(10); {
		case r < 4:
			tail += 1 + uint64(rng.IntN(3))
			x.Put(tail, tail*7)
			ref[tail] = tail * 7
		case r < 5 && tail > 0: // out of order, or a replacement
			seq := 1 + uint64(rng.Int64N(int64(tail)))
			v := uint64(i)
			x.Put(seq, v)
			ref[seq] = v
		case r < 9: // delete, mostly the lowest
			var seq uint64
			x.After(0, func(s uint64, _ *uint64) bool { seq = s; return false })
			if rng.IntN(4) == 0 && tail > 0 {
				seq = 1 + uint64(rng.Int64N(int64(tail)))
			}
			_, had := ref[seq]
			require.Equal(t, had, x.Delete(seq))
			delete(ref, seq)
		default:
			if tail > 0 {
				seq := 1 + uint64(rng.Int64N(int64(tail)))
				v, had := ref[seq]
				p := x.Get(seq)
				require.Equal(t, had, p != nil)
				if had {
					require.Equal(t, v, *p)
				}
			}
		}
		if i%97 == 0 {
			check()
		}
	}
	check()
	x.Reset()
	require.Zero(t, x.Len())
	x.After(0, func(uint64, *uint64) bool { t.Fatal("entry after Reset"); return false })
}

func TestSeqIndexEdges(t *testing.T) {
	var x seqIndex[struct{}]
	x.Put(maxSeq, struct{}{})
	x.Put(1, struct{}{})
	n := 0
	x.After(maxSeq, func(uint64, *struct{}) bool { n++; return true })
	require.Zero(t, n, "nothing lies after the largest seq")
	x.After(maxSeq-1, func(seq uint64, _ *struct{}) bool { require.Equal(t, uint64(maxSeq), seq); n++; return true })
	require.Equal(t, 1, n)
	require.False(t, x.Delete(2))
	require.True(t, x.Delete(1))
	require.False(t, x.Delete(1))
	require.Nil(t, x.Get(1))
	x.Put(1, struct{}{}) // revives the tombstone
	require.NotNil(t, x.Get(1))
	require.Equal(t, 2, x.Len())
}

// TestPinsRandom checks the low-water tracking against counting by hand.
func TestPinsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var p pins
	ref := map[int64]int{}
	var pinned []int64 // the offsets of ref, ascending
	var off int64
	for range 20_000 {
		if rng.IntN(2) == 0 || len(pinned) == 0 {
			off += int64(rng.IntN(3)) // several pins may share a record
			p.pin(off)
			if ref[off]++; ref[off] == 1 {
				pinned = append(pinned, off)
			}
		} else {
			i := 0 // mostly the lowest, as a queue is acked
			if rng.IntN(3) == 0 {
				i = rng.IntN(len(pinned))
			}
			k := pinned[i]
			p.unpin(k)
			if ref[k]--; ref[k] == 0 {
				delete(ref, k)
				pinned = slices.Delete(pinned, i, i+1)
			}
		}
		low, ok := p.low()
		require.Equal(t, len(pinned) > 0, ok)
		if ok {
			require.Equal(t, pinned[0], low)
		}
		require.LessOrEqual(t, len(p.offs), 2*len(pinned)+compactSlack+2, "holes are bounded")
	}
	require.Panics(t, func() { p.unpin(off + 100) }, "an unpin of nothing is an index bug")
}
