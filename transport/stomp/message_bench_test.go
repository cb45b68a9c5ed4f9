package stomp

import (
	"bytes"
	"io"
	"testing"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/stompcodec"
	"github.com/activemq-go/broker/persistence/storetest"
)

// BenchmarkWriteStreamMessage encodes the MESSAGE of a stream delivery as the session
// does: the broker's headers, x-stream-*, four application headers, a 256-byte body.
func BenchmarkWriteStreamMessage(b *testing.B) {
	s := &session{w: stompcodec.NewWriter(io.Discard, 0)}
	s.w.SetVersion(stompcodec.V12)
	d := &broker.Delivery{
		Sub:         &destinations.Consumer{ID: "sub-0", Mode: destinations.AckAuto},
		Msg:         storetest.BenchMessage(),
		Destination: "/topic/s.bench", DeliveryCount: 1,
		Stream: true, StreamPartition: 3, StreamOffset: 1234567,
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.writeMessage(d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkMessageFromSend builds the stored message of a bench SEND.
func BenchmarkMessageFromSend(b *testing.B) {
	r := stompcodec.NewReader(bytes.NewReader([]byte("SEND\ndestination:/topic/s.bench\ncontent-length:3\n"+
		"bench-run:r-8f14e45fceea167a\nbench-p:0\nbench-seq:123456\nbench-ts:1700000000123456789\n\nabc\x00")), stompcodec.Limits{})
	f, err := r.Read()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := messageFromSend(f)
		if err != nil || len(m.Headers) != 8 {
			b.Fatal(m, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
