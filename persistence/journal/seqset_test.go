package journal

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeqSetRandom runs random puts, removes and scans against a seqLog, with seqs
// mostly appended at the top and removed near the bottom (a pending set), jumps that
// go to the log, and puts below the bitmap.
func TestSeqSetRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 5))
		var s seqSet
		var m seqLog[struct{}]
		next := uint64(1 + rng.IntN(1000))
		members := func() []uint64 {
			var out []uint64
			m.After(0, func(seq uint64, _ *struct{}) bool { out = append(out, seq); return true })
			return out
		}
		for step := range 3000 {
			switch r := rng.IntN(100); {
			case r < 50:
				next += 1 + uint64(rng.IntN(3))
				if rng.IntN(50) == 0 {
					next += uint64(rng.IntN(3 * seqSetGap))
				}
				if !m.Contains(next) {
					s.Put(next)
					m.Put(next, struct{}{})
				}
			case r < 55:
				seq := 1 + uint64(rng.IntN(int(next)+100))
				if !m.Contains(seq) {
					s.Put(seq)
					m.Put(seq, struct{}{})
				}
			case r < 90:
				all := members()
				seq := uint64(rng.IntN(int(next) + 10))
				if len(all) > 0 && rng.IntN(4) > 0 {
					seq = all[rng.IntN(min(len(all), 8))]
				}
				_, want := m.Remove(seq)
				require.Equal(t, want, s.Remove(seq), "remove %d", seq)
			case r < 91:
				s.Reset()
				m.Reset()
			default:
				all := members()
				after := uint64(0)
				if len(all) > 0 {
					after = all[rng.IntN(len(all))] - uint64(rng.IntN(2))
				}
				var got, want []uint64
				s.After(after, func(seq uint64) bool { got = append(got, seq); return len(got) < 50 })
				m.After(after, func(seq uint64, _ *struct{}) bool { want = append(want, seq); return len(want) < 50 })
				require.Equal(t, want, got, "step %d: after %d", step, after)
			}
			require.Equal(t, m.Len(), s.Len(), "step %d", step)
			if step%97 == 0 {
				var got []uint64
				s.After(0, func(seq uint64) bool { got = append(got, seq); return true })
				require.Equal(t, members(), got, "step %d", step)
				for _, seq := range got {
					require.True(t, s.Contains(seq))
				}
				c := s.clone()
				var cg []uint64
				c.After(0, func(seq uint64) bool { cg = append(cg, seq); return true })
				require.Equal(t, got, cg)
			}
		}
	}
}
