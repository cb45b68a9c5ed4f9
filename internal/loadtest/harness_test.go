package loadtest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/go-stomp/stomp/v3/server"
	"github.com/stretchr/testify/require"
)

// startServer runs go-stomp's in-process server on 127.0.0.1:0 and returns
// its address. go-stomp's server has no shutdown: closing the listener stops
// accepting, its request goroutine stays parked until the test binary exits.
func startServer(t testing.TB) string {
	t.Helper()
	return startServerWith(t, &server.Server{Log: discardLogger{}})
}

func startServerWith(t testing.TB, s *server.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// proxy forwards TCP connections to a broker, records what clients send,
// and can cut every connection at once.
type proxy struct {
	l        net.Listener
	upstream string

	mu    sync.Mutex
	conns []net.Conn
	sent  bytes.Buffer
}

func startProxy(t testing.TB, upstream string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{l: l, upstream: upstream}
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.cut()
	})
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() {
			_, _ = io.Copy(up, io.TeeReader(c, p))
			up.Close()
			c.Close()
		}()
		go func() {
			_, _ = io.Copy(c, up)
			c.Close()
			up.Close()
		}()
	}
}

// Write records client bytes.
func (p *proxy) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent.Write(b)
}

// clientBytes returns everything clients have sent so far.
func (p *proxy) clientBytes() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent.String()
}

// cut closes every proxied connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// writerFunc adapts a function to io.Writer; tests use it to act on the
// first progress line, which proves the run has started.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// onFirstWrite returns a writer that calls fn once, on its first write.
func onFirstWrite(fn func()) io.Writer {
	var once sync.Once
	return writerFunc(func(b []byte) (int, error) {
		once.Do(fn)
		return len(b), nil
	})
}
