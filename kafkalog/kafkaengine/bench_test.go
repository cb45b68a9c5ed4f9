package kafkaengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// benchEngine is an engine on a fresh three-broker kfake with topic "b" of one partition.
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(b, err)
	b.Cleanup(c.Close)
	e, err := Open(Options{SeedBrokers: c.ListenAddrs()})
	require.NoError(b, err)
	b.Cleanup(func() { _ = e.Close() })
	require.NoError(b, e.CreateTopicWith("b", 1, streamlog.TopicConfig{}))
	return e
}

// BenchmarkAppend is the stream append path on Kafka: batches of 1 and 100 records of
// 256 bytes, acks=all, through kfake (plumbing cost, not Kafka's speed).
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(map[int]string{1: "batch1", 100: "batch100"}[n], func(b *testing.B) {
			e := benchEngine(b)
			recs := make([]streamlog.Record, n)
			for i := range recs {
				recs[i] = streamlog.Record{Key: []byte("key"), Value: make([]byte, 256), Headers: [][2]string{{"h", "v"}}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if _, err := e.Append("b", 0, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkRead reads 100-record batches back from offset 0.
func BenchmarkRead(b *testing.B) {
	e := benchEngine(b)
	recs := make([]streamlog.Record, 100)
	for i := range recs {
		recs[i] = streamlog.Record{Value: make([]byte, 256)}
	}
	_, err := e.Append("b", 0, recs)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		got, err := e.Read("b", 0, 0, 1<<20)
		if err != nil || len(got) != len(recs) {
			b.Fatalf("read %d records: %v", len(got), err)
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/time.Since(start).Seconds(), "msgs/s")
}
