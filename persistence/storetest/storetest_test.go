package storetest_test

import (
	"context"
	"sync"
	"testing"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/persistence/storetest"
)

// The suite checks itself: memstore runs it from its own package as a volatile store;
// here a handle that keeps one memstore across Close and open stands in for a durable
// adapter, so the Durable cases run too.

// handle is one open "connection" to a shared memstore; Close ends only the handle.
type handle struct {
	s      *memstore.Store
	mu     sync.RWMutex
	closed bool
}

func (h *handle) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}

func (h *handle) Recover(ctx context.Context) (*persistence.Recovered, error) {
	if h.isClosed() {
		return nil, persistence.ErrClosed
	}
	return h.s.Recover(ctx)
}

func (h *handle) Begin() persistence.Batch { return &handleBatch{Batch: h.s.Begin(), h: h} }

func (h *handle) Scan(ctx context.Context, dest string, after uint64, max int, fn func(*persistence.Message) error) error {
	if h.isClosed() {
		return persistence.ErrClosed
	}
	return h.s.Scan(ctx, dest, after, max, fn)
}

func (h *handle) ScanSub(ctx context.Context, sub persistence.SubKey, after uint64, max int, fn func(*persistence.Message) error) error {
	if h.isClosed() {
		return persistence.ErrClosed
	}
	return h.s.ScanSub(ctx, sub, after, max, fn)
}

func (h *handle) Stats(dest string) (int64, int64) {
	if h.isClosed() {
		return 0, 0
	}
	return h.s.Stats(dest)
}

func (h *handle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

// handleBatch fails its commit once its handle is closed. It deliberately has no
// CommitAsync, so the suite's path for adapters without AsyncBatch runs too.
type handleBatch struct {
	persistence.Batch
	h *handle
}

func (b *handleBatch) Commit(ctx context.Context, d persistence.Durability) error {
	b.h.mu.RLock() // held across the commit: Close waits for it, as a real Close would
	defer b.h.mu.RUnlock()
	if b.h.closed {
		b.Batch.Rollback()
		return persistence.ErrClosed
	}
	return b.Batch.Commit(ctx, d)
}

func TestSuiteOnReopenableMemory(t *testing.T) {
	harness := func(testing.TB) func() (persistence.Store, error) {
		shared := memstore.New()
		return func() (persistence.Store, error) { return &handle{s: shared}, nil }
	}
	storetest.Run(t, harness, storetest.Features{Durable: true})
}
