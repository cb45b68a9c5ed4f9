package broker

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence/journal"
)

// TestWindowHeapWithinSize: what a queue's in-memory window costs the heap per message
// is about what Message.Size counts for it, so that a queue's memoryLimit (and the
// broker's memoryUsage) bound the memory they name. Persistent 128-byte messages on the
// journal store, no consumer, a limit that keeps them all in memory.
func TestWindowHeapWithinSize(t *testing.T) {
	ctx := context.Background()
	st, err := journal.Open(ctx, journal.Options{Dir: t.TempDir(), SyncStrategy: journal.SyncNever, CheckpointInterval: -1})
	require.NoError(t, err)
	b, err := New(ctx, Options{Name: "t", Store: st, DestinationMemoryLimit: 1 << 30, MemoryUsage: 2 << 30})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	p := newClient(t, b, "")
	p.send("/queue/w", "warm-up", true)
	const n = 20000
	body := strings.Repeat("x", 128)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		p.send("/queue/w", body, true)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	qs, ok := b.QueueStats("w")
	require.True(t, ok)
	require.EqualValues(t, n+1, qs.Pending)
	heap := float64(after.HeapAlloc-before.HeapAlloc) / n
	size := float64(qs.MemoryBytes) / (n + 1)
	t.Logf("per message: heap %.0f B, Size %.0f B (the journal's index included in the heap: 24-29 B)", heap, size)
	require.Less(t, heap, 1.15*size+32, "the window costs more heap than its Size says")
}
