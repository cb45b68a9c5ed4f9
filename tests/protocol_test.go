package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionNegotiation(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	cases := []struct{ accept, want string }{
		{"", "1.0"},
		{"1.0", "1.0"},
		{"1.1", "1.1"},
		{"1.0,1.1,1.2", "1.2"},
		{"1.1,1.2,2.0", "1.2"},
	}
	for _, c := range cases {
		rc := dialRaw(t, b.Addr)
		h := []string{"host", "localhost"}
		if c.accept != "" {
			h = append(h, "accept-version", c.accept)
		}
		rc.send(frame.New("CONNECT", h...))
		f := rc.read()
		require.Equal(t, "CONNECTED", f.Command, "accept-version %q", c.accept)
		assert.Equal(t, c.want, f.Header.Get("version"), "accept-version %q", c.accept)
		assert.NotEmpty(t, f.Header.Get("session"))
		assert.True(t, strings.HasPrefix(f.Header.Get("server"), "activemq-go/"))
	}
	rc := dialRaw(t, b.Addr)
	rc.send(frame.New("CONNECT", "accept-version", "2.0", "host", "x"))
	f := rc.read()
	require.Equal(t, "ERROR", f.Command)
	assert.Equal(t, "1.0,1.1,1.2", f.Header.Get("version"))
	rc.expectClosed(5 * time.Second)
}

func TestHeartBeats(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	// The client sends every 200 ms and wants beats every 150 ms.
	rc := dialRaw(t, b.Addr)
	f := rc.connect("heart-beat", "200,150")
	require.Equal(t, "CONNECTED", f.Command)
	assert.Equal(t, "150,200", f.Header.Get("heart-beat"))
	// The broker beats while idle: raw bytes arrive although no frame is due.
	buf := make([]byte, 1)
	require.NoError(t, rc.nc.SetReadDeadline(time.Now().Add(2*time.Second)))
	n, err := rc.nc.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, byte('\n'), buf[0])
	// Silence from the client past 200 ms × 1.5 gets an ERROR and the connection closes:
	// a bounded wait, the deadline 300ms plus a margin for a busy machine (issue 27).
	f, err = rc.readWithin(raceScaled(5 * time.Second))
	require.NoError(t, err)
	require.Equal(t, "ERROR", f.Command)
	assert.Contains(t, f.Header.Get("message"), "heart-beat")
	rc.expectClosed(5 * time.Second)

	// A client that keeps beating stays connected.
	ok := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", ok.connect("heart-beat", "100,0").Command)
	for i := 0; i < 8; i++ {
		ok.sendRaw("\n")
		time.Sleep(60 * time.Millisecond) // the client's own beat interval, not synchronisation
	}
	ok.send(frame.New("SEND", "destination", "/queue/hb", "receipt", "r1"))
	assert.Equal(t, "RECEIPT", ok.read().Command)

	bad := dialRaw(t, b.Addr)
	f = bad.connect("heart-beat", "banana")
	require.Equal(t, "ERROR", f.Command)
	bad.expectClosed(5 * time.Second)
}

func TestFatalProtocolErrorsCloseOnlyThatConnection(t *testing.T) {
	b := startBroker(t, brokerConfig{URIQuery: "maxFrameSize=65536&maxHeaders=20&maxHeaderLength=1024"})
	// A healthy client keeps working throughout.
	healthy := dial(t, b.Addr)
	hs, err := healthy.Subscribe("/queue/healthy", stomp.AckAuto)
	require.NoError(t, err)

	cases := []struct {
		name, raw, want string
		connect         bool
	}{
		{name: "frame before CONNECT", raw: "SEND\ndestination:/queue/a\n\nx\x00", want: "expected CONNECT"},
		{name: "unknown command", raw: "FROB\n\n\x00", want: "Unknown STOMP action", connect: true},
		{name: "server frame from client", raw: "MESSAGE\n\n\x00", want: "server frame", connect: true},
		{name: "content-length beyond the limit", raw: "SEND\ndestination:/queue/a\ncontent-length:1000000000000\n\n", want: "too large", connect: true},
		{name: "body beyond the limit", raw: "SEND\ndestination:/queue/a\n\n" + strings.Repeat("x", 70000) + "\x00", want: "too large", connect: true},
		{name: "too many headers", raw: "SEND\ndestination:/queue/a\n" + strings.Repeat("h:v\n", 30) + "\n\x00", want: "headers", connect: true},
		{name: "header line too long", raw: "SEND\ndestination:/queue/a\nh:" + strings.Repeat("v", 2000) + "\n\n\x00", want: "header", connect: true},
		{name: "undefined escape in 1.2", raw: "SEND\ndestination:/queue/a\nh:a\\tb\n\n\x00", want: "escape", connect: true},
		{name: "bad content-length", raw: "SEND\ndestination:/queue/a\ncontent-length:-5\n\n\x00", want: "content-length", connect: true},
		{name: "missing NUL after content-length body", raw: "SEND\ndestination:/queue/a\ncontent-length:2\n\nabc\x00", want: "nul after frame body", connect: true},
		{name: "second CONNECT", raw: "CONNECT\naccept-version:1.2\nhost:x\n\n\x00", want: "already connected", connect: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, b.Addr)
			if c.connect {
				require.Equal(t, "CONNECTED", rc.connect().Command)
			}
			rc.sendRaw(c.raw)
			f := rc.read()
			require.Equal(t, "ERROR", f.Command)
			assert.Contains(t, strings.ToLower(f.Header.Get("message")), strings.ToLower(c.want))
			rc.expectClosed(5 * time.Second)

			require.NoError(t, healthy.Send("/queue/healthy", "", []byte(c.name), stomp.SendOpt.Receipt))
			assert.Equal(t, c.name, string(recv(t, hs).Body))
		})
	}
}

func TestRecoverableErrorsKeepTheConnection(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	rc := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", rc.connect().Command)
	cases := []struct {
		f    *frame.Frame
		want string
	}{
		{frame.New("SEND", "receipt", "r1"), "destination"},
		{frame.New("SEND", "destination", "/queue/", "receipt", "r2"), "invalid destination"},
		{frame.New("SEND", "destination", "/queue/a.>", "receipt", "r3"), "wildcard"},
		{frame.New("ACK", "id", "999999", "receipt", "r4"), "Unexpected ACK"},
		{frame.New("ACK", "receipt", "r5"), "id"},
		{frame.New("COMMIT", "transaction", "nope", "receipt", "r6"), "transaction"},
		{frame.New("ABORT", "transaction", "nope", "receipt", "r7"), "transaction"},
		{frame.New("SEND", "destination", "/queue/a", "transaction", "nope", "receipt", "r8"), "transaction"},
		{frame.New("UNSUBSCRIBE", "id", "nope", "receipt", "r9"), "subscription"},
		{frame.New("SUBSCRIBE", "id", "s1", "receipt", "r10"), "destination"},
		{frame.New("SUBSCRIBE", "destination", "/queue/a", "receipt", "r11"), "id"},
		{frame.New("SUBSCRIBE", "id", "s1", "destination", "/queue/a", "ack", "sometimes", "receipt", "r12"), "ack mode"},
		{frame.New("SEND", "destination", "/queue/a", "priority", "high", "receipt", "r13"), "priority"},
		{frame.New("BEGIN", "transaction", "t1", "receipt", "r14"), ""},
		{frame.New("BEGIN", "transaction", "t1", "receipt", "r15"), "already"},
	}
	for _, c := range cases {
		rc.send(c.f)
		f := rc.read()
		if c.want == "" {
			require.Equal(t, "RECEIPT", f.Command)
			continue
		}
		require.Equal(t, "ERROR", f.Command, "for %s %v", c.f.Command, c.f.Header)
		assert.Contains(t, f.Header.Get("message"), c.want)
		assert.Equal(t, c.f.Header.Get("receipt"), f.Header.Get("receipt-id"))
	}
	rc.send(frame.New("SEND", "destination", "/queue/still-here", "receipt", "last"))
	f := rc.read()
	require.Equal(t, "RECEIPT", f.Command)
	assert.Equal(t, "last", f.Header.Get("receipt-id"))
}

func TestReceiptsOnEveryFrame(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	rc := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", rc.connect().Command)
	frames := []*frame.Frame{
		frame.New("SUBSCRIBE", "id", "0", "destination", "/queue/r", "ack", "client-individual", "receipt", "sub"),
		frame.New("BEGIN", "transaction", "tx", "receipt", "begin"),
		frame.New("SEND", "destination", "/queue/r", "transaction", "tx", "receipt", "send"),
		frame.New("COMMIT", "transaction", "tx", "receipt", "commit"),
	}
	for _, f := range frames {
		rc.send(f)
		got := rc.read()
		require.Equal(t, "RECEIPT", got.Command)
		assert.Equal(t, f.Header.Get("receipt"), got.Header.Get("receipt-id"))
	}
	m := rc.read()
	require.Equal(t, "MESSAGE", m.Command)
	assert.Equal(t, "0", m.Header.Get("subscription"))
	rc.send(frame.New("NACK", "id", m.Header.Get("ack"), "receipt", "nack"))
	assert.Equal(t, "nack", rc.read().Header.Get("receipt-id"))
	rc.send(frame.New("UNSUBSCRIBE", "id", "0", "receipt", "unsub"))
	assert.Equal(t, "unsub", rc.read().Header.Get("receipt-id"))
	rc.send(frame.New("DISCONNECT", "receipt", "bye"))
	assert.Equal(t, "bye", rc.read().Header.Get("receipt-id"))
	rc.expectClosed(5 * time.Second)
}

func TestHeaderEscapingPerVersion(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	for _, v := range []string{"1.0", "1.1", "1.2"} {
		t.Run(v, func(t *testing.T) {
			rc := dialRaw(t, b.Addr)
			rc.send(frame.New("CONNECT", "accept-version", v, "host", "x"))
			f := rc.read()
			require.Equal(t, v, f.Header.Get("version"))
			rc.r.SetVersion(v)
			rc.w.SetVersion(v)
			dest := "/queue/esc-" + v
			rc.send(frame.New("SUBSCRIBE", "id", "s", "destination", dest))
			value := "a:b\\c"
			if v == "1.0" {
				// 1.0 has no escaping: the value is sent and received as written.
				rc.sendRaw("SEND\ndestination:" + dest + "\nk:" + value + "\n\n\x00")
			} else {
				rc.sendRaw("SEND\ndestination:" + dest + "\nk:a\\cb\\\\c\nn:line1\\nline2\n\n\x00")
			}
			m := rc.read()
			require.Equal(t, "MESSAGE", m.Command)
			assert.Equal(t, value, m.Header.Get("k"))
			if v != "1.0" {
				assert.Equal(t, "line1\nline2", m.Header.Get("n"))
			}
		})
	}
}

func TestConnectTimeoutAndMaxConnections(t *testing.T) {
	b := startBroker(t, brokerConfig{URIQuery: "maxConnections=2&connectTimeout=300ms"})
	idle := dialRaw(t, b.Addr)
	f, err := idle.readWithin(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "ERROR", f.Command)
	assert.Contains(t, f.Header.Get("message"), "CONNECT")
	idle.expectClosed(5 * time.Second)
	_ = idle.nc.Close()

	// The refused connection's slot frees once its session has ended.
	connected := func() *rawConn {
		var c *rawConn
		eventually(t, 5*time.Second, "a connection slot", func() bool {
			c = dialRaw(t, b.Addr)
			c.send(frame.New("CONNECT", "accept-version", "1.2", "host", "x"))
			f, err := c.readWithin(2 * time.Second)
			return err == nil && f.Command == "CONNECTED"
		})
		return c
	}
	c1 := connected()
	connected()
	third := dialRaw(t, b.Addr)
	f, err = third.readWithin(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "ERROR", f.Command)
	assert.Contains(t, f.Header.Get("message"), "maximum connections")
	third.expectClosed(5 * time.Second)
	_ = c1.nc.Close()
	connected()
}
