package tests

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/stompcodec"
)

// wsClient is a STOMP client over WebSocket: ws is the connection, raw reads and
// writes frames over it (each flush one text message).
type wsClient struct {
	ws  *websocket.Conn
	raw *rawConn
}

// dialWS opens a WebSocket to url offering subprotocol, with tlsCfg for wss.
func dialWS(t testing.TB, url, subprotocol string, tlsCfg *tls.Config) *wsClient {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	opts := &websocket.DialOptions{Subprotocols: []string{subprotocol}}
	if tlsCfg != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	}
	ws, resp, err := websocket.Dial(ctx, url, opts)
	require.NoError(t, err)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	assert.Equal(t, subprotocol, ws.Subprotocol())
	ws.SetReadLimit(-1)
	t.Cleanup(func() { _ = ws.CloseNow() })
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	lim := stompcodec.DefaultLimits()
	lim.MaxFrameSize = 64 << 20
	return &wsClient{ws: ws, raw: &rawConn{t: t, nc: nc, r: stompcodec.NewReader(nc, lim), w: stompcodec.NewWriter(nc, 0)}}
}

// message sends one WebSocket text message as is.
func (c *wsClient) message(t testing.TB, s string) {
	t.Helper()
	require.NoError(t, c.ws.Write(ctxTimeout(t, 5*time.Second), websocket.MessageText, []byte(s)))
}

// subscribeOverWS connects c and subscribes to dest, waiting for the receipt.
func subscribeOverWS(t testing.TB, c *wsClient, dest string) {
	t.Helper()
	f := c.raw.connect("heart-beat", "0,0")
	require.Equal(t, "CONNECTED", f.Command, "%v", f)
	assert.Equal(t, "1.2", f.Header.Get("version"))
	c.raw.send(frame.New("SUBSCRIBE", "id", "0", "destination", dest, "ack", "auto", "receipt", "sub"))
	f = c.raw.read()
	require.Equal(t, "RECEIPT", f.Command, "%v", f)
	require.Equal(t, "sub", f.Header.Get("receipt-id"))
}

// expectMessage reads the next frame over c and requires a MESSAGE with body.
func expectMessage(t testing.TB, c *wsClient, body string) {
	t.Helper()
	f := c.raw.read()
	require.Equal(t, "MESSAGE", f.Command, "%v", f)
	assert.Equal(t, body, string(f.Body))
}

// TestWebSocketConnector: a STOMP client on a ws connector (subprotocol v12.stomp)
// receives what a TCP client sends, and sends what a TCP client receives.
func TestWebSocketConnector(t *testing.T) {
	p := startConnectors(t, "", "stomp", "stomp://127.0.0.1:0", "ws", "ws://0.0.0.0:0")
	wsAddr := strings.Replace(p.connectorAddr("ws"), "0.0.0.0", "127.0.0.1", 1)
	wsAddr = strings.Replace(wsAddr, "[::]", "127.0.0.1", 1)
	c := dialWS(t, "ws://"+wsAddr+"/any/path", "v12.stomp", nil)
	subscribeOverWS(t, c, "/queue/ws")

	tcp := dial(t, p.connectorAddr("stomp"))
	require.NoError(t, tcp.Send("/queue/ws", "text/plain", []byte("hello websocket"), stomp.SendOpt.Receipt))
	expectMessage(t, c, "hello websocket")

	// And back: SEND over WebSocket, MESSAGE over TCP.
	sub, err := tcp.Subscribe("/queue/from-ws", stomp.AckAuto)
	require.NoError(t, err)
	c.raw.send(frame.New("SEND", "destination", "/queue/from-ws", "receipt", "s1", "content-type", "text/plain"))
	f := c.raw.read()
	require.Equal(t, "RECEIPT", f.Command, "%v", f)
	receive(t, sub, "")

	// The older subprotocols and the bare "stomp" are accepted too.
	for _, sp := range []string{"v11.stomp", "v10.stomp", "stomp"} {
		c := dialWS(t, "ws://"+wsAddr+"/", sp, nil)
		f := c.raw.connect()
		require.Equal(t, "CONNECTED", f.Command, "%s: %v", sp, f)
	}
}

// TestWebSocketSecure: the same over wss, with the sslContext certificate.
func TestWebSocketSecure(t *testing.T) {
	pki := newTestPKI(t)
	p := startConnectors(t, pki.sslContextYAML(false), "stomp", "stomp://127.0.0.1:0", "wss", "wss://127.0.0.1:0")
	c := dialWS(t, "wss://"+p.connectorAddr("wss")+"/stomp", "v12.stomp", pki.clientTLS(false))
	subscribeOverWS(t, c, "/topic/wss")
	tcp := dial(t, p.connectorAddr("stomp"))
	require.NoError(t, tcp.Send("/topic/wss", "text/plain", []byte("hello wss"), stomp.SendOpt.Receipt))
	expectMessage(t, c, "hello wss")

	// Plain ws:// to the wss port fails without harm.
	ctx := ctxTimeout(t, 10*time.Second)
	_, _, err := websocket.Dial(ctx, "ws://"+p.connectorAddr("wss")+"/", nil)
	require.Error(t, err)
	require.False(t, p.Exited())
}

// TestWebSocketFramesAcrossMessages: a frame split across two WebSocket messages,
// several frames and heart-beat EOLs in one message, and a binary message all work.
func TestWebSocketFramesAcrossMessages(t *testing.T) {
	p := startConnectors(t, "", "stomp", "stomp://127.0.0.1:0", "ws", "ws://127.0.0.1:0")
	tcp := dial(t, p.connectorAddr("stomp"))
	sub, err := tcp.Subscribe("/queue/split", stomp.AckAuto)
	require.NoError(t, err)
	c := dialWS(t, "ws://"+p.connectorAddr("ws")+"/", "v12.stomp", nil)
	f := c.raw.connect()
	require.Equal(t, "CONNECTED", f.Command, "%v", f)

	c.message(t, "SEND\ndestination:/queue/split\nreceipt:r1\ncontent-type:text/plain\n\nhello, ")
	c.message(t, "split frame\x00")
	f = c.raw.read()
	require.Equal(t, "RECEIPT", f.Command, "%v", f)
	assert.Equal(t, "r1", f.Header.Get("receipt-id"))

	c.message(t, "\n\r\nSEND\ndestination:/queue/split\n\none\x00\nSEND\ndestination:/queue/split\nreceipt:r2\n\ntwo\x00\n")
	f = c.raw.read()
	require.Equal(t, "RECEIPT", f.Command, "%v", f)
	assert.Equal(t, "r2", f.Header.Get("receipt-id"))

	require.NoError(t, c.ws.Write(ctxTimeout(t, 5*time.Second), websocket.MessageBinary,
		[]byte("SEND\ndestination:/queue/split\ncontent-length:3\nreceipt:r3\n\n\xff\x00\xfe\x00")))
	f = c.raw.read()
	require.Equal(t, "RECEIPT", f.Command, "%v", f)

	want := []string{"hello, split frame", "one", "two", "\xff\x00\xfe"}
	for _, body := range want {
		receive(t, sub, body)
	}
}

// TestWebSocketConnectorLimits: maxConnections and maxFrameSize apply to a ws
// connector as to a TCP one.
func TestWebSocketConnectorLimits(t *testing.T) {
	p := startConnectors(t, "", "ws", "ws://127.0.0.1:0?maxConnections=1&maxFrameSize=1024")
	url := "ws://" + p.connectorAddr("ws") + "/"
	first := dialWS(t, url, "v12.stomp", nil)
	f := first.raw.connect()
	require.Equal(t, "CONNECTED", f.Command, "%v", f)

	second := dialWS(t, url, "v12.stomp", nil)
	f = second.raw.read()
	require.Equal(t, "ERROR", f.Command, "%v", f)
	assert.Contains(t, f.Header.Get("message"), "maximum connections (1)")

	first.message(t, "SEND\ndestination:/queue/big\n\n"+strings.Repeat("x", 2048)+"\x00")
	f = first.raw.read()
	require.Equal(t, "ERROR", f.Command, "%v", f)
	first.raw.expectClosed(10 * time.Second)
	require.False(t, p.Exited())
}

// TestWebSocketMessagesHoldWholeFrames: deliveries larger than the session's write
// buffer still reach the client as WebSocket messages of whole frames, as ActiveMQ
// sends them (older stomp.js parses each message on its own), each ending at its NUL
// without the LF that follows it on a stream.
func TestWebSocketMessagesHoldWholeFrames(t *testing.T) {
	p := startConnectors(t, "", "stomp", "stomp://127.0.0.1:0", "ws", "ws://127.0.0.1:0")
	c := dialWS(t, "ws://"+p.connectorAddr("ws")+"/", "v12.stomp", nil)
	subscribeOverWS(t, c, "/queue/whole")

	tcp := dial(t, p.connectorAddr("stomp"))
	const n = 200
	body := []byte(strings.Repeat("w", 1000))
	for i := range n {
		opts := []func(*frame.Frame) error{}
		if i == n-1 {
			opts = append(opts, stomp.SendOpt.Receipt)
		}
		require.NoError(t, tcp.Send("/queue/whole", "text/plain", body, opts...))
	}
	frames, messages := 0, 0
	for frames < n {
		typ, b, err := c.ws.Read(ctxTimeout(t, 10*time.Second))
		require.NoError(t, err)
		require.Equal(t, websocket.MessageText, typ)
		messages++
		trimmed := strings.TrimRight(string(b), "\r\n")
		require.True(t, trimmed == "" || strings.HasSuffix(trimmed, "\x00"), "message %d ends mid-frame", messages)
		require.True(t, trimmed == "" || trimmed == string(b), "message %d has an EOL after its last NUL", messages)
		require.False(t, strings.Contains(string(b), "\x00\n"), "message %d: a frame followed by an EOL", messages)
		frames += strings.Count(string(b), "MESSAGE\n")
	}
	assert.Equal(t, n, frames)
	assert.Less(t, messages, n, "frames written together go in one message")
}
