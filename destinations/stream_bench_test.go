package destinations

import (
	"testing"

	"github.com/activemq-go/broker/persistence/storetest"
)

func benchStream() *Stream {
	return &Stream{t: &TopicDest{dest: "topic://s.bench", client: "/topic/s.bench"}, logTopic: "s.bench", nparts: 8}
}

// BenchmarkStreamRecordEncode is the work of making records out of messages, per
// message: the SEND queues it (newAppendReq), the appender builds a batch of ten.
func BenchmarkStreamRecordEncode(b *testing.B) {
	m := storetest.BenchMessage()
	const batch = 10
	reqs := make([]appendReq, 0, batch)
	var rb recordBuilder
	b.ReportAllocs()
	for b.Loop() {
		reqs = append(reqs, newAppendReq(m, "", nil))
		if len(reqs) == batch {
			recs := rb.build(reqs, 1_700_000_000_000)
			if len(recs) != batch || len(recs[0].Headers) != 5 {
				b.Fatal(recs)
			}
			rb.reset()
			reqs = reqs[:0]
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkStreamRecordDecode(b *testing.B) {
	st := benchStream()
	m := storetest.BenchMessage()
	r := encodeRecord(m, "", m.Timestamp+3)
	r.Offset = 42
	b.ReportAllocs()
	for b.Loop() {
		m := st.decodeRecord(&r, 3)
		if m.Priority != 4 || len(m.Headers) != 8 {
			b.Fatal(m)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkStreamAutoAckWritten is the per-message work after a group member's MESSAGE
// was written with ack:auto: the tracker and the group position move.
func BenchmarkStreamAutoAckWritten(b *testing.B) {
	st := benchStream()
	st.streams = &Streams{committer: &committer{pending: map[groupPartition]int64{}, wake: make(chan struct{}, 1)}}
	ss := &StreamReader{st: st, group: &groupState{name: "G", pos: map[int]int64{}}}
	tr := newPartTracker(0)
	d := &Delivery{Stream: true, StreamPartition: 3, track: tr}
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		tr.add(off)
		d.StreamOffset = off
		ss.written(d, true)
		off++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
