package stompcodec

import (
	"bytes"
	"strings"
	"testing"
)

// repeatReader serves its buffer over and over, like a connection with an endless stream of
// identical frames.
type repeatReader struct {
	buf []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.buf[r.off:])
	r.off = (r.off + n) % len(r.buf)
	return n, nil
}

// benchSend is a typical SEND: eight headers, one of them not a well-known name, and a
// 256-byte body with content-length.
var benchSend = "SEND\n" +
	"destination:/queue/orders.eu\n" +
	"content-type:application/json\n" +
	"content-length:256\n" +
	"receipt:r-000123\n" +
	"persistent:true\n" +
	"priority:4\n" +
	"correlation-id:c-8f14e45f\n" +
	"x-tenant:acme\n" +
	"\n" + strings.Repeat("b", 256) + "\x00"

func BenchmarkFrameRead(b *testing.B) {
	src := &repeatReader{buf: bytes.Repeat([]byte(benchSend), 64)}
	r := NewReader(src, Limits{})
	r.SetVersion(V12)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchSend)))
	for b.Loop() {
		f, err := r.Read()
		if err != nil || f == nil || len(f.Body) != 256 {
			b.Fatalf("frame %v, error %v", f, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkFrameWrite(b *testing.B) {
	body := bytes.Repeat([]byte("b"), 256)
	w := NewWriter(discard{}, 0)
	w.SetVersion(V12)
	writeMessage := func() {
		_ = w.StartFrame("MESSAGE")
		_ = w.Header("destination", "/queue/orders.eu")
		_ = w.Header("message-id", "ID:broker-1-1700000000000-1:1:1:1:123")
		_ = w.Header("subscription", "sub-0")
		_ = w.Header("ack", "ID:broker-1-1700000000000-4:1")
		_ = w.Header("content-type", "application/json")
		_ = w.Header("content-length", "256")
		_ = w.Header("persistent", "true")
		_ = w.Header("priority", "4")
		if err := w.EndFrame(body); err != nil {
			b.Fatal(err)
		}
	}
	before := w.Buffered()
	writeMessage()
	b.SetBytes(int64(w.Buffered() - before))
	b.ReportAllocs()
	for b.Loop() {
		writeMessage()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
