package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/activemq-go/broker/internal/allowedhosts"
)

// Subprotocols are the WebSocket subprotocols a ws or wss connector accepts, as
// ActiveMQ's: the client's first one in this list is chosen. A client offering
// none is served too.
var Subprotocols = []string{"v12.stomp", "v11.stomp", "v10.stomp", "stomp"}

// httpShutdownTimeout bounds the wait, at shutdown, for HTTP requests that have
// not yet become WebSocket connections.
const httpShutdownTimeout = 5 * time.Second

// serveHTTP serves a WebSocket connector's listener until it is closed. Every
// request on any path is a WebSocket upgrade; the STOMP session runs in the
// request's goroutine, counted in s.wg from before the upgrade.
func (s *Server) serveHTTP(l *listener) {
	defer s.wg.Done()
	hs := &http.Server{
		Handler:           s.webSocketHandler(l),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	err := hs.Serve(l.ln)
	if err != nil && !errors.Is(err, http.ErrServerClosed) && s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		s.log.Error("WebSocket connector stopped", slog.String("connector", l.c.Name), slog.Any("err", err))
	}
	// Wait for requests still being upgraded, so that their s.wg.Add precedes
	// this Done; upgraded connections are the sessions' to close.
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if hs.Shutdown(ctx) != nil {
		_ = hs.Close()
	}
}

// webSocketHandler upgrades any request to WebSocket and runs a STOMP session on
// it. Unlike ActiveMQ 5.x, which never looks at it, the Origin header is checked:
// a browser may connect from a page of the broker's own host, or of a host the
// connector's allowedOrigins names; otherwise any web page a user visits could
// reach a broker on their machine or network. Clients that are not browsers send
// no Origin and are let through. Before that a browser's Host is checked (421
// unless it is one of the connector's: an address, localhost, allowedHosts): a page
// of a name rebound to the broker's address sends an Origin equal to its Host.
// Browsers always send an Origin on a WebSocket handshake, so the Host of a client
// that sends none (not a browser, which DNS rebinding cannot drive) is not checked.
func (s *Server) webSocketHandler(l *listener) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.wg.Add(1)
		defer s.wg.Done()
		if r.Header.Get("Origin") != "" && !l.hosts.Allow(r.Host) {
			if ok, more := l.hostLog.Allow(time.Now()); ok {
				s.log.Warn("WebSocket connection refused: its Host is not one of the connector's allowedHosts (a DNS rebinding attempt, or a name to add to the option; logged once a minute)",
					slog.String("connector", l.c.Name), slog.String("remote", r.RemoteAddr),
					slog.String("host", truncate(r.Host, 200)), slog.Int("refusedSinceLastLine", more))
			}
			http.Error(w, "misdirected request: this connector does not serve the host "+
				strconv.Quote(truncate(allowedhosts.Name(r.Host), 200))+"; an operator adds the name to the connector's allowedHosts option",
				http.StatusMisdirectedRequest)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			Subprotocols:   Subprotocols,
			OriginPatterns: l.c.AllowedOrigins,
		})
		if err != nil {
			// Accept has answered with the HTTP error.
			if origin := r.Header.Get("Origin"); origin != "" && strings.Contains(err.Error(), "Origin") {
				if ok, more := l.originLog.Allow(time.Now()); ok {
					s.log.Warn("WebSocket connection refused: its Origin is not allowed (add it to the connector's allowedOrigins; logged once a minute)",
						slog.String("connector", l.c.Name), slog.String("remote", r.RemoteAddr),
						slog.String("origin", truncate(origin, 200)), slog.Int("refusedSinceLastLine", more))
				}
				return
			}
			s.log.Debug("WebSocket upgrade failed", slog.String("connector", l.c.Name),
				slog.String("remote", r.RemoteAddr), slog.Any("err", err))
			return
		}
		wc := newWSConn(c, r)
		loggedIn, ok := s.pendingLogin()
		if !ok {
			s.refusePending(l, wc)
			return
		}
		s.serveConn(l, wc, loggedIn)
	})
}

// wsConn is a WebSocket connection as the net.Conn of a STOMP session. Reads
// return the bytes of the messages one after another, text or binary alike, so a
// message may hold several frames and a frame may span messages; the STOMP
// reader's limits apply to the stream, so no message is held whole. Writes go out
// as messages of whole frames (see Write): text when their bytes are valid UTF-8,
// binary otherwise.
//
// Deadlines are enforced by coder/websocket, which cannot interrupt a read or a
// write without closing the connection: a read or write deadline that passes
// closes it, and later calls fail with os.ErrDeadlineExceeded. The session
// treats an expired deadline as the end of the connection in any case.
type wsConn struct {
	c             *websocket.Conn
	local, remote net.Addr
	rd, wd        deadline
	r             io.Reader // the message being read; nil between messages
	eof           bool
	pending       []byte               // written bytes of a frame not yet complete
	tls           *tls.ConnectionState // the request's, for wss
}

var _ net.Conn = (*wsConn)(nil)

func newWSConn(c *websocket.Conn, r *http.Request) *wsConn {
	c.SetReadLimit(-1) // the STOMP reader limits frames, not messages
	wc := &wsConn{c: c, remote: requestAddr(r.RemoteAddr), tls: r.TLS}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		wc.local = a
	} else {
		wc.local = requestAddr("")
	}
	wc.rd.init()
	wc.wd.init()
	return wc
}

func (wc *wsConn) Read(p []byte) (int, error) {
	for {
		if wc.eof {
			return 0, io.EOF
		}
		if wc.r == nil {
			_, r, err := wc.c.Reader(wc.rd.ctx)
			if err != nil {
				return 0, wc.readErr(err)
			}
			wc.r = r
		}
		n, err := wc.r.Read(p)
		if errors.Is(err, io.EOF) {
			wc.r, err = nil, nil
		}
		if n > 0 || err != nil {
			return n, wc.readErr(err)
		}
	}
}

// readErr maps the end of the connection to io.EOF and an expired deadline to
// os.ErrDeadlineExceeded, as a TCP connection reports them.
func (wc *wsConn) readErr(err error) error {
	switch {
	case err == nil:
		return nil
	case wc.rd.expired():
		return os.ErrDeadlineExceeded
	}
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		wc.eof = true
		return io.EOF
	}
	return err
}

func (wc *wsConn) Write(p []byte) (int, error) {
	// The session's buffer may fill mid-frame and pass on part of one; that part waits
	// for the rest, so that every message holds whole frames, as ActiveMQ sends them
	// (older stomp.js parses each message on its own).
	wc.pending = append(wc.pending, p...)
	end := frameBoundary(wc.pending)
	if end == 0 {
		return len(p), nil
	}
	msg := wc.pending[:end]
	typ := websocket.MessageText
	if !utf8.Valid(msg) {
		typ = websocket.MessageBinary
	}
	err := wc.c.Write(wc.wd.ctx, typ, msg)
	wc.pending = append(wc.pending[:0], wc.pending[end:]...)
	if err != nil {
		if wc.wd.expired() {
			return 0, os.ErrDeadlineExceeded
		}
		return 0, err
	}
	return len(p), nil
}

// frameBoundary returns how much of b is whole frames and heart-beats: up to the last
// NUL, and the EOLs after it when nothing else follows; all of b when it is only EOLs.
// A NUL inside a body with content-length can end a message early; the client's
// reader then gets that frame in two messages, as it would from any stream.
func frameBoundary(b []byte) int {
	end := bytes.LastIndexByte(b, 0) + 1
	if len(bytes.Trim(b[end:], "\r\n")) == 0 {
		return len(b)
	}
	return end
}

// Close ends the connection with a normal closure.
func (wc *wsConn) Close() error {
	err := wc.c.Close(websocket.StatusNormalClosure, "")
	wc.rd.stop()
	wc.wd.stop()
	return err
}

// TLSState is the TLS connection state of a wss connection (nil for ws): its client
// certificate can name the user.
func (wc *wsConn) TLSState() *tls.ConnectionState { return wc.tls }

func (wc *wsConn) LocalAddr() net.Addr  { return wc.local }
func (wc *wsConn) RemoteAddr() net.Addr { return wc.remote }

func (wc *wsConn) SetDeadline(t time.Time) error {
	wc.rd.set(t)
	wc.wd.set(t)
	return nil
}

func (wc *wsConn) SetReadDeadline(t time.Time) error  { wc.rd.set(t); return nil }
func (wc *wsConn) SetWriteDeadline(t time.Time) error { wc.wd.set(t); return nil }

// deadline cancels its context when the time set passes; once cancelled it stays
// so (coder/websocket has closed the connection by then).
type deadline struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	timer  *time.Timer
}

func (d *deadline) init() {
	d.ctx, d.cancel = context.WithCancel(context.Background())
}

// set moves the deadline to t; the zero time means none.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if t.IsZero() {
		return
	}
	d.timer = time.AfterFunc(max(time.Until(t), 0), d.cancel)
}

func (d *deadline) expired() bool { return d.ctx.Err() != nil }

// stop releases the timer.
func (d *deadline) stop() {
	d.set(time.Time{})
	d.cancel()
}

// requestAddr parses an http.Request's RemoteAddr; one that is not ip:port is
// kept as text.
func requestAddr(s string) net.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return net.TCPAddrFromAddrPort(ap)
	}
	return textAddr(s)
}

// textAddr is an address known only as text.
type textAddr string

func (a textAddr) Network() string { return "websocket" }
func (a textAddr) String() string  { return string(a) }

// truncate shortens an attacker-supplied string for a log line.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
