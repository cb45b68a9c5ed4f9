package loadtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quick is a run that is small enough for go-stomp's server and always ends
// by itself well within the test timeout.
func quick(addr string) Options {
	return Options{
		Addr:        addr,
		Producers:   2,
		Consumers:   2,
		Size:        128,
		Messages:    2000,
		IdleTimeout: 5 * time.Second,
		MaxDuration: time.Minute,
	}
}

// forEachClient runs f once with each client of Options.Client.
func forEachClient(t *testing.T, f func(t *testing.T, client string)) {
	for _, c := range []string{ClientRaw, ClientGoStomp} {
		t.Run(c, func(t *testing.T) { f(t, c) })
	}
}

// requireClean checks a run that must have delivered everything exactly once.
func requireClean(t *testing.T, o Options, res Result, err error) {
	t.Helper()
	require.NoError(t, err)
	assert.Equal(t, StopComplete, res.Stop)
	assert.Equal(t, int64(o.Messages), res.Sent)
	assert.Zero(t, res.Lost, "lost")
	assert.Zero(t, res.Duplicated, "duplicated")
	assert.Zero(t, res.Foreign, "foreign")
	assert.NoError(t, res.Failure(o))
	assert.Positive(t, res.SendRate)
	assert.Positive(t, res.RecvRate)
	assert.Positive(t, res.Max)
	assert.LessOrEqual(t, res.P50, res.P90)
	assert.LessOrEqual(t, res.P90, res.P99)
	assert.LessOrEqual(t, res.P99, res.Max)
}

func TestRunQueue(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		o := quick(startServer(t))
		o.Client = client
		res, err := Run(context.Background(), o)
		requireClean(t, o, res, err)
		assert.Equal(t, int64(2000), res.Received)
		assert.Equal(t, int64(2000), res.Expected)
		assert.True(t, strings.HasPrefix(res.Destination, "/queue/bench-"), res.Destination)
	})
}

func TestRunTopic(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		o := quick(startServer(t))
		o.Client = client
		o.Topic = true
		o.Consumers = 3
		o.Messages = 1000
		res, err := Run(context.Background(), o)
		requireClean(t, o, res, err)
		assert.Equal(t, int64(3000), res.Expected)
		assert.Equal(t, int64(3000), res.Received, "every consumer gets every message")
		assert.Zero(t, res.OutOfOrder)
		assert.True(t, strings.HasPrefix(res.Destination, "/topic/bench-"), res.Destination)
	})
}

func TestRunOneConsumerKeepsOrder(t *testing.T) {
	o := quick(startServer(t))
	o.Consumers = 1
	res, err := Run(context.Background(), o)
	requireClean(t, o, res, err)
	assert.Zero(t, res.OutOfOrder)
}

// TestRunAckModes runs the client ack modes against fakeBroker, which
// rejects an ACK of anything not outstanding and counts the rest.
func TestRunAckModes(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		for _, ack := range []string{"client", "client-individual"} {
			for _, topic := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/topic=%t", ack, topic), func(t *testing.T) {
					b := startFakeBroker(t)
					o := quick(b.addr())
					o.Client = client
					o.Ack = ack
					o.Topic = topic
					res, err := Run(context.Background(), o)
					requireClean(t, o, res, err)
					assert.Equal(t, res.Expected, res.Received)
					assert.Equal(t, int(res.Expected), b.ackCount(), "every message acked once")
				})
			}
		}
	})
}

func TestRunStompVersion(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		p := startProxy(t, startServer(t))
		o := quick(p.addr())
		o.Client = client
		o.Version = "1.1"
		o.Messages = 10
		res, err := Run(context.Background(), o)
		requireClean(t, o, res, err)
		assert.Equal(t, o.Producers+o.Consumers, strings.Count(p.clientBytes(), "\naccept-version:1.1\n"))
	})
}

// TestRunReceipts checks the receipt modes on the wire: the number of
// receipt headers clients sent is the SENDs that asked for one (every K-th
// and each producer's last), plus one ABORT per consumer (the subscription
// confirmation) and one DISCONNECT per connection.
func TestRunReceipts(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		tests := []struct {
			receipts string
			messages int
			sends    int // receipted SENDs with 3 producers
		}{
			{receipts: "every", messages: 300, sends: 300},
			{receipts: "7", messages: 1000, sends: (334/7 + 1) + (333/7 + 1) + (333/7 + 1)},
			{receipts: "5", messages: 30, sends: 30 / 5},
			{receipts: "1", messages: 90, sends: 90},
			{receipts: "none", messages: 1000, sends: 3},
		}
		for _, tt := range tests {
			t.Run(tt.receipts, func(t *testing.T) {
				p := startProxy(t, startServer(t))
				o := quick(p.addr())
				o.Client = client
				o.Producers = 3
				o.Receipts = tt.receipts
				o.Messages = tt.messages
				res, err := Run(context.Background(), o)
				requireClean(t, o, res, err)
				want := tt.sends + o.Consumers + o.Producers + o.Consumers
				assert.Equal(t, want, strings.Count(p.clientBytes(), "\nreceipt:"))
			})
		}
	})
}

func TestRunHeadersOnTheWire(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		p := startProxy(t, startServer(t))
		o := quick(p.addr())
		o.Client = client
		o.Prefetch = 7
		o.Persistent = true
		o.Messages = 10
		o.Login, o.Passcode = "bench", "secret"
		res, err := Run(context.Background(), o)
		requireClean(t, o, res, err)

		wire := p.clientBytes()
		assert.Equal(t, o.Consumers, strings.Count(wire, "\nactivemq.prefetchSize:7\n"))
		assert.Equal(t, o.Messages, strings.Count(wire, "\npersistent:true\n"))
		assert.Equal(t, o.Messages, strings.Count(wire, "\nbench-ts:"))
		assert.Equal(t, o.Consumers+o.Producers, strings.Count(wire, "\nlogin:bench\n"))
		assert.Equal(t, o.Messages, strings.Count(wire, "\ncontent-length:128\n"))
	})
}

func TestRunDefaultsSendNoPrefetch(t *testing.T) {
	p := startProxy(t, startServer(t))
	o := quick(p.addr())
	o.Messages = 10
	res, err := Run(context.Background(), o)
	requireClean(t, o, res, err)
	wire := p.clientBytes()
	assert.NotContains(t, wire, "activemq.prefetchSize")
	assert.NotContains(t, wire, "persistent:")
	assert.Equal(t, o.Messages, strings.Count(wire, "\nbench-seq:"))
}

func TestRunCountsForeignMessages(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		addr := startServer(t)
		dest := "/queue/leftovers"
		c, err := stomp.Dial("tcp", addr, stomp.ConnOpt.Logger(discardLogger{}))
		require.NoError(t, err)
		for range 3 {
			require.NoError(t, c.Send(dest, "text/plain", []byte("old"), stomp.SendOpt.Receipt))
		}
		require.NoError(t, c.Disconnect())

		o := quick(addr)
		o.Client = client
		o.Destination = dest
		res, err := Run(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, StopComplete, res.Stop)
		assert.Equal(t, int64(3), res.Foreign)
		assert.Zero(t, res.Lost)
		assert.Zero(t, res.Duplicated)
		assert.Equal(t, dest, res.Destination)
	})
}

// TestRunIdleTimeout: consumers listen elsewhere, so nothing arrives and the
// idle timeout ends the run. That is not an error of Run; the loss is.
func TestRunIdleTimeout(t *testing.T) {
	o := quick(startServer(t))
	o.Messages = 100
	o.ConsumerDestination = "/queue/elsewhere"
	o.IdleTimeout = 200 * time.Millisecond
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, StopIdle, res.Stop)
	assert.Equal(t, int64(100), res.Sent)
	assert.Zero(t, res.Received)
	assert.Equal(t, int64(100), res.Lost)
	assert.ErrorIs(t, res.Failure(o), ErrLost)
	assert.NotErrorIs(t, res.Failure(o), ErrUnsent)
}

func TestRunMaxDuration(t *testing.T) {
	o := quick(startServer(t))
	o.Messages = 100
	o.ConsumerDestination = "/queue/elsewhere"
	o.IdleTimeout = time.Hour
	o.MaxDuration = 200 * time.Millisecond
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, StopMax, res.Stop)
	assert.Equal(t, int64(100), res.Lost)
	assert.ErrorIs(t, res.Failure(o), ErrLost)
}

// TestRunCanceled cancels the context from the first progress line, which
// proves the run has started.
func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := quick(startServer(t))
	o.ConsumerDestination = "/queue/elsewhere"
	o.IdleTimeout = time.Hour
	o.Progress = 10 * time.Millisecond
	o.ProgressOut = onFirstWrite(cancel)
	res, err := Run(ctx, o)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, StopCanceled, res.Stop)
	assert.ErrorIs(t, res.Failure(o), context.Canceled)
}

// TestRunConnectionLost cuts every connection once the run has started; the
// consumers see their subscriptions fail.
func TestRunConnectionLost(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		p := startProxy(t, startServer(t))
		o := quick(p.addr())
		o.Client = client
		o.ConsumerDestination = "/queue/elsewhere"
		o.IdleTimeout = time.Hour
		o.Progress = 10 * time.Millisecond
		o.ProgressOut = onFirstWrite(p.cut)
		res, err := Run(context.Background(), o)
		require.ErrorIs(t, err, ErrConnection)
		assert.Equal(t, StopError, res.Stop)
		assert.ErrorIs(t, res.Err, ErrConnection)
		assert.Error(t, res.Failure(o))
	})
}

func TestRunConnectRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	res, err := Run(context.Background(), quick(addr))
	require.ErrorIs(t, err, ErrConnect)
	assert.ErrorIs(t, res.Err, ErrConnect)
	assert.Zero(t, res.Sent)
}

type denyAll struct{}

func (denyAll) Authenticate(login, passcode string) bool { return false }

// TestRunAuthenticationFailure shows the broker's ERROR message in the
// error. go-stomp's server waits a second before it refuses a login.
func TestRunAuthenticationFailure(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		addr := startServerWith(t, &server.Server{Log: discardLogger{}, Authenticator: denyAll{}})
		o := quick(addr)
		o.Client = client
		o.Producers, o.Consumers = 1, 1
		_, err := Run(context.Background(), o)
		require.ErrorIs(t, err, ErrConnect)
		assert.Contains(t, err.Error(), "authentication failed")
	})
}

func TestRunInvalidOptions(t *testing.T) {
	addr := "127.0.0.1:1"
	tests := map[string]func(*Options){
		"no addr":           func(o *Options) { o.Addr = "" },
		"no producers":      func(o *Options) { o.Producers = 0 },
		"no consumers":      func(o *Options) { o.Consumers = 0 },
		"no messages":       func(o *Options) { o.Messages = 0 },
		"negative size":     func(o *Options) { o.Size = -1 },
		"receipts zero":     func(o *Options) { o.Receipts = "0" },
		"receipts word":     func(o *Options) { o.Receipts = "some" },
		"ack":               func(o *Options) { o.Ack = "manual" },
		"prefetch":          func(o *Options) { o.Prefetch = -1 },
		"version":           func(o *Options) { o.Version = "2.0" },
		"idle":              func(o *Options) { o.IdleTimeout = -time.Second },
		"queue on topic":    func(o *Options) { o.Destination = "/topic/x" },
		"topic on queue":    func(o *Options) { o.Topic = true; o.Destination = "/queue/x" },
		"consumer on topic": func(o *Options) { o.ConsumerDestination = "/topic/x" },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			o := quick(addr)
			mutate(&o)
			res, err := Run(context.Background(), o)
			require.ErrorIs(t, err, ErrOptions)
			assert.ErrorIs(t, res.Err, ErrOptions)
		})
	}
}

func BenchmarkRunQueue(b *testing.B) {
	o := quick(startServer(b))
	o.Messages = 20000
	b.ReportAllocs()
	var recv int64
	var elapsed time.Duration
	for b.Loop() {
		res, err := Run(context.Background(), o)
		if err != nil || res.Lost > 0 {
			b.Fatalf("run: %v, lost %d", err, res.Lost)
		}
		recv += res.Received
		elapsed += res.RecvElapsed
	}
	b.ReportMetric(float64(recv)/elapsed.Seconds(), "msgs/s")
}
