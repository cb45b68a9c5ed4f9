package tests

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// ---- go-stomp clients ------------------------------------------------------------------

// closeWatch is the socket of a go-stomp connection whose Close returns only once the
// broker has closed its side (or after 5 s): it half-closes, then waits for the end of
// the stream. go-stomp's Disconnect returns at the DISCONNECT receipt, which the broker
// writes before it has let go of the connection's client-id and durable subscriptions
// (a broker bug: TestDurableClientIDInUse/reconnect-right-after-DISCONNECT-receipt); with
// this socket, the other tests may reconnect with the same client-id as soon as
// Disconnect returns.
type closeWatch struct {
	net.Conn
	eof  chan struct{}
	once sync.Once
}

func (c *closeWatch) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.once.Do(func() { close(c.eof) })
	}
	return n, err
}

func (c *closeWatch) Close() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	select {
	case <-c.eof:
	case <-time.After(5 * time.Second):
	}
	return c.Conn.Close()
}

// durDial connects go-stomp with a client-id; it is disconnected at the end of the test.
func durDial(t testing.TB, addr, clientID string) *stomp.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	c, err := stomp.Connect(&closeWatch{Conn: nc, eof: make(chan struct{})},
		stomp.ConnOpt.Logger(quietLogger{}), stomp.ConnOpt.Host("localhost"),
		stomp.ConnOpt.Header("client-id", clientID),
		stomp.ConnOpt.RcvReceiptTimeout(10*time.Second),
		stomp.ConnOpt.UnsubscribeReceiptTimeout(3*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.MustDisconnect() })
	return c
}

// goSubscribe subscribes with extra headers (name, value, ...). go-stomp does not wait
// for the broker: a test that needs the subscription registered before it publishes
// calls syncSubscriptions (only while no backlog is due to arrive: a RECEIPT queued
// behind more MESSAGEs than go-stomp buffers would never be read).
func goSubscribe(t testing.TB, c *stomp.Conn, dest string, ack stomp.AckMode, headers ...string) *stomp.Subscription {
	t.Helper()
	sub, err := c.Subscribe(dest, ack, headerOpts(headers)...)
	require.NoError(t, err)
	return sub
}

func headerOpts(headers []string) []func(*frame.Frame) error {
	opts := make([]func(*frame.Frame) error, 0, len(headers)/2)
	for i := 0; i+1 < len(headers); i += 2 {
		opts = append(opts, stomp.SubscribeOpt.Header(headers[i], headers[i+1]))
	}
	return opts
}

// goPublish sends bodies to dest, each with a receipt, persistent or not.
func goPublish(t testing.TB, c *stomp.Conn, dest string, persistent bool, bodies ...string) {
	t.Helper()
	for _, body := range bodies {
		opts := []func(*frame.Frame) error{stomp.SendOpt.Receipt}
		if persistent {
			opts = append(opts, stomp.SendOpt.Header("persistent", "true"))
		}
		require.NoError(t, c.Send(dest, "text/plain", []byte(body), opts...), "send %s", body)
	}
}

// goExpect requires the next messages of sub to have these bodies, in this order.
func goExpect(t testing.TB, sub *stomp.Subscription, want ...string) []*stomp.Message {
	t.Helper()
	var got []*stomp.Message
	for i, w := range want {
		m := recv(t, sub)
		require.Equal(t, w, string(m.Body), "message %d of %v", i, want)
		got = append(got, m)
	}
	return got
}

// ---- raw STOMP 1.2 clients (jmsClient) ------------------------------------------------

// durConnect connects the raw client with a client-id (and more CONNECT headers).
func durConnect(t testing.TB, addr, clientID string, headers ...string) *jmsClient {
	t.Helper()
	return jmsDial(t, addr, append([]string{"client-id", clientID}, headers...)...)
}

// durAttach subscribes to the durable subscription name (ActiveMQ's header) and returns
// the subscription id once the broker has registered it.
func durAttach(c *jmsClient, dest, name string, headers ...string) string {
	c.t.Helper()
	return c.subscribe(dest, append([]string{"activemq.subscriptionName", name}, headers...)...)
}

// durPublish sends bodies to dest, each with a receipt; headers are added to each.
func durPublish(c *jmsClient, dest string, persistent bool, bodies []string, headers ...string) {
	c.t.Helper()
	if persistent {
		headers = append([]string{"persistent", "true"}, headers...)
	}
	for _, b := range bodies {
		c.send(dest, b, headers...)
	}
}

// durExpect requires the next messages for sub to have these bodies, in this order.
func durExpect(c *jmsClient, sub string, want ...string) []*frame.Frame {
	c.t.Helper()
	var got []*frame.Frame
	for i, w := range want {
		m := c.nextWithin(sub, 10*time.Second)
		if m == nil {
			c.t.Fatalf("subscription %s: message %d of %v never arrived (got %v)", sub, i, want, jmsBodies(got))
		}
		if string(m.Body) != w {
			c.t.Fatalf("subscription %s: message %d is %q, want %q (want %v, got %v so far)", sub, i, m.Body, w, want, jmsBodies(got))
		}
		got = append(got, m)
	}
	return got
}

// durQuiet requires that sub gets nothing more: a receipt proves the broker handled
// everything before, then nothing may arrive for 300 ms.
func durQuiet(c *jmsClient, sub string) {
	c.t.Helper()
	durQuietAll(jmsSub{c, sub})
}

// durQuietAll is durQuiet for several subscriptions at once: every connection proves
// with a receipt that the broker handled its frames, then none of them gets anything for
// 300 ms.
func durQuietAll(subs ...jmsSub) {
	for _, s := range subs {
		s.c.t.Helper()
		s.c.sync()
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for _, s := range subs {
		if m := s.c.nextWithin(s.id, max(time.Until(deadline), 10*time.Millisecond)); m != nil {
			body := m.Body
			if len(body) > 40 {
				body = append(body[:40:40], "..."...)
			}
			s.c.t.Fatalf("unexpected message on %s: %q %v", s.id, body, m.Header)
		}
	}
}

// durClosed waits until the broker closes c (within d) and returns the ERROR it sent
// before (nil if none).
func durClosed(c *jmsClient, d time.Duration) *frame.Frame {
	c.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var last *frame.Frame
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return last
			}
			if f.Command == "ERROR" {
				last = f
			}
		case <-timer.C:
			c.t.Fatalf("the broker did not close the connection within %v", d)
		}
	}
}

// durAwaitFree waits until clientID can connect again (the broker has let go of the
// connection that had it), proving it with a connection that then leaves.
func durAwaitFree(t testing.TB, addr, clientID string) {
	t.Helper()
	eventually(t, 10*time.Second, "client-id "+clientID+" to be free", func() bool {
		rc := dialRaw(t, addr)
		f := rc.connect("client-id", clientID)
		if f.Command != "CONNECTED" {
			require.Contains(t, f.Header.Get("message"), "already connected")
			_ = rc.nc.Close()
			return false
		}
		rc.send(frame.New("DISCONNECT", "receipt", "bye"))
		require.Equal(t, "RECEIPT", rc.read().Command)
		rc.expectClosed(5 * time.Second)
		return true
	})
}

// padded returns each of bodies followed by ":" and n bytes of padding.
func padded(bodies []string, n int) []string {
	pad := strings.Repeat("x", n)
	out := make([]string, len(bodies))
	for i, b := range bodies {
		out[i] = b + ":" + pad
	}
	return out
}

func numbered(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%02d", prefix, i))
	}
	return out
}

// ---- brokers ----------------------------------------------------------------------------

// startBrokerKeys is startBroker with more keys in the broker: section of the
// configuration, one YAML line each ("allowLinkStealing: true").
func startBrokerKeys(t testing.TB, bc brokerConfig, keys ...string) *brokerProc {
	t.Helper()
	if bc.DataDir == "" {
		bc.DataDir = t.TempDir()
	}
	if bc.Adapter == "" {
		bc.Adapter = "memory: {}"
	}
	var bk strings.Builder
	for _, k := range keys {
		bk.WriteString("  " + k + "\n")
	}
	cfg := fmt.Sprintf("broker:\n  brokerName: e2e\n  dataDirectory: %s\n%spersistenceAdapter:\n  %s\ntransportConnectors:\n  - name: stomp\n    uri: stomp://127.0.0.1:0\n%s",
		bc.DataDir, bk.String(), bc.Adapter, bc.Extra)
	path := filepath.Join(t.TempDir(), "broker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return startBrokerFile(t, path, bc.DataDir, bc.Env...)
}

// awaitLogLine waits up to d for a line of the broker's log that contains every part.
func awaitLogLine(t testing.TB, b *brokerProc, d time.Duration, parts ...string) string {
	t.Helper()
	var found string
	eventually(t, d, fmt.Sprintf("a broker log line with %q", parts), func() bool {
		found = logLine(b, parts...)
		return found != ""
	})
	return found
}

// logLine returns the first line of the broker's log that contains every part, or "".
func logLine(b *brokerProc, parts ...string) string {
lines:
	for _, line := range strings.Split(b.Log(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue lines
			}
		}
		return line
	}
	return ""
}

// dirSize is the total size of the regular files under dir.
func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	}))
	return n
}
