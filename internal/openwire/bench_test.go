package openwire

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchMessage is a persistent 256-byte TextMessage with 3 properties, as a producer sends it.
func benchMessage(b *testing.B) *Message {
	m := &Message{
		BaseCommand: BaseCommand{CommandID: 7, ResponseRequired: true},
		Type:        TypeTextMessage,
		ProducerID:  prodID(),
		Destination: queue(),
		MessageID:   msgID(42),
		Persistent:  true,
		Priority:    4,
		Timestamp:   1690000000000,
	}
	m.SetText(strings.Repeat("x", 256-4), false) // 256 bytes of content with the length
	require.NoError(b, m.SetProperties(map[string]any{"color": "red", "count": int32(3), "urgent": true}))
	return m
}

var benchFormats = []struct {
	name string
	f    Format
}{
	{"tight+cache", Format{Version: Version, TightEncoding: true, Cache: true, CacheSize: 1024}},
	{"loose", Format{Version: Version}},
}

// repeat yields its bytes over and over.
type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}

func BenchmarkRead(b *testing.B) {
	for _, bf := range benchFormats {
		var buf bytes.Buffer
		w := NewWriter(&buf, bf.f)
		require.NoError(b, w.Write(benchMessage(b)))
		first := buf.Len()
		require.NoError(b, w.Write(benchMessage(b))) // with the cache: ids as slot references
		steady := bytes.Clone(buf.Bytes()[first:])
		for _, body := range []bool{false, true} {
			name := bf.name + "/frame"
			if body {
				name = bf.name + "/frame+text+properties"
			}
			b.Run(name, func(b *testing.B) {
				r := NewReader(io.MultiReader(bytes.NewReader(buf.Bytes()[:first]), &repeat{b: steady}), bf.f)
				_, err := r.Read()
				require.NoError(b, err)
				b.ReportAllocs()
				b.SetBytes(int64(len(steady)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c, err := r.Read()
					if err != nil {
						b.Fatal(err)
					}
					if body {
						m := c.(*Message)
						if _, _, err := m.Text(); err != nil {
							b.Fatal(err)
						}
						if _, err := m.Properties(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, bf := range benchFormats {
		b.Run(bf.name, func(b *testing.B) {
			m := benchMessage(b)
			w := NewWriter(io.Discard, bf.f)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := w.Write(m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
