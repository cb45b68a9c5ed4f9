package stomp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/stompcodec"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// deadlineConn records the read deadlines set on it and says when the first Read starts.
type deadlineConn struct {
	net.Conn
	mu        sync.Mutex
	deadlines []time.Time
	reading   chan struct{}
	once      sync.Once
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadlines = append(c.deadlines, t)
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	c.once.Do(func() { close(c.reading) })
	return c.Conn.Read(p)
}

// TestNoConnectTimeout: a negative ConnectTimeout (connectTimeout=0 in the connector
// uri) waits for CONNECT without a limit: the reader sets no read deadline.
func TestNoConnectTimeout(t *testing.T) {
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	server, client := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, client) }()
	nc := &deadlineConn{Conn: server, reading: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, nc, b, Config{ConnectTimeout: -1})
	}()
	select {
	case <-nc.reading:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not start reading")
	}
	nc.mu.Lock()
	for _, d := range nc.deadlines {
		require.True(t, d.IsZero(), "a read deadline was set before CONNECT: %v", d)
	}
	nc.mu.Unlock()
	cancel()
	_ = client.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// failingConn is a connection whose writes fail.
type failingConn struct{ net.Conn }

func (failingConn) Write([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// TestBrowseWriteErrorEndsSession: a queue browser whose MESSAGE frames cannot be
// written stops writing and ends the session (with a log line) instead of carrying on
// as if they had been sent.
func TestBrowseWriteErrorEndsSession(t *testing.T) {
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	conn, err := b.Connect(context.Background(), broker.ConnectInfo{})
	require.NoError(t, err)
	defer conn.Close()
	dest, err := destinations.ParseOne("/queue/browsed")
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		m := &persistence.Message{Body: make([]byte, 200), Priority: 4}
		require.NoError(t, conn.Send(context.Background(), []destinations.Name{dest}, m, "", func(error) {}))
	}
	var logs bytes.Buffer
	s := &session{cfg: Config{}.withDefaults(), w: stompcodec.NewWriter(failingConn{}, 64), b: b, conn: conn,
		version: stompcodec.V12, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	s.w.SetVersion(stompcodec.V12)
	require.NoError(t, s.browse(context.Background(), broker.SubscribeRequest{ID: "b", Dest: dest}, ""))
	require.True(t, s.closing, "the session goes on after a failed write")
	require.Contains(t, logs.String(), "write failed")
}

// TestWriteErrorGivesDeliveriesBack: messages taken for a client whose connection fails
// while they are written go back to the queue for another consumer when the session
// ends, instead of staying with the dead connection until a restart.
func TestWriteErrorGivesDeliveriesBack(t *testing.T) {
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	dest, err := broker.ParseDestination("/queue/lost")
	require.NoError(t, err)
	conn, err := b.Connect(context.Background(), broker.ConnectInfo{})
	require.NoError(t, err)
	_, err = conn.Subscribe(context.Background(), broker.SubscribeRequest{ID: "s", Dest: dest, Mode: broker.AckClientIndividual})
	require.NoError(t, err)
	for range 5 {
		m := &broker.Message{Body: make([]byte, 200), Priority: 4, Persistent: true}
		require.NoError(t, conn.Send(context.Background(), []broker.Destination{dest}, m, "", func(error) {}))
	}
	s := &session{cfg: Config{}.withDefaults(), w: stompcodec.NewWriter(failingConn{}, 64), b: b, conn: conn,
		version: stompcodec.V12, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.w.SetVersion(stompcodec.V12)
	deadline := time.Now().Add(10 * time.Second)
	for s.pump() == nil {
		require.True(t, time.Now().Before(deadline), "the writes never failed")
		select {
		case <-conn.Wake():
		case <-time.After(time.Until(deadline)):
		}
	}
	conn.Close()

	other, err := b.Connect(context.Background(), broker.ConnectInfo{})
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Subscribe(context.Background(), broker.SubscribeRequest{ID: "s", Dest: dest, Mode: broker.AckClientIndividual})
	require.NoError(t, err)
	var got []*broker.Delivery
	for len(got) < 5 {
		select {
		case <-other.Wake():
		case <-time.After(time.Until(deadline)):
			t.Fatalf("another consumer got %d of the 5 messages the failed connection was writing", len(got))
		}
		ds := other.Take(nil)
		got = append(got, ds...)
		other.Delivered(ds)
	}
}
