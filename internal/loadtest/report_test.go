package loadtest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleResult() Result {
	return Result{
		Sent: 200000, Received: 200000, Expected: 200000,
		SendRate: 109290.7, RecvRate: 108108.1,
		SendElapsed: 1830 * time.Millisecond, RecvElapsed: 1850 * time.Millisecond,
		P50: 1234567 * time.Nanosecond, P90: 2 * time.Millisecond, P99: 4100 * time.Microsecond, Max: 12 * time.Millisecond,
		Elapsed: 1851 * time.Millisecond, Stop: StopComplete, Destination: "/queue/bench-1",
	}
}

func sampleOptions() Options {
	return Options{Addr: "127.0.0.1:61613", Producers: 4, Consumers: 4, Size: 256, Messages: 200000}
}

func TestFprint(t *testing.T) {
	var b strings.Builder
	sampleResult().Fprint(&b, sampleOptions())
	want := `broker bench: addr=127.0.0.1:61613 dest=/queue/bench-1 producers=4 consumers=4 size=256 messages=200000 persistent=false receipts=none ack=auto
sent 200000 in 1.83s (109,290 msgs/s)
received 200000 in 1.85s (108,108 msgs/s)
latency p50=1.23ms p90=2ms p99=4.1ms max=12ms
lost 0  duplicated 0  out-of-order n/a
`
	assert.Equal(t, want, b.String())
}

func TestFprintTroubles(t *testing.T) {
	r := sampleResult()
	r.Received, r.Lost, r.Foreign = 199990, 10, 3
	r.Stop, r.Elapsed = StopIdle, 17*time.Second
	r.Err = errors.New("loadtest: connection failed: consumer 1: boom")
	o := sampleOptions()
	o.Consumers, o.Topic, o.Prefetch, o.Version = 1, true, 10, "1.1"
	var b strings.Builder
	r.Fprint(&b, o)
	out := b.String()
	assert.Contains(t, out, " prefetch=10 stomp=1.1\n")
	assert.Contains(t, out, "received 199990 of 200000 expected in")
	assert.Contains(t, out, "lost 10  duplicated 0  out-of-order 0  foreign 3\n")
	assert.Contains(t, out, "stopped: idle-timeout after 17s\n")
	assert.Contains(t, out, "error: loadtest: connection failed: consumer 1: boom\n")
}

func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	r := sampleResult()
	r.Err = errors.New("boom")
	require.NoError(t, r.WriteJSON(&b, sampleOptions()))
	assert.Equal(t, 1, strings.Count(b.String(), "\n"), "one line")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.String()), &got))
	assert.Equal(t, "/queue/bench-1", got["destination"])
	assert.Equal(t, 200000.0, got["received"])
	assert.Equal(t, 1.234567, got["p50_ms"])
	assert.Equal(t, "none", got["receipts"])
	assert.Equal(t, "complete", got["stop"])
	assert.Equal(t, "boom", got["error"])
}

func TestFailure(t *testing.T) {
	o := sampleOptions()
	assert.NoError(t, sampleResult().Failure(o))

	r := sampleResult()
	r.Lost, r.Duplicated = 2, 1
	assert.ErrorIs(t, r.Failure(o), ErrLost)
	assert.ErrorIs(t, r.Failure(o), ErrDuplicated)
	assert.Equal(t, "loadtest: messages lost: 2 of 200000; loadtest: messages duplicated: 1", r.Failure(o).Error())

	r = sampleResult()
	r.Sent, r.Stop = 10, StopMax
	assert.ErrorIs(t, r.Failure(o), ErrUnsent)
	assert.Contains(t, r.Failure(o).Error(), "10 of 200000 before max-duration")

	r = sampleResult()
	r.Err = ErrConnection
	assert.ErrorIs(t, r.Failure(o), ErrConnection)
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 109000: "109,000", 1234567: "1,234,567", -1234: "-1,234"} {
		assert.Equal(t, want, groupDigits(n))
	}
}

func TestRoundDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                           "0s",
		999:                         "999ns",
		45678:                       "45.7µs",
		1234567:                     "1.23ms",
		2345678901:                  "2.35s",
		1000 * time.Second:          "16m40s",
		12345600 * time.Millisecond: "3h25m46s",
	} {
		assert.Equal(t, want, roundDuration(d).String())
	}
}
