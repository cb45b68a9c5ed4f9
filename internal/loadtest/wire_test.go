package loadtest

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readerWire is a wire that reads s and writes nowhere.
func readerWire(s string, version string) *wire {
	return &wire{
		br:       bufio.NewReaderSize(strings.NewReader(s), 16),
		version:  version,
		scratch:  make([]byte, 0, 8),
		receipts: make(chan string, wireReceipts),
		dead:     make(chan struct{}),
	}
}

func TestWireReadFrame(t *testing.T) {
	long := strings.Repeat("x", 100) // longer than the 16-byte read buffer
	w := readerWire("\n\r\n"+        // heart-beats
		"MESSAGE\r\nbench-run:r1\r\nbench-p:0\nbench-seq:7\nbench-ts:123\nbench-seq:8\nack:a\\cb\nmessage-id:"+long+"\ncontent-length:3\n\nx\x00y\x00\n\n"+
		"RECEIPT\nreceipt-id:bench-1\n\n\x00"+
		"ERROR\nmessage:bad\\cthing\\nhere\n\nbody\x00"+
		"ERROR\n\n  no header, body only  \x00"+
		"WHATEVER\nfoo:bar\n\n"+long+"\x00", "1.2")

	kind, err := w.readFrame()
	require.NoError(t, err)
	require.Equal(t, kindMessage, kind)
	assert.Equal(t, "r1", string(w.in.run))
	assert.Equal(t, "7", string(w.in.seq), "the first occurrence wins")
	assert.Equal(t, "123", string(w.in.ts))
	assert.Equal(t, `a\cb`, string(w.in.ack), "ids are kept as they came, to go back in an ACK")
	assert.Equal(t, long, string(w.in.messageID))

	kind, err = w.readFrame()
	require.NoError(t, err)
	require.Equal(t, kindReceipt, kind)
	require.NoError(t, w.control(kind))
	assert.Equal(t, "bench-1", <-w.receipts)

	kind, err = w.readFrame()
	require.NoError(t, err)
	require.Equal(t, kindError, kind)
	assert.EqualError(t, w.control(kind), "ERROR: bad:thing\nhere")

	kind, err = w.readFrame()
	require.NoError(t, err)
	assert.EqualError(t, w.control(kind), "ERROR: no header, body only")

	kind, err = w.readFrame()
	require.NoError(t, err)
	assert.Equal(t, kindOther, kind)
	assert.NoError(t, w.control(kind), "frames nobody asked for are ignored")

	_, err = w.readFrame()
	assert.Error(t, err, "end of stream")
}

func TestWireReadFrameMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"no colon":             "MESSAGE\nnocolon\n\n\x00",
		"bad content-length":   "MESSAGE\ncontent-length:-1\n\n\x00",
		"no NUL after body":    "MESSAGE\ncontent-length:1\n\nab\x00",
		"truncated body":       "MESSAGE\ncontent-length:10\n\nab",
		"truncated headers":    "MESSAGE\nbench-run:x",
		"body without its NUL": "MESSAGE\n\nabc",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readerWire(in, "1.2").readFrame()
			assert.Error(t, err)
		})
	}
}

func TestWireEscaping(t *testing.T) {
	for _, tt := range []struct{ version, want string }{
		{"1.0", "\nd/a:b:c d\\e"},
		{"1.1", "\nd/a\\cb:c\\nd\\\\e"},
		{"1.2", "\nd/a\\cb:c\\nd\\\\e"},
	} {
		w := &wire{version: tt.version}
		assert.Equal(t, tt.want, string(w.appendHeader(nil, "d/a:b", "c\nd\\e")), tt.version)
	}
	assert.Equal(t, "\na:b\\r", string((&wire{version: "1.2"}).appendHeader(nil, "a", "b\r")))
	assert.Equal(t, "\na:b\r", string((&wire{version: "1.1"}).appendHeader(nil, "a", "b\r")), "1.1 has no escape for CR")
	assert.Equal(t, "a\\b:c\n\\x", unescapeValue([]byte(`a\\b\cc\n\x`), "1.2"))
	assert.Equal(t, `a\cb`, unescapeValue([]byte(`a\cb`), "1.0"))
}

// hangUp, as an answer of scriptedBroker, closes the connection without
// writing anything.
const hangUp = "\x00hang up"

// scriptedBroker accepts connections and answers each frame a client sends
// with answer(frame), written as is; "" answers nothing, hangUp closes the
// connection. An ERROR answer closes it too. answer may be called from
// several connections at once.
func scriptedBroker(t testing.TB, answer func(f *frame.Frame) string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	serve := func(c net.Conn) {
		defer c.Close()
		r := frame.NewReader(c)
		for {
			f, err := r.Read()
			if err != nil {
				return
			}
			if f == nil {
				continue
			}
			out := answer(f)
			switch {
			case out == "":
				continue
			case out == hangUp:
				return
			}
			if _, err := c.Write([]byte(out)); err != nil || strings.HasPrefix(out, "ERROR") {
				return
			}
		}
	}
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(c) })
		}
	})
	return l.Addr().String()
}

func TestWireConnectNegotiatesAndRefusals(t *testing.T) {
	ctx := t.Context()
	addr := scriptedBroker(t, func(f *frame.Frame) string {
		switch f.Command {
		case frame.CONNECT:
			assert.Equal(t, "c1", f.Header.Get("client-id"))
			assert.Equal(t, "1.1", f.Header.Get(frame.AcceptVersion))
			return "CONNECTED\nversion:1.1\n\n\x00"
		case frame.DISCONNECT:
			// Answer and hang up at once: the receipt still counts.
			return "RECEIPT\nreceipt-id:" + f.Header.Get(frame.Receipt) + "\n\nERROR\nmessage:bye\n\n\x00"
		}
		return ""
	})
	w, err := dialWire(ctx, Options{Addr: addr, Version: "1.1"}, "c1", 5*time.Second)
	require.NoError(t, err)
	go w.pump()
	assert.Equal(t, "1.1", w.version)
	require.NoError(t, w.disconnect())
	assert.Error(t, w.put(func(b []byte) []byte { return b }), "a closed connection takes no more frames")

	addr = scriptedBroker(t, func(f *frame.Frame) string {
		return "ERROR\nmessage:Client: c1 already connected from /x\n\n\x00"
	})
	_, err = dialWireOnce(ctx, Options{Addr: addr}, "c1", time.Second)
	require.Error(t, err)
	assert.True(t, clientIDTaken(err), err)
}

func TestWireReceiptTimeoutAndBrokerError(t *testing.T) {
	addr := scriptedBroker(t, func(f *frame.Frame) string {
		switch f.Command {
		case frame.CONNECT:
			return "CONNECTED\nversion:1.2\n\n\x00"
		case frame.BEGIN:
			return "" // never answered
		}
		return "ERROR\nmessage:no such thing\n\n\x00"
	})
	w, err := dialWire(t.Context(), Options{Addr: addr}, "", 100*time.Millisecond)
	require.NoError(t, err)
	go w.pump()
	err = w.request(frame.New(frame.BEGIN, frame.Transaction, "t"))
	assert.ErrorContains(t, err, "BEGIN: no RECEIPT bench-1 within 100ms")
	err = w.request(frame.New(frame.ABORT, frame.Transaction, "t"))
	assert.EqualError(t, err, "ABORT: ERROR: no such thing")
	w.close()
}

func TestWireConnectTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1024)) // and never answer
			<-t.Context().Done()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = dialWire(ctx, Options{Addr: l.Addr().String()}, "", time.Second)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
