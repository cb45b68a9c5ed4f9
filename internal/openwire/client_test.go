package openwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveClient plays the broker's side of a connection as far as the codec goes: it sends
// ours, reads the client's WireFormatInfo, negotiates, sends BrokerInfo, answers every
// command that asks for a response, and returns what the client sent until ShutdownInfo.
func serveClient(t *testing.T, conn net.Conn, ours Format) (theirs *WireFormatInfo, negotiated Format, got []Command) {
	t.Helper()
	r := NewReader(conn, Initial(Version, ours.MaxFrameSize))
	w := NewWriter(conn, Initial(Version, ours.MaxFrameSize))
	offer := NewWireFormatInfo(ours)
	require.NoError(t, w.Write(offer))
	c, err := r.Read()
	require.NoError(t, err)
	theirs, ok := c.(*WireFormatInfo)
	require.True(t, ok, "first command %T, want WireFormatInfo", c)
	negotiated, err = Negotiate(offer, theirs)
	require.NoError(t, err)
	r.SetFormat(negotiated)
	w.SetFormat(negotiated)
	require.NoError(t, w.Write(&BrokerInfo{BrokerID: &BrokerID{Value: "ID:go-broker-1"}, BrokerName: "go", BrokerURL: "tcp://127.0.0.1"}))
	for {
		c, err := r.Read()
		if errors.Is(err, io.EOF) {
			return theirs, negotiated, got
		}
		require.NoError(t, err)
		got = append(got, c)
		if req, ok := c.(Request); ok && req.Base().ResponseRequired {
			require.NoError(t, w.Write(&Response{CorrelationID: req.Base().CommandID}))
		}
		if _, ok := c.(*ShutdownInfo); ok {
			return theirs, negotiated, got
		}
	}
}

// TestRealClientConnects connects ActiveMQ's own client (ActiveMQConnectionFactory over
// TCP) to a Go listener that negotiates with it, with our options on and off: the client
// gets through connection.start(), a synchronous send and close.
func TestRealClientConnects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ours  Format
		tight bool
		cache bool
	}{
		{"tight+cache", Format{Version: Version, TightEncoding: true, Cache: true, CacheSize: 2048, StackTrace: true, TCPNoDelay: true, MaxInactivityDuration: 30000, MaxInactivityDurationInitialDelay: 10000, MaxFrameSize: 100 << 20}, true, true},
		{"loose, cache off", Format{Version: Version, StackTrace: true, MaxInactivityDuration: 30000, MaxInactivityDurationInitialDelay: 10000, MaxFrameSize: 100 << 20}, false, false},
		{"version 9", Format{Version: 9, TightEncoding: true, Cache: true, CacheSize: 512, MaxInactivityDuration: 30000, MaxFrameSize: 100 << 20}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			cmd := runJava(ctx, t, "Connect.java", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()

			// The JVM compiles the program first; the deadline bounds a client that never comes.
			require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute)))
			conn, err := ln.Accept()
			require.NoError(t, err, "client output: %s", &out)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
			theirs, f, got := serveClient(t, conn, tc.ours)
			require.NoError(t, <-waited, "client output: %s", &out)
			assert.Contains(t, out.String(), "OK")

			// What 5.17's client offers by default.
			assert.Equal(t, int32(12), theirs.Version)
			tf := theirs.Format()
			assert.True(t, tf.TightEncoding)
			assert.True(t, tf.Cache)
			assert.Equal(t, 1024, tf.CacheSize)
			assert.True(t, tf.StackTrace)
			assert.Equal(t, int64(30000), tf.MaxInactivityDuration)
			assert.Equal(t, tc.ours.Version, f.Version)
			assert.Equal(t, tc.tight, f.TightEncoding)
			assert.Equal(t, tc.cache, f.Cache)

			var info *ConnectionInfo
			var producer *ProducerInfo
			var text *Message
			var shutdown bool
			for _, c := range got {
				switch c := c.(type) {
				case *ConnectionInfo:
					info = c
				case *ProducerInfo:
					producer = c
				case *Message:
					text = c
				case *ShutdownInfo:
					shutdown = true
				}
			}
			require.NotNil(t, info, "no ConnectionInfo in %v", got)
			assert.Equal(t, "interop-client", info.ClientID)
			require.NotNil(t, text, "no message in %v", got)
			assert.Equal(t, TypeTextMessage, text.Type)
			assert.True(t, text.Compressed, "useCompression sends a deflated body")
			body, ok, err := text.Text()
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, "hello from java", body)
			props, err := text.Properties()
			require.NoError(t, err)
			assert.Equal(t, "red", props["color"])
			assert.Equal(t, "queue://interop", text.Destination.String())
			assert.True(t, shutdown)

			// With the cache on, the client sends the producer id once (ProducerInfo) and
			// the message refers to its slot: both decode to the same value.
			require.NotNil(t, producer)
			assert.Equal(t, *producer.ProducerID, *text.ProducerID)
			if tc.cache {
				assert.Same(t, producer.ProducerID, text.ProducerID, "the message's producer id came from the cache")
			} else {
				assert.NotSame(t, producer.ProducerID, text.ProducerID)
			}
		})
	}
}
