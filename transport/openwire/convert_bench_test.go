package openwire

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// The hot paths of a message through the transport, as the load of docs/benchmarks.md
// (issue 23) drives them: a producer's 256-byte BytesMessage with two int properties
// (and a TextMessage of as many ASCII characters), read off the wire and turned into the
// broker's message (toMessage), and a delivery of it turned back (fromMessage) and
// encoded as a MessageDispatch.

const benchConn = "ID:bench-host-40291-1700000000000-1:1"

// benchKinds are the message kinds benchmarked.
var benchKinds = []string{"bytes", "text"}

// benchWire is the message as the client sends it: a BytesMessage, or a TextMessage if
// kind is "text".
func benchWire(tb testing.TB, kind ...string) *ow.Message {
	prod := &ow.ProducerID{ConnectionID: benchConn, SessionID: 1, Value: 1}
	m := &ow.Message{
		BaseCommand: ow.BaseCommand{CommandID: 9, ResponseRequired: true},
		Type:        ow.TypeBytesMessage,
		ProducerID:  prod,
		Destination: &ow.Destination{Type: ow.TypeQueue, Name: "BENCH.q"},
		MessageID:   &ow.MessageID{ProducerID: prod, ProducerSequenceID: 42},
		Persistent:  true, Priority: 4, Timestamp: 1700000000000,
	}
	m.SetBody(make([]byte, 256), false)
	if len(kind) > 0 && kind[0] == "text" {
		m.Type = ow.TypeTextMessage
		m.SetText(strings.Repeat("x", 256), false)
	}
	require.NoError(tb, m.SetProperties(map[string]any{"p": int32(1), "seq": int32(42)}))
	return m
}

// benchFrames is the message framed as the client sends it twice (tight encoding, the
// cache): the steady frame, the second, refers to the cached ids.
func benchFrames(tb testing.TB, f ow.Format, kind string) (first, steady []byte) {
	var buf bytes.Buffer
	w := ow.NewWriter(&buf, f)
	require.NoError(tb, w.Write(benchWire(tb, kind)))
	n := buf.Len()
	require.NoError(tb, w.Write(benchWire(tb, kind)))
	return bytes.Clone(buf.Bytes()[:n]), bytes.Clone(buf.Bytes()[n:])
}

var benchFormat = ow.Format{Version: ow.Version, TightEncoding: true, Cache: true, CacheSize: 1024}

// BenchmarkToMessage: a received message (decoded from its frame) to the broker's.
func BenchmarkToMessage(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			first, steady := benchFrames(b, benchFormat, kind)
			r := ow.NewReader(io.MultiReader(bytes.NewReader(first), &repeatReader{b: steady}), benchFormat)
			_, err := r.Read()
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				cmd, err := r.Read()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := toMessage(cmd.(*ow.Message)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchStored is the broker's message of benchWire, as a consumer is given it.
func benchStored(tb testing.TB, kind ...string) *broker.Message {
	m, err := toMessage(benchWire(tb, kind...))
	require.NoError(tb, err)
	m.Timestamp = 1700000000001
	return m
}

// BenchmarkFromMessage: a delivered message to the client's form.
func BenchmarkFromMessage(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			m := benchStored(b, kind)
			c := &conn{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fromMessage(m, "/queue/BENCH.q"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDispatchEncode: a delivery to its consumer, converted and encoded as the
// MessageDispatch frame the client reads (into the connection's buffer).
func BenchmarkDispatchEncode(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			m := benchStored(b, kind)
			c := &conn{w: ow.NewWriter(io.Discard, benchFormat)}
			cid := &ow.ConsumerID{ConnectionID: benchConn, SessionID: 1, Value: 1}
			b.ReportAllocs()
			for b.Loop() {
				wm, err := c.fromMessage(m, "/queue/BENCH.q")
				if err != nil {
					b.Fatal(err)
				}
				c.md = ow.MessageDispatch{ConsumerID: cid, Destination: wm.Destination, Message: wm} // as dispatch does
				if err := c.w.Write(&c.md); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// repeatReader yields its bytes over and over.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}
