// Package transport listens on the configured connectors, enforces the connection limit
// and runs one STOMP session per accepted connection. Shutdown follows net/http: stop
// accepting, close every connection (each session gives its unacknowledged messages back
// to the broker), wait for the sessions to end.
package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/transport/stomp"
	"github.com/activemq-go/broker/transport/stomp/codec"
)

// Connector is one listening endpoint.
type Connector struct {
	Name           string
	Addr           string // host:port
	MaxConnections int    // default 1000
	Session        stomp.Config
}

// Server runs the connectors.
type Server struct {
	b   *broker.Broker
	log *slog.Logger

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
}

// ErrServerClosed is returned by Start after Shutdown.
var ErrServerClosed = errors.New("transport: server closed")

// NewServer returns a server for b.
func NewServer(b *broker.Broker, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
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
		opened = append(opened, &listener{c: c, ln: ln})
	}
	for _, l := range opened {
		s.listeners = append(s.listeners, l)
		s.log.Info("listening", slog.String("connector", l.c.Name), slog.String("addr", l.ln.Addr().String()))
		s.wg.Add(1)
		go s.accept(l)
	}
	return nil
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
		l.mu.Lock()
		over := l.active >= l.c.MaxConnections
		if !over {
			l.active++
		}
		l.mu.Unlock()
		if over {
			s.wg.Add(1)
			go s.refuse(l, nc)
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			stomp.Serve(s.ctx, nc, s.b, l.c.Session)
			l.mu.Lock()
			l.active--
			l.mu.Unlock()
		}()
	}
}

// refuse tells a client over the connection limit why, then closes.
func (s *Server) refuse(l *listener, nc net.Conn) {
	defer s.wg.Done()
	s.log.Warn("connection refused: maximum connections reached",
		slog.String("connector", l.c.Name), slog.Int("maxConnections", l.c.MaxConnections),
		slog.String("remote", nc.RemoteAddr().String()))
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	w := codec.NewWriter(nc, 512)
	msg := fmt.Sprintf("maximum connections (%d) reached on connector %s", l.c.MaxConnections, l.c.Name)
	f := frame.New("ERROR", "message", msg, "content-type", "text/plain")
	_ = w.WriteFrame(f)
	_ = w.Flush()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
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
		_ = l.ln.Close()
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
