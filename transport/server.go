// Package transport listens on the configured connectors, enforces the connection limit
// and runs one STOMP session per accepted connection: over TCP, over TLS, or over
// WebSocket (plain or TLS), the last adapted to a net.Conn so that the session, its
// limits and its heart-beats are the same on every transport. Shutdown follows
// net/http: stop accepting, close every connection (each session gives its
// unacknowledged messages back to the broker), wait for the sessions to end.
package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/internal/allowedhosts"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/internal/stompcodec"
	"github.com/activemq-go/broker/transport/openwire"
	"github.com/activemq-go/broker/transport/stomp"
)

// Connector is one listening endpoint.
type Connector struct {
	Name           string
	Addr           string // host:port
	MaxConnections int    // default 1000
	Session        stomp.Config
	// OpenWire, when set, makes the connector speak OpenWire (ActiveMQ's own
	// protocol, tcp:// and ssl://) with these settings instead of STOMP.
	OpenWire *openwire.Config
	// TLS, when set, makes the connector serve TLS with this configuration
	// (stomp+ssl, wss).
	TLS *tls.Config
	// WebSocket serves STOMP over WebSocket (ws, wss): an HTTP upgrade on any path.
	WebSocket bool
	// AllowedOrigins are the Origin host patterns a browser's WebSocket handshake
	// may come from besides the broker's own host (coder/websocket's
	// OriginPatterns: "host", "host:port", path.Match globs, "*" for any).
	AllowedOrigins []string
	// AllowedHosts are the host name patterns (package allowedhosts) a browser's
	// WebSocket handshake (one with an Origin) may name in its Host besides the
	// connector's addresses and localhost; others are refused with 421 (DNS
	// rebinding).
	AllowedHosts []string
}

// Server runs the connectors.
type Server struct {
	b   *broker.Broker
	log *slog.Logger

	// Bound, if set, is called by Listen with the address of each connector once all
	// are bound and before any connection is accepted: what the broker must know of
	// its own addresses (the advisories' originBrokerURL) is set before a client can
	// see it.
	Bound func(addrs []net.Addr)

	// MaxPendingLogins caps the connections, all connectors together, accepted and
	// not yet logged in (0: no cap); one more is refused at once.
	MaxPendingLogins int
	pending          atomic.Int64
	pendingLog       loglimit.Limit

	mu        sync.Mutex
	listeners []*listener
	cancel    context.CancelFunc
	ctx       context.Context
	wg        sync.WaitGroup
	closed    bool
}

type listener struct {
	c      Connector
	ln     net.Listener
	mu     sync.Mutex
	active int
	// originLog and hostLog limit the log lines of WebSocket handshakes refused for
	// their Origin and their Host, preLoginLog those of frames refused for
	// maxFrameSizeBeforeLogin.
	originLog, hostLog, preLoginLog loglimit.Limit
	hosts                           *allowedhosts.Hosts // the Hosts a WebSocket connector serves
}

// acquire counts a new connection unless the connector is at its limit.
func (l *listener) acquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active >= l.c.MaxConnections {
		return false
	}
	l.active++
	return true
}

func (l *listener) release() {
	l.mu.Lock()
	l.active--
	l.mu.Unlock()
}

// ErrServerClosed is returned by Start after Shutdown.
var ErrServerClosed = errors.New("transport: server closed")

// NewServer returns a server for b that logs to log (nil: nowhere).
func NewServer(b *broker.Broker, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{b: b, log: log, ctx: ctx, cancel: cancel}
}

// Listen opens every connector and starts accepting. On error nothing stays open.
func (s *Server) Listen(cs []Connector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrServerClosed
	}
	var opened []*listener
	for _, c := range cs {
		ln, err := net.Listen("tcp", c.Addr)
		if err != nil {
			for _, l := range opened {
				_ = l.ln.Close()
			}
			return fmt.Errorf("transport: connector %s: %w", c.Name, err)
		}
		if c.MaxConnections <= 0 {
			c.MaxConnections = 1000
		}
		if c.Session.Logger == nil {
			c.Session.Logger = s.log
		}
		if c.TLS != nil {
			ln = tls.NewListener(ln, c.TLS)
		}
		// ActiveMQ sends a WebSocket message per frame, ending at the NUL; on a stream
		// an LF follows.
		c.Session.NoFrameEOL = c.WebSocket
		if c.WebSocket {
			c.Session.Protocol = broker.ProtocolSTOMPWebSocket
		}
		c.Session.Connector = c.Name
		if c.OpenWire != nil {
			ow := *c.OpenWire
			ow.Connector = c.Name
			if ow.Logger == nil {
				ow.Logger = s.log
			}
			c.OpenWire = &ow
		}
		l := &listener{c: c, ln: ln, hosts: allowedhosts.New(c.AllowedHosts, ln.Addr())}
		l.c.Session.PreLoginLog = l.preLoginLog.Allow
		if l.c.OpenWire != nil {
			l.c.OpenWire.PreLoginLog = l.preLoginLog.Allow
		}
		opened = append(opened, l)
	}
	if s.Bound != nil {
		addrs := make([]net.Addr, len(opened))
		for i, l := range opened {
			addrs[i] = l.ln.Addr()
		}
		s.Bound(addrs)
	}
	for _, l := range opened {
		s.listeners = append(s.listeners, l)
		s.log.Info("listening", slog.String("connector", l.c.Name), slog.String("addr", l.ln.Addr().String()),
			slog.String("transport", l.transportName()))
		s.wg.Add(1)
		if l.c.WebSocket {
			go s.serveHTTP(l)
		} else {
			go s.accept(l)
		}
	}
	return nil
}

// transportName names how the connector carries STOMP, for the log.
func (l *listener) transportName() string {
	switch {
	case l.c.OpenWire != nil && l.c.TLS != nil:
		return "openwire+tls"
	case l.c.OpenWire != nil:
		return "openwire"
	case l.c.WebSocket && l.c.TLS != nil:
		return "wss"
	case l.c.WebSocket:
		return "ws"
	case l.c.TLS != nil:
		return "tls"
	}
	return "tcp"
}

// Addrs returns the bound address of every connector, in configuration order.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.ln.Addr()
	}
	return out
}

func (s *Server) accept(l *listener) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off, keep serving.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", slog.String("connector", l.c.Name), slog.Any("err", err))
			time.Sleep(delay)
			continue
		}
		delay = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		// Counted here, in the order of arrival, rather than in the connection's
		// goroutine.
		loggedIn, ok := s.pendingLogin()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if !ok {
				s.refusePending(l, nc)
				return
			}
			s.serveConn(l, nc, loggedIn)
		}()
	}
}

// pendingLogin counts a connection that has not logged in yet, unless
// MaxPendingLogins are already waiting. loggedIn takes it off the count; it may be
// called more than once.
func (s *Server) pendingLogin() (loggedIn func(), ok bool) {
	if n := s.pending.Add(1); s.MaxPendingLogins > 0 && n > int64(s.MaxPendingLogins) {
		s.pending.Add(-1)
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { s.pending.Add(-1) }) }, true
}

// refusePending refuses a connection over MaxPendingLogins, with a log line once a
// minute: the clients that cause it have not shown who they are.
func (s *Server) refusePending(l *listener, nc net.Conn) {
	s.b.CountRejected(broker.RejectLimit)
	if ok, more := s.pendingLog.Allow(time.Now()); ok {
		s.log.Warn("connection refused: too many connections waiting to log in (broker.maxPendingLogins); logged once a minute",
			slog.String("connector", l.c.Name), slog.Int("maxPendingLogins", s.MaxPendingLogins),
			slog.String("remote", nc.RemoteAddr().String()), slog.Int("refusedSinceLastLine", more))
	}
	s.refuse(l, nc, fmt.Sprintf("too many connections waiting to log in (broker.maxPendingLogins %d); try again later", s.MaxPendingLogins))
}

// serveConn runs a STOMP session on nc, or refuses it when the connector is at its
// connection limit. A TLS handshake happens on the session's first read, within its
// CONNECT deadline. loggedIn is called once the client has logged in, or when the
// connection ends.
func (s *Server) serveConn(l *listener, nc net.Conn, loggedIn func()) {
	defer loggedIn()
	if !l.acquire() {
		s.b.CountRejected(broker.RejectLimit)
		s.log.Warn("connection refused: maximum connections reached",
			slog.String("connector", l.c.Name), slog.Int("maxConnections", l.c.MaxConnections),
			slog.String("remote", nc.RemoteAddr().String()))
		s.refuse(l, nc, fmt.Sprintf("maximum connections (%d) reached on connector %s", l.c.MaxConnections, l.c.Name))
		return
	}
	defer l.release()
	if l.c.OpenWire != nil {
		cfg := *l.c.OpenWire
		cfg.BrokerURL = l.scheme() + "://" + l.ln.Addr().String()
		cfg.LoggedIn = loggedIn
		openwire.Serve(s.ctx, nc, s.b, cfg)
		return
	}
	cfg := l.c.Session
	cfg.LoggedIn = loggedIn
	stomp.Serve(s.ctx, nc, s.b, cfg)
}

// scheme is how the connector's address is written in a URI (BrokerInfo's).
func (l *listener) scheme() string {
	if l.c.TLS != nil {
		return "ssl"
	}
	return "tcp"
}

// refuse tells a client over a connection limit why (msg), then closes. An OpenWire
// client is not told (ActiveMQ closes the socket): its failover transport tries again.
func (s *Server) refuse(l *listener, nc net.Conn, msg string) {
	if l.c.OpenWire != nil {
		_ = nc.Close()
		return
	}
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	w := stompcodec.NewWriter(nc, 512)
	w.SetFrameEOL(!l.c.Session.NoFrameEOL)
	f := frame.New("ERROR", "message", msg, "content-type", "text/plain")
	_ = w.WriteFrame(f)
	_ = w.Flush()
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	buf := make([]byte, 512)
	for {
		if _, err := nc.Read(buf); err != nil {
			break
		}
	}
	_ = nc.Close()
}

// Shutdown stops accepting, closes every connection and waits for their sessions to end
// or ctx to expire.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, l := range s.listeners {
		_ = l.ln.Close() // a WebSocket connector's serveHTTP then returns
	}
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
