package kafkalog

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBatchRoundTrip(t *testing.T) {
	recs := []Record{
		{Timestamp: 5, Key: nil, Value: []byte{}},
		{Timestamp: 3, Key: []byte("k"), Value: nil, Headers: [][2]string{{"a", ""}, {"", "b"}}},
		{Value: []byte("now")},
	}
	b, h := appendBatch(nil, 77, recs, 9)
	require.Equal(t, int64(9), h.MaxTimestamp)
	got, h2, err := decodeBatch(nil, b, 1<<20)
	require.NoError(t, err)
	require.Equal(t, h, h2)
	require.Len(t, got, 3)
	require.Nil(t, got[0].Key)
	require.NotNil(t, got[0].Value)
	require.Nil(t, got[1].Value)
	require.Equal(t, int64(3), got[1].Timestamp)
	require.Equal(t, int64(9), got[2].Timestamp)
	require.Equal(t, int64(79), got[2].Offset)
	require.Equal(t, recs[1].Headers, got[1].Headers)
	for i := range b { // any flipped bit is caught
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		_, _, err := decodeBatch(nil, c, 1<<20)
		if i >= bhLength { // the base offset is outside the CRC by design
			require.ErrorIs(t, err, ErrCorrupt, "byte %d", i)
		}
	}
	_, _, err = decodeBatch(nil, b[:len(b)-1], 1<<20)
	require.ErrorIs(t, err, ErrCorrupt)
}

// FuzzBatchDecode feeds arbitrary bytes, split into a header chunk and the rest, to the
// batch decoder: it must never panic, and whatever it accepts must re-encode to a batch
// that decodes to the same records.
func FuzzBatchDecode(f *testing.F) {
	b, _ := appendBatch(nil, 3, []Record{rec(1), rec(2), {Key: []byte{}, Value: nil}}, 1)
	f.Add(b, uint8(43))
	f.Add(b[:50], uint8(10))
	f.Add([]byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		// header chunk first, as the scanner reads it
		if _, err := parseBatchHeader(data[:min(int(split), len(data))], 1<<20); err != nil {
			_ = err
		}
		recs, h, err := decodeBatch(nil, data, 1<<20)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.Len(t, recs, int(h.Count))
		in := make([]Record, len(recs))
		for i, r := range recs {
			in[i] = r
			if in[i].Timestamp == 0 {
				in[i].Timestamp = h.FirstTimestamp
			}
		}
		enc, _ := appendBatch(nil, h.BaseOffset, in, h.FirstTimestamp)
		again, _, err := decodeBatch(nil, enc, 1<<30)
		require.NoError(t, err)
		require.Equal(t, recs, again)
	})
}

// The records of a batch share header storage: each keeps its own headers, whatever the
// counts (more headers than the first record's guess, none), and appending to one
// record's headers does not overwrite the next record's.
func TestBatchHeadersShared(t *testing.T) {
	recs := []Record{
		{Value: []byte("a"), Headers: [][2]string{{"h1", "v1"}}},
		{Value: []byte("b"), Headers: [][2]string{{"h2", "v2"}, {"h3", "v:3"}, {"", ""}}},
		{Value: []byte("c")},
		{Value: []byte("d"), Headers: [][2]string{{"h4", "v4"}}},
		{Value: []byte("e"), Headers: [][2]string{{"h5", "v5"}, {"h6", "v6"}}},
	}
	b, _ := appendBatch(nil, 0, recs, 1)
	got, _, err := decodeBatch(nil, b, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, len(recs))
	for i := range recs {
		require.Equal(t, recs[i].Headers, got[i].Headers, "record %d", i)
	}
	got[0].Headers = append(got[0].Headers, [2]string{"x", "y"})
	require.Equal(t, recs[1].Headers, got[1].Headers)
	require.Equal(t, recs[3].Headers, got[3].Headers)
}
