package tests

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/transport"
)

// inProcessStreamBroker runs, in this process, a broker whose topics s.> are streams of
// one partition kept on fs, behind a STOMP connector on 127.0.0.1:0, and returns it with
// its address: for tests that need a slow disk, which the real binary cannot be given.
// The broker is shut down when the test ends.
func inProcessStreamBroker(t *testing.T, fs vfs.FS) (*broker.Broker, string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := kafkalog.Open(kafkalog.Options{FS: fs, Dir: "/streams", Flush: kafkalog.FlushBatch,
		RetentionCheckInterval: -1, MaxBatchBytes: 64 << 20, Logger: quiet})
	require.NoError(t, err)
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New(), Streams: l, Logger: quiet,
		Policies: func(k destinations.Kind, name string) policy.Policy {
			p := policy.Default(k.IsTopic())
			if k == destinations.Topic && destinations.Match("s.>", name) {
				p.Type, p.Partitions = policy.StreamType, 1
			}
			return p
		}})
	require.NoError(t, err)
	srv := transport.NewServer(b, quiet)
	require.NoError(t, srv.Listen([]transport.Connector{{Name: "stomp", Addr: "127.0.0.1:0"}}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.NoError(t, b.Close())
		require.NoError(t, l.Close())
	})
	return b, srv.Addrs()[0].String()
}

// beatingConn is a raw STOMP 1.2 connection that asked the broker for heart-beats every
// 100ms, and counts them as its reader goroutine sees them.
type beatingConn struct {
	raw    *rawConn
	beats  atomic.Int64
	frames chan *frame.Frame
}

func dialBeating(t *testing.T, addr string) *beatingConn {
	t.Helper()
	raw := dialRaw(t, addr)
	f := raw.connect("heart-beat", "0,100")
	require.Equal(t, "CONNECTED", f.Command)
	require.NoError(t, raw.nc.SetReadDeadline(time.Time{}))
	c := &beatingConn{raw: raw, frames: make(chan *frame.Frame, 1024)}
	go func() {
		defer close(c.frames)
		for {
			f, err := raw.r.Read()
			if err != nil {
				return
			}
			if f == nil {
				c.beats.Add(1)
				continue
			}
			c.frames <- f
		}
	}()
	return c
}

// next returns the next frame, failing the test after d.
func (c *beatingConn) next(t *testing.T, d time.Duration, what string) *frame.Frame {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		require.True(t, ok, "the connection ended while waiting for %s", what)
		return f
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
		return nil
	}
}

// TestStreamFullAppendQueueKeepsHeartBeats: a producer whose stream's append queue is
// full (the disk stopped taking fsyncs) is held, and its connection goes on: the broker
// heart-beats it and delivers to its subscriptions. Once the disk moves, every held
// SEND goes through, in order, and each gets its RECEIPT.
func TestStreamFullAppendQueueKeepsHeartBeats(t *testing.T) {
	fs := vfs.NewMem()
	b, addr := inProcessStreamBroker(t, fs)

	c := dialBeating(t, addr)
	c.raw.send(frame.New("SUBSCRIBE", "id", "side", "destination", "/queue/side", "receipt", "sub"))
	require.Equal(t, "RECEIPT", c.next(t, 5*time.Second, "the SUBSCRIBE receipt").Command)
	c.raw.send(frame.New("SEND", "destination", "/topic/s.full", "receipt", "first"))
	require.Equal(t, "RECEIPT", c.next(t, 5*time.Second, "the first SEND's receipt").Command)

	// From now on the stream log's fsyncs wait until released (at the end, or when the
	// test fails, before the broker is shut down).
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	fs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasPrefix(path, "/streams/s.full-") {
			<-release
		}
		return nil
	})

	// Far more than the queue holds (16 MiB): the first is written (and its fsync
	// waits), the next fill the queue, the rest wait for room.
	const n = 24
	body := bytes.Repeat([]byte("x"), 1<<20)
	go func() {
		for i := range n {
			f := frame.New("SEND", "destination", "/topic/s.full", "receipt", "m"+strconv.Itoa(i),
				"content-length", strconv.Itoa(len(body)))
			f.Body = body
			if c.raw.w.WriteFrame(f) != nil || c.raw.w.Flush() != nil {
				return
			}
		}
	}()
	eventually(t, 10*time.Second, "the stream's append queue to fill", func() bool {
		for _, s := range b.Management().DestinationStats() {
			if s.Name == "/topic/s.full" {
				return s.Pending >= 15
			}
		}
		return false
	})

	// The connection is alive: heart-beats, and a message for its other subscription.
	from := c.beats.Load()
	eventually(t, 3*time.Second, "heart-beats while the SEND is held", func() bool { return c.beats.Load() >= from+5 })
	other := jmsDial(t, addr)
	other.send("/queue/side", "meanwhile")
	m := c.next(t, 3*time.Second, "a MESSAGE while the SEND is held")
	require.Equal(t, "MESSAGE", m.Command)
	require.Equal(t, "meanwhile", string(m.Body))

	// The disk moves: every SEND is stored, in order.
	unblock()
	for i := range n {
		f := c.next(t, 10*time.Second, "RECEIPT m"+strconv.Itoa(i))
		require.Equal(t, "RECEIPT", f.Command, f.Header.Get("message"))
		require.Equal(t, "m"+strconv.Itoa(i), f.Header.Get("receipt-id"))
	}
	reader := jmsDial(t, addr)
	sub := reader.subscribe("/topic/s.full", "x-stream-offset", "first")
	for i := range n + 1 {
		require.Equal(t, streamPos{0, i}, posOf(t, reader.next(sub).Header))
	}
}
