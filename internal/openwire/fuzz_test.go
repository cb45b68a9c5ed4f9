package openwire

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fuzzFormats are the formats FuzzRead decodes with; the first input byte picks one.
var fuzzFormats = func() []Format {
	var l []Format
	for _, cfg := range []testConfig{
		{12, true, true, true}, {12, true, false, false}, {12, false, true, false}, {12, false, false, true},
		{9, true, true, true}, {6, false, false, true},
	} {
		l = append(l, cfg.format())
	}
	noPrefix := testConfig{12, true, false, true}.format()
	noPrefix.SizePrefixDisabled = true
	noPrefix.MaxFrameSize = 1 << 16
	l = append(l, noPrefix)
	for i := range l {
		if l[i].MaxFrameSize == 0 {
			l[i].MaxFrameSize = 1 << 20
		}
	}
	return l
}()

// readAll decodes commands until the first error; it returns each command re-encoded
// (with a fresh cache-less writer, so that the result does not depend on pointer identity)
// and the error.
func readAll(r io.Reader, f Format) ([][]byte, error) {
	rd := NewReader(r, f)
	plain := f
	plain.Cache = false
	plain.SizePrefixDisabled = false
	plain.MaxFrameSize = 0
	var out [][]byte
	for {
		c, err := rd.Read()
		if err != nil {
			return out, err
		}
		frame, err := NewWriter(io.Discard, plain).Encode(c)
		if err != nil {
			out = append(out, []byte("encode error: "+err.Error()))
			continue
		}
		out = append(out, bytes.Clone(frame))
	}
}

// FuzzRead decodes arbitrary bytes. It must not panic; reading one byte at a time must give
// the same commands and the same error as reading at once; and a decoded command that
// re-encodes must decode again to the same bytes (encoding is a fixed point).
func FuzzRead(f *testing.F) {
	for i, ff := range fuzzFormats {
		var buf bytes.Buffer
		w := NewWriter(&buf, ff)
		for _, c := range corpus() {
			require.NoError(f, w.Write(c))
			f.Add(append([]byte{byte(i)}, buf.Bytes()...))
			buf.Reset()
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		ff := fuzzFormats[int(data[0])%len(fuzzFormats)]
		whole, errWhole := readAll(bytes.NewReader(data[1:]), ff)
		split, errSplit := readAll(iotest.OneByteReader(bytes.NewReader(data[1:])), ff)
		require.Equal(t, whole, split, "one byte at a time decodes differently")
		require.Equal(t, errWhole == nil, errSplit == nil)
		if errWhole != nil && errSplit != nil {
			// Truncation looks the same both ways; anything else says the same.
			require.Equal(t, errWhole.Error(), errSplit.Error())
		}
		plain := ff
		plain.Cache, plain.SizePrefixDisabled, plain.MaxFrameSize = false, false, 0
		for _, frame := range whole {
			if bytes.HasPrefix(frame, []byte("encode error: ")) {
				continue
			}
			c, err := NewReader(bytes.NewReader(frame), plain).Read()
			require.NoError(t, err, "a frame the Writer made does not decode")
			again, err := NewWriter(io.Discard, plain).Encode(c)
			require.NoError(t, err)
			require.Equal(t, frame, again, "re-encoding changed the frame")
		}
	})
}

// TestRoundTrip writes every command and reads it back, in every test configuration and
// without a size prefix, whole and one byte at a time.
func TestRoundTrip(t *testing.T) {
	for _, cfg := range testConfigs() {
		for _, noPrefix := range []bool{false, true} {
			f := cfg.format()
			f.SizePrefixDisabled = noPrefix
			name := cfg.String()
			if noPrefix {
				name += "-noprefix"
			}
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				w := NewWriter(&buf, f)
				for _, c := range corpus() {
					require.NoError(t, w.Write(c))
				}
				for _, r := range []io.Reader{bytes.NewReader(buf.Bytes()), iotest.OneByteReader(bytes.NewReader(buf.Bytes()))} {
					rd := NewReader(r, f)
					for i, want := range corpus() {
						got, err := rd.Read()
						require.NoError(t, err, "command %d", i)
						assert.Equal(t, normalize(t, want, cfg), normalize(t, got, cfg), "command %d", i)
					}
					_, err := rd.Read()
					assert.ErrorIs(t, err, io.EOF)
				}
			})
		}
	}
}
