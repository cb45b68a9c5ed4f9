package broker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

func TestLogLimitOnceAMinute(t *testing.T) {
	var l logLimit
	t0 := time.Unix(1_700_000_000, 0)
	ok, n := l.allow(t0)
	assert.True(t, ok)
	assert.Zero(t, n)
	for i := range 3 {
		ok, _ = l.allow(t0.Add(time.Duration(i+1) * time.Second))
		assert.False(t, ok)
	}
	ok, n = l.allow(t0.Add(logEvery))
	assert.True(t, ok, "a minute later")
	assert.Equal(t, 3, n, "the lines held back meanwhile are counted")
	ok, _ = l.allow(t0.Add(logEvery + time.Second))
	assert.False(t, ok)
}

// lockedBuffer collects a logger's output from any goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// TestRefusedSendLogIsRateLimited: every non-persistent message that finds a queue's
// memory full is refused, but the log says so once a minute per connection.
func TestRefusedSendLogIsRateLimited(t *testing.T) {
	const line = "non-persistent message refused"
	var logs lockedBuffer
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), DestinationMemoryLimit: 2048})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	dest := []destinations.Name{{Kind: destinations.Queue, Name: "full"}}
	flood := func(c *Conn) (refused int) {
		for range 100 {
			err := c.Send(context.Background(), dest, &persistence.Message{Body: make([]byte, 512), Priority: 4}, "", func(error) {})
			var be *Error
			if errors.As(err, &be) {
				refused++
			} else {
				require.NoError(t, err)
			}
		}
		return refused
	}
	c1, err := b.Connect(context.Background(), ConnectInfo{})
	require.NoError(t, err)
	t.Cleanup(c1.Close)
	require.Greater(t, flood(c1), 90)
	assert.Equal(t, 1, logs.count(line))

	c2, err := b.Connect(context.Background(), ConnectInfo{})
	require.NoError(t, err)
	t.Cleanup(c2.Close)
	require.Equal(t, 100, flood(c2))
	assert.Equal(t, 2, logs.count(line), "one line per connection")
}
