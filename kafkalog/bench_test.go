package kafkalog

import (
	"io"
	"log/slog"
	"testing"

	"github.com/activemq-go/broker/internal/vfs"
)

// benchLog opens a log on the real disk in a temp dir.
func benchLog(b *testing.B, policy FlushPolicy) *Log {
	b.Helper()
	l, err := Open(Options{FS: vfs.OS, Dir: b.TempDir(), Flush: policy, RetentionCheckInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.CreateTopic("t", 1); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func benchAppend(b *testing.B, policy FlushPolicy, size, batch int) {
	l := benchLog(b, policy)
	recs := make([]Record, batch)
	val := make([]byte, size)
	for i := range recs {
		recs[i] = Record{Timestamp: 1, Value: val}
	}
	b.ReportAllocs()
	b.SetBytes(int64(size * batch))
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Append("t", 0, recs); err != nil {
			b.Fatal(err)
		}
	}
	if policy == FlushOS {
		if err := l.Flush(); err != nil { // count the write-back too
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkAppend100BBatch1000FlushOS(b *testing.B)    { benchAppend(b, FlushOS, 100, 1000) }
func BenchmarkAppend100BBatch1000FlushBatch(b *testing.B) { benchAppend(b, FlushBatch, 100, 1000) }
func BenchmarkAppend4KiBBatch256FlushOS(b *testing.B)     { benchAppend(b, FlushOS, 4096, 256) }
func BenchmarkAppend4KiBBatch256FlushBatch(b *testing.B)  { benchAppend(b, FlushBatch, 4096, 256) }

func BenchmarkRead100B(b *testing.B) {
	l := benchLog(b, FlushOS)
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{Timestamp: 1, Value: make([]byte, 100)}
	}
	const batches = 200
	for range batches {
		if _, err := l.Append("t", 0, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	var off int64
	for b.Loop() {
		got, err := l.Read("t", 0, off, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		n += int64(len(got))
		off += int64(len(got))
		if off >= batches*1000 {
			off = 0
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkAppendReadTail is a stream's steady state: batches of ten records with five
// headers (a broker message) are appended, and a reader at the tail reads each one.
func BenchmarkAppendReadTail(b *testing.B) {
	l := benchLog(b, FlushOS)
	const batch = 10
	recs := make([]Record, batch)
	for i := range recs {
		recs[i] = Record{Timestamp: 1, Value: make([]byte, 256), Headers: [][2]string{
			{"amq", "1;4;0;0;ID:localhost-1700000000000-123456"},
			{"bench-run", "r-8f14e45fceea167a"},
			{"bench-p", "0"},
			{"bench-seq", "123456"},
			{"bench-ts", "1700000000123456789"},
		}}
	}
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		if _, err := l.Append("t", 0, recs); err != nil {
			b.Fatal(err)
		}
		got, err := l.Read("t", 0, off, 1<<20)
		if err != nil || len(got) != batch || len(got[batch-1].Headers) != 5 {
			b.Fatalf("%d records, error %v", len(got), err)
		}
		off += int64(len(got))
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}

// benchAppendPipelined is benchAppend with two appenders on the partition, as a producer
// with two requests in flight: one encodes and writes its batch while the other's fsync
// runs, and with FlushBatch their syncs are shared (group commit).
func benchAppendPipelined(b *testing.B, policy FlushPolicy, size, batch int) {
	l := benchLog(b, policy)
	val := make([]byte, size)
	b.ReportAllocs()
	b.SetBytes(int64(size * batch))
	b.SetParallelism(1) // GOMAXPROCS appenders: two on this project's machines
	b.RunParallel(func(pb *testing.PB) {
		recs := make([]Record, batch)
		for i := range recs {
			recs[i] = Record{Timestamp: 1, Value: val}
		}
		for pb.Next() {
			if _, err := l.Append("t", 0, recs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if policy == FlushOS {
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkAppend4KiBBatch256FlushBatchPipelined(b *testing.B) {
	benchAppendPipelined(b, FlushBatch, 4096, 256)
}
func BenchmarkAppend4KiBBatch256FlushOSPipelined(b *testing.B) {
	benchAppendPipelined(b, FlushOS, 4096, 256)
}
