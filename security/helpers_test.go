package security

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeClock is the Service's clock in tests: sleeping records the delay and moves
// the clock on at once, unless hold is set, in which case sleepers wait for it to be
// closed (or for their ctx).
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
	hold  chan struct{}
	// asleep receives one value per sleeper that started waiting on hold.
	asleep chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), asleep: make(chan struct{}, 1024)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	hold := c.hold
	if hold == nil {
		c.t = c.t.Add(d)
	}
	c.mu.Unlock()
	if hold == nil {
		return nil
	}
	c.asleep <- struct{}{}
	select {
	case <-hold:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// delays returns the recorded sleeps and forgets them.
func (c *fakeClock) delays() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.slept
	c.slept = nil
	return d
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newTestService makes a Service with a fake clock and a captured log.
func newTestService(t testing.TB, cfg Config) (*Service, *fakeClock, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	s, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	clock := newFakeClock()
	s.now, s.sleep = clock.now, clock.sleep
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, clock, logs
}

// writeFile writes a file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// login is Credentials with a login and passcode from 192.0.2.1.
func login(user, pass string) Credentials {
	return Credentials{Login: user, Passcode: pass, HasLogin: true, RemoteAddr: "192.0.2.1:61613"}
}
