package loadtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testRun builds the shared state of a run without connections.
func testRun(t testing.TB, o Options) *run {
	t.Helper()
	o.Addr = "127.0.0.1:1"
	o = o.withDefaults(time.Now())
	require.NoError(t, o.validate())
	r, err := newRun(o)
	require.NoError(t, err)
	return r
}

func benchHeader(run string, p, seq int, ts int64) *frame.Header {
	return frame.NewHeader(
		"destination", "/queue/x",
		"message-id", "ID:1",
		"subscription", "0",
		hdrRun, run,
		hdrP, strconv.Itoa(p),
		hdrSeq, strconv.Itoa(seq),
		hdrTS, strconv.FormatInt(ts, 10),
	)
}

func TestConsumerAccounting(t *testing.T) {
	r := testRun(t, Options{Producers: 2, Consumers: 1, Messages: 10})
	k := newConsumer(r, 0, nil, nil, newTracker(r.counts))
	now := time.Now().UnixNano()
	deliver := func(p, seq int) { k.handle(benchHeader(r.id, p, seq, now-int64(time.Millisecond)), now) }

	deliver(0, 0)
	deliver(1, 0)
	deliver(0, 2)
	deliver(0, 1) // backwards within producer 0
	deliver(0, 2) // duplicate, not also out of order
	deliver(1, 1)

	assert.Equal(t, int64(6), k.received.Load())
	assert.Equal(t, int64(1), k.duplicated)
	assert.Equal(t, int64(1), k.outOfOrder)
	assert.Equal(t, int64(5), r.unique.Load())
	assert.Equal(t, int64(5), k.seen.count())
	assert.Equal(t, now, k.lastRecv.Load())
	assert.Equal(t, uint64(6), k.hist.n)
	assert.InEpsilon(t, float64(time.Millisecond), float64(k.hist.quantile(0.5)), 1.0/64)
}

func TestConsumerCountsForeign(t *testing.T) {
	r := testRun(t, Options{Producers: 2, Consumers: 1, Messages: 10}) // 5 each
	k := newConsumer(r, 0, nil, nil, newTracker(r.counts))
	now := time.Now().UnixNano()
	foreign := []*frame.Header{
		frame.NewHeader("destination", "/queue/x"), // not a bench message
		benchHeader("another-run", 0, 0, now),
		benchHeader(r.id, 2, 0, now),  // no such producer
		benchHeader(r.id, -1, 0, now), // no such producer
		benchHeader(r.id, 0, 5, now),  // beyond its share
		frame.NewHeader(hdrRun, r.id, hdrP, "0", hdrSeq, "1", hdrTS, "soon"),
	}
	for _, h := range foreign {
		k.handle(h, now)
	}
	assert.Equal(t, int64(len(foreign)), k.foreign)
	assert.Zero(t, k.received.Load())
	assert.Zero(t, r.unique.Load())
}

// TestQueueConsumersShareTracker: two consumers of a queue see the same
// message, which is one duplicate.
func TestQueueConsumersShareTracker(t *testing.T) {
	r := testRun(t, Options{Producers: 1, Consumers: 2, Messages: 3})
	seen := newTracker(r.counts)
	a := newConsumer(r, 0, nil, nil, seen)
	b := newConsumer(r, 1, nil, nil, seen)
	now := time.Now().UnixNano()
	a.handle(benchHeader(r.id, 0, 1, now), now)
	b.handle(benchHeader(r.id, 0, 1, now), now)
	b.handle(benchHeader(r.id, 0, 0, now), now)
	assert.Equal(t, int64(1), a.duplicated+b.duplicated)
	assert.Equal(t, int64(2), seen.count())
	assert.False(t, a.checkOrder, "no order across several queue consumers")
}

func TestRunCompletesAtTarget(t *testing.T) {
	r := testRun(t, Options{Producers: 1, Consumers: 1, Messages: 2})
	r.producers = []*producer{{}}
	r.delivered()
	r.producers[0].sent.Store(2)
	r.expect()
	select {
	case <-r.done:
		t.Fatal("complete after 1 of 2")
	default:
	}
	r.delivered()
	select {
	case <-r.done:
	default:
		t.Fatal("not complete after 2 of 2")
	}
}

func TestTrackerBitsPerProducer(t *testing.T) {
	tr := newTracker([]int{64, 65, 1})
	for seq := range 64 {
		assert.False(t, tr.mark(0, seq))
	}
	assert.False(t, tr.mark(1, 64))
	assert.False(t, tr.mark(2, 0))
	assert.True(t, tr.mark(1, 64))
	assert.Equal(t, int64(66), tr.count())
}

func BenchmarkConsumerHandle(b *testing.B) {
	r := testRun(b, Options{Producers: 1, Consumers: 1, Messages: 1 << 20})
	k := newConsumer(r, 0, nil, nil, newTracker(r.counts))
	now := time.Now().UnixNano()
	headers := make([]*frame.Header, 1024)
	for i := range headers {
		headers[i] = benchHeader(r.id, 0, i, now)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k.handle(headers[i%len(headers)], now)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
