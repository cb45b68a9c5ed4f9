package kafkalog

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
)

// Reads at the tail come from memory: they return what the file holds, in memory of
// their own, from every offset and with every budget, also when a frame was too large to be held, when frames
// were dropped to stay within tailBytes, and after a roll.
func TestTailReadsMatchFile(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	o.SegmentBytes = 3 * tailBytes
	o.IndexIntervalBytes = 4096
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 1))
	var want []Record
	sizes := []int{1, 3, 1, 2, 200, 1, 1, 5, 1, 40, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1} // more than tailBatches
	for _, n := range slices.Concat(sizes, sizes) {
		var recs []Record
		for j := range n {
			r := rec(len(want) + j)
			switch {
			case n == 200 && j == 0:
				r.Value = bytes.Repeat([]byte("x"), tailBytes) // a frame too large to hold
			case n == 5:
				r.Value = bytes.Repeat([]byte{byte(j)}, 30000)
			case n == 40:
				r.Value = bytes.Repeat([]byte{byte(j)}, 4000) // older frames are dropped for it
			}
			recs = append(recs, r)
		}
		_, err := l.Append("t", 0, recs)
		require.NoError(t, err)
		prev := int64(len(want))
		want = append(want, recs...)
		next := int64(len(want))
		// from around the start and the end of the batch just appended
		for from := max(prev-3, 0); from < next; from++ {
			if from == prev+3 && from < next-3 {
				from = next - 3
			}
			for _, budget := range []int{1, 1 << 20} {
				got, err := l.Read("t", 0, from, budget)
				require.NoError(t, err)
				require.NotEmpty(t, got)
				for i, r := range got {
					w := want[from+int64(i)]
					require.Equal(t, from+int64(i), r.Offset)
					require.True(t, bytes.Equal(w.Value, r.Value), "value of offset %d", r.Offset)
					require.Equal(t, w.Headers, r.Headers)
				}
				// Returned records own their memory: scribbling on them changes no
				// later read.
				for _, r := range got {
					for i := range r.Value {
						r.Value[i] ^= 0xff
					}
				}
			}
		}
	}
	require.NoError(t, l.Close())
	// The file holds the same: read again after reopening, from the file alone.
	l = openT(t, o)
	defer l.Close()
	got := readAll(t, l, "t", 0, 0)
	require.Len(t, got, len(want))
	for i := range got {
		require.Equal(t, want[i].Value, got[i].Value)
	}
	st, err := l.Stats("t", 0)
	require.NoError(t, err)
	require.Greater(t, st.Segments, 1, "the test should cross a roll")
}
