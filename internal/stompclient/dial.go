package stompclient

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// subprotocols are offered on a WebSocket, highest first.
var subprotocols = []string{"v12.stomp", "v11.stomp", "v10.stomp"}

// dialTransport opens the byte stream STOMP runs over: TCP, TLS, or a WebSocket (over
// TLS for wss) whose writes each send one message.
func dialTransport(ctx context.Context, u *URL, o Options) (net.Conn, error) {
	var cfg *tls.Config
	if u.TLS() {
		cfg = tlsConfig(u, o.TLS)
	}
	if u.WebSocket() {
		return dialWebSocket(ctx, u, cfg, o.MaxFrameSize)
	}
	d := &net.Dialer{}
	if cfg != nil {
		return (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", u.Addr())
	}
	return d.DialContext(ctx, "tcp", u.Addr())
}

func tlsConfig(u *URL, base *tls.Config) *tls.Config {
	var cfg *tls.Config
	if base != nil {
		cfg = base.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Host
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

func dialWebSocket(ctx context.Context, u *URL, cfg *tls.Config, maxFrame int64) (net.Conn, error) {
	opts := &websocket.DialOptions{Subprotocols: subprotocols}
	if cfg != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}}
	}
	ws, resp, err := websocket.Dial(ctx, u.wsURL(), opts)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(maxFrame + 1) // the codec checks the frame; one frame a message
	ctx, cancel := context.WithCancel(context.Background())
	return &wsConn{ws: ws, ctx: ctx, cancel: cancel, remote: wsAddr(u.wsURL())}, nil
}

// wsConn is a WebSocket as the byte stream STOMP runs over. Reads run through the
// messages, text or binary, as one stream (a frame may span messages and a message may
// hold several frames; the broker sends one frame a message, text when it is UTF-8 and
// binary otherwise, and a bare EOL for a heart-beat). Each Write sends one message: text
// when it is valid UTF-8, binary otherwise, as the broker does (a browser-side reader
// fails on a text message that is not UTF-8). websocket.NetConn would refuse messages
// of the other type than its one.
type wsConn struct {
	ws     *websocket.Conn
	ctx    context.Context // of reads; cancelled by Close
	cancel context.CancelFunc
	r      io.Reader // the message being read
	remote wsAddr
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			_, r, err := c.ws.Reader(c.ctx)
			if err != nil {
				if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
					return 0, io.EOF
				}
				return 0, err
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if errors.Is(err, io.EOF) {
			c.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	typ := websocket.MessageText
	if !utf8.Valid(p) {
		typ = websocket.MessageBinary
	}
	if err := c.ws.Write(context.Background(), typ, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes at once, without the closing handshake: Conn.Disconnect has had the
// broker's receipt by then, and the broker closes its side after it.
func (c *wsConn) Close() error {
	c.cancel()
	return c.ws.CloseNow()
}

func (c *wsConn) LocalAddr() net.Addr  { return wsAddr("") }
func (c *wsConn) RemoteAddr() net.Addr { return c.remote }

// errDeadline: the client never sets deadlines (Close interrupts instead).
var errDeadline = errors.New("stompclient: no deadlines on a WebSocket connection")

func (c *wsConn) SetDeadline(time.Time) error      { return errDeadline }
func (c *wsConn) SetReadDeadline(time.Time) error  { return errDeadline }
func (c *wsConn) SetWriteDeadline(time.Time) error { return errDeadline }

// wsAddr is the URL of a WebSocket connection as its net.Addr.
type wsAddr string

func (a wsAddr) Network() string { return "websocket" }
func (a wsAddr) String() string  { return string(a) }
