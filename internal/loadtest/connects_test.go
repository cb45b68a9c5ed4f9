package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loginBroker is a scripted broker that accepts CONNECT with login alice,
// passcode secret and accept-version 1.2, refuses any other with an ERROR
// frame, and answers DISCONNECT with its receipt. It counts the CONNECTs
// and DISCONNECTs it got.
func loginBroker(t testing.TB) (addr string, connects, disconnects *atomic.Int64) {
	connects, disconnects = new(atomic.Int64), new(atomic.Int64)
	addr = scriptedBroker(t, func(f *frame.Frame) string {
		switch f.Command {
		case frame.CONNECT:
			connects.Add(1)
			if f.Header.Get(frame.Login) != "alice" || f.Header.Get(frame.Passcode) != "secret" ||
				f.Header.Get(frame.AcceptVersion) != "1.2" {
				return "ERROR\nmessage:Authentication failed\n\nwho are you?\x00"
			}
			return "CONNECTED\nversion:1.2\n\n\x00"
		case frame.DISCONNECT:
			disconnects.Add(1)
			return "RECEIPT\nreceipt-id:" + f.Header.Get(frame.Receipt) + "\n\n\x00"
		}
		return "ERROR\nmessage:unexpected " + f.Command + "\n\n\x00"
	})
	return addr, connects, disconnects
}

// connectOptions is a connect run of n connects over 4 workers as alice.
func connectOptions(addr string, n int) Options {
	return Options{
		Addr: addr, Connects: n, Producers: 4,
		Login: "alice", Passcode: "secret", Version: "1.2",
		MaxDuration: time.Minute,
	}
}

func TestConnectsAccepted(t *testing.T) {
	addr, connects, disconnects := loginBroker(t)
	o := connectOptions(addr, 50)
	var progress strings.Builder
	o.ProgressOut, o.Progress = &progress, time.Hour
	res, err := Run(t.Context(), o)
	require.NoError(t, err)
	require.NotNil(t, res.Connects)
	c := res.Connects
	assert.Equal(t, StopComplete, res.Stop)
	assert.Equal(t, 50, c.Connects)
	assert.Equal(t, int64(50), c.OK)
	assert.Zero(t, c.Refused)
	assert.Zero(t, c.Errors)
	assert.Equal(t, int64(50), c.Done())
	assert.Equal(t, int64(50), connects.Load(), "one CONNECT per connect")
	assert.Equal(t, int64(50), disconnects.Load(), "and one DISCONNECT")
	assert.Positive(t, res.Elapsed)
	assert.InDelta(t, 50/res.Elapsed.Seconds(), c.Rate, 1e-6)
	assert.Positive(t, c.Max)
	assert.LessOrEqual(t, c.P50, c.P90)
	assert.LessOrEqual(t, c.P90, c.P99)
	assert.LessOrEqual(t, c.P99, c.Max)
	assert.Empty(t, c.FirstRefusal)
	assert.Empty(t, c.FirstError)
	assert.NoError(t, res.Failure(o))
	assert.Zero(t, res.Sent, "no message figures")

	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), "broker bench: addr="+addr+" connects=50 producers=4 stomp=1.2\n")
	assert.Contains(t, out.String(), "connects 50 in ")
	assert.Contains(t, out.String(), "(CONNECT to CONNECTED)\n")
	assert.Contains(t, out.String(), "ok 50  refused 0  errors 0\n")
	assert.NotContains(t, out.String(), "first")
}

// TestConnectsOnTheWire: every connect is a fresh connection with the
// CONNECT frame the options ask for and a receipted DISCONNECT, against a
// broker that parses STOMP in full (fakeBroker).
func TestConnectsOnTheWire(t *testing.T) {
	p := startProxy(t, startFakeBroker(t).addr())
	o := connectOptions(p.addr(), 30)
	o.Producers = 3
	o.Version = "1.1"
	res, err := Run(t.Context(), o)
	require.NoError(t, err)
	assert.Equal(t, int64(30), res.Connects.OK)
	assert.NoError(t, res.Failure(o))
	wire := p.clientBytes()
	assert.Equal(t, 30, strings.Count(wire, "CONNECT\naccept-version:1.1\nhost:127.0.0.1\nheart-beat:0,0\nlogin:alice\npasscode:secret\n\n\x00"))
	assert.Equal(t, 30, strings.Count(wire, "DISCONNECT\nreceipt:bench-disconnect\n\n\x00"))
	p.mu.Lock()
	assert.Len(t, p.conns, 2*30, "a connection per connect")
	p.mu.Unlock()
}

func TestConnectsRefused(t *testing.T) {
	addr, connects, disconnects := loginBroker(t)
	o := connectOptions(addr, 20)
	o.Passcode = "wrong"
	res, err := Run(t.Context(), o)
	require.NoError(t, err, "refusals are figures, not a run error")
	c := res.Connects
	assert.Equal(t, StopComplete, res.Stop)
	assert.Zero(t, c.OK)
	assert.Equal(t, int64(20), c.Refused)
	assert.Zero(t, c.Errors)
	assert.Equal(t, "Authentication failed", c.FirstRefusal)
	assert.Equal(t, int64(20), connects.Load())
	assert.Zero(t, disconnects.Load())
	assert.Zero(t, c.Max, "no CONNECTED, no latency")
	assert.Positive(t, c.Rate)

	fail := res.Failure(o)
	require.ErrorIs(t, fail, ErrRefused)
	assert.NotErrorIs(t, fail, ErrConnectsFailed)
	assert.EqualError(t, fail, "loadtest: connects refused: 20 of 20: Authentication failed")

	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), "latency n/a (no CONNECTED)\nok 0  refused 20  errors 0\nfirst refusal: Authentication failed\n")
}

func TestConnectsExpectRefused(t *testing.T) {
	addr, _, disconnects := loginBroker(t)

	// Every login bad: a pass, timed to the ERROR.
	o := connectOptions(addr, 20)
	o.Passcode, o.ExpectRefused = "wrong", true
	res, err := Run(t.Context(), o)
	require.NoError(t, err)
	c := res.Connects
	assert.Equal(t, int64(20), c.Refused)
	assert.NoError(t, res.Failure(o))
	assert.Positive(t, c.Max, "latency to the ERROR")
	assert.LessOrEqual(t, c.P50, c.Max)
	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), " expect-refused=true\n")
	assert.Contains(t, out.String(), "(CONNECT to ERROR)\n")
	assert.Contains(t, out.String(), "first refusal: Authentication failed\n")

	// Good logins: each one accepted is a failure, and still disconnected.
	o = connectOptions(addr, 8)
	o.ExpectRefused = true
	res, err = Run(t.Context(), o)
	require.NoError(t, err)
	assert.Equal(t, int64(8), res.Connects.OK)
	assert.Zero(t, res.Connects.Max, "no ERROR, no latency")
	assert.Equal(t, int64(8), disconnects.Load())
	fail := res.Failure(o)
	require.ErrorIs(t, fail, ErrAccepted)
	assert.EqualError(t, fail, "loadtest: connects accepted, refusal expected: 8 of 8")

	// Other errors fail it as well.
	o = connectOptions(scriptedBroker(t, func(*frame.Frame) string { return hangUp }), 4)
	o.ExpectRefused = true
	res, err = Run(t.Context(), o)
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.Connects.Errors)
	assert.ErrorIs(t, res.Failure(o), ErrConnectsFailed)
	assert.NotErrorIs(t, res.Failure(o), ErrAccepted)
}

// TestConnectsOtherErrors: whatever is not a CONNECTED or an ERROR in
// answer to CONNECT, and then a RECEIPT, is an error, not a refusal.
func TestConnectsOtherErrors(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	tests := []struct {
		name   string
		answer func(f *frame.Frame) string // nil: nothing listens
		want   string                      // the first error
	}{
		{name: "closed without a frame", answer: func(*frame.Frame) string { return hangUp },
			want: "CONNECT: connection closed without an answer"},
		{name: "nothing listens",
			want: "dial: dial tcp " + closedAddr + ": connect: connection refused"},
		{name: "another frame", answer: func(*frame.Frame) string { return "RECEIPT\nreceipt-id:x\n\n\x00" },
			want: "CONNECT: answered by a frame other than CONNECTED or ERROR"},
		{name: "no answer", answer: func(*frame.Frame) string { return "" },
			want: "CONNECT: no answer within 200ms"},
		{name: "closed on DISCONNECT", answer: func(f *frame.Frame) string {
			if f.Command == frame.CONNECT {
				return "CONNECTED\nversion:1.2\n\n\x00"
			}
			return hangUp
		}, want: "DISCONNECT: connection closed without an answer"},
		{name: "ERROR on DISCONNECT", answer: func(f *frame.Frame) string {
			if f.Command == frame.CONNECT {
				return "CONNECTED\nversion:1.2\n\n\x00"
			}
			return "ERROR\nmessage:not now\n\n\x00"
		}, want: "DISCONNECT: ERROR: not now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := closedAddr
			if tt.answer != nil {
				addr = scriptedBroker(t, tt.answer)
			}
			o := connectOptions(addr, 6)
			o.Producers = 2
			r, err := newConnectRun(o.withDefaults(time.Now()))
			require.NoError(t, err)
			r.deadline = 200 * time.Millisecond
			res, err := r.execute(t.Context())
			require.NoError(t, err)
			c := res.Connects
			assert.Equal(t, StopComplete, res.Stop)
			assert.Equal(t, int64(6), c.Errors)
			assert.Zero(t, c.OK)
			assert.Zero(t, c.Refused)
			assert.Empty(t, c.FirstRefusal)
			assert.Equal(t, tt.want, c.FirstError)

			fail := res.Failure(o)
			require.ErrorIs(t, fail, ErrConnectsFailed)
			assert.NotErrorIs(t, fail, ErrRefused)
			var out strings.Builder
			res.Fprint(&out, o)
			assert.Contains(t, out.String(), "ok 0  refused 0  errors 6\nfirst error: "+tt.want+"\n")
		})
	}
}

// TestConnectsCanceled: connects cut short by the end of the context are
// not counted as errors; the run says it was canceled.
func TestConnectsCanceled(t *testing.T) {
	connected := make(chan struct{}, 16)
	addr := scriptedBroker(t, func(*frame.Frame) string {
		connected <- struct{}{}
		return "" // never answered
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-connected
		cancel()
	}()
	o := connectOptions(addr, 10)
	res, err := Run(ctx, o)
	require.ErrorIs(t, err, context.Canceled)
	c := res.Connects
	require.NotNil(t, c)
	assert.Equal(t, StopCanceled, res.Stop)
	assert.Zero(t, c.Done())
	fail := res.Failure(o)
	assert.ErrorIs(t, fail, context.Canceled)
	assert.NotErrorIs(t, fail, ErrConnectsFailed)
}

func TestConnectsMaxDuration(t *testing.T) {
	addr := scriptedBroker(t, func(f *frame.Frame) string {
		if f.Command == frame.DISCONNECT {
			return "RECEIPT\nreceipt-id:" + f.Header.Get(frame.Receipt) + "\n\n\x00"
		}
		time.Sleep(20 * time.Millisecond)
		return "CONNECTED\nversion:1.2\n\n\x00"
	})
	o := connectOptions(addr, 1000)
	o.Producers = 1
	o.MaxDuration = 200 * time.Millisecond
	res, err := Run(t.Context(), o)
	require.NoError(t, err)
	c := res.Connects
	assert.Equal(t, StopMax, res.Stop)
	assert.Positive(t, c.OK)
	assert.Less(t, c.Done(), int64(1000))
	assert.Zero(t, c.Errors, "the connect cut short is not counted")
	fail := res.Failure(o)
	require.ErrorIs(t, fail, ErrConnectsUnmade)
	assert.Contains(t, fail.Error(), "of 1000 before max-duration")
}

func TestConnectsOptions(t *testing.T) {
	// Consumers and messages do not matter; a topic destination neither.
	o := Options{Addr: "h:1", Producers: 2, Connects: 10, Destination: "/topic/x"}
	require.NoError(t, o.withDefaults(time.Now()).validate())

	for name, bad := range map[string]Options{
		"negative":             {Connects: -1},
		"with durables":        {Connects: 1, DurableSubscribers: 1},
		"with replay":          {Connects: 1, Replay: true},
		"expect without count": {ExpectRefused: true},
		"no producers":         {Connects: 1, Producers: -1},
	} {
		o := Options{Addr: "h:1", Producers: 2, Consumers: 1, Messages: 1}
		o.Connects, o.DurableSubscribers, o.Replay, o.ExpectRefused = bad.Connects, bad.DurableSubscribers, bad.Replay, bad.ExpectRefused
		if bad.Producers != 0 {
			o.Producers = bad.Producers
		}
		res, err := Run(t.Context(), o)
		assert.ErrorIs(t, err, ErrOptions, name)
		assert.ErrorIs(t, res.Err, ErrOptions, name)
	}

	_, err := Run(t.Context(), Options{Addr: "no-port", Producers: 1, Connects: 1})
	assert.ErrorIs(t, err, ErrOptions)
}

func sampleConnects() (Result, Options) {
	return Result{
			Connects: &ConnectResult{
				Connects: 10000, OK: 9990, Refused: 7, Errors: 3, Rate: 4321.9,
				P50: 512 * time.Microsecond, P90: 1100 * time.Microsecond, P99: 3 * time.Millisecond, Max: 41 * time.Millisecond,
				FirstRefusal: "Authentication failed", FirstError: "CONNECT: connection closed without an answer",
			},
			Elapsed: 2314 * time.Millisecond, Stop: StopComplete,
		}, Options{Addr: "127.0.0.1:61613", Producers: 8, Connects: 10000, Version: "1.2",
			Login: "alice", Passcode: "secret"}
}

func TestFprintConnects(t *testing.T) {
	r, o := sampleConnects()
	var b strings.Builder
	r.Fprint(&b, o)
	want := `broker bench: addr=127.0.0.1:61613 connects=10000 producers=8 stomp=1.2
connects 10000 in 2.31s (4,321 connects/s)
latency p50=512µs p90=1.1ms p99=3ms max=41ms (CONNECT to CONNECTED)
ok 9990  refused 7  errors 3
first refusal: Authentication failed
first error: CONNECT: connection closed without an answer
`
	assert.Equal(t, want, b.String())
	assert.NotContains(t, b.String(), "secret")

	r.Connects.OK, r.Stop, r.Elapsed = 90, StopMax, time.Minute
	b.Reset()
	r.Fprint(&b, o)
	assert.Contains(t, b.String(), "connects 100 of 10000 in 1m0s")
	assert.Contains(t, b.String(), "stopped: max-duration after 1m0s\n")
	fail := r.Failure(o)
	assert.ErrorIs(t, fail, ErrRefused)
	assert.ErrorIs(t, fail, ErrConnectsFailed)
	assert.ErrorIs(t, fail, ErrConnectsUnmade)
	assert.NotErrorIs(t, fail, ErrUnsent, "no messages in this scenario")
}

func TestWriteJSONConnects(t *testing.T) {
	r, o := sampleConnects()
	var b strings.Builder
	require.NoError(t, r.WriteJSON(&b, o))
	assert.Equal(t, 1, strings.Count(b.String(), "\n"), "one line")
	assert.NotContains(t, b.String(), "secret")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.String()), &got))
	assert.Equal(t, 10000.0, got["connects"])
	assert.Equal(t, 8.0, got["producers"])
	assert.Equal(t, "1.2", got["stomp_version"])
	assert.Equal(t, false, got["expect_refused"])
	assert.Equal(t, 10000.0, got["done"])
	assert.Equal(t, 9990.0, got["ok"])
	assert.Equal(t, 7.0, got["refused"])
	assert.Equal(t, 3.0, got["errors"])
	assert.Equal(t, 4321.9, got["connect_rate"])
	assert.Equal(t, 2314.0, got["elapsed_ms"])
	assert.Equal(t, 0.512, got["p50_ms"])
	assert.Equal(t, 41.0, got["max_ms"])
	assert.Equal(t, "Authentication failed", got["first_refusal"])
	assert.Equal(t, "complete", got["stop"])
	assert.NotContains(t, got, "messages", "not a message run's report")
}

// BenchmarkConnects measures the connect scenario against a scripted
// broker on loopback, the broker in the same process: the tool's own cost
// per connect is what it must keep small.
func BenchmarkConnects(b *testing.B) {
	addr, _, _ := loginBroker(b)
	o := connectOptions(addr, 200)
	b.ReportAllocs()
	var done int64
	var elapsed time.Duration
	for b.Loop() {
		res, err := Run(context.Background(), o)
		if err != nil || res.Failure(o) != nil {
			b.Fatalf("run: %v, %v", err, res.Failure(o))
		}
		done += res.Connects.Done()
		elapsed += res.Elapsed
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "connects/s")
}

// lateContext is a context whose deadline has passed while its Err is still nil, as a
// context.WithTimeout's is between its deadline and its timer's run on a busy machine.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestConnectsAfterDeadlineNotFailed: once the run's deadline has passed, no connect
// is tried or counted as failed, though the context's Err is not yet set.
func TestConnectsAfterDeadlineNotFailed(t *testing.T) {
	addr := scriptedBroker(t, func(f *frame.Frame) string {
		if f.Command == frame.DISCONNECT {
			return "RECEIPT\nreceipt-id:" + f.Header.Get(frame.Receipt) + "\n\n\x00"
		}
		return "CONNECTED\nversion:1.2\n\n\x00"
	})
	r, err := newConnectRun(connectOptions(addr, 100))
	require.NoError(t, err)
	c := &connector{r: r, w: wire{br: bufio.NewReaderSize(nil, connectReadBuffer)}}
	c.run(lateContext{context.Background()}, 100)
	assert.Zero(t, r.ok.Load()+r.failed.Load(), "connects made or failed after the deadline")
}
