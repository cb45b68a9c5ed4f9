package broker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

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
