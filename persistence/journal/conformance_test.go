package journal_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/journal"
	"github.com/activemq-go/broker/persistence/storetest"
)

// quiet discards the store's logs in tests.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// osHarness opens the store in a fresh temporary directory on the real file system.
func osHarness(t testing.TB) func() (persistence.Store, error) {
	dir := t.TempDir()
	return func() (persistence.Store, error) {
		return journal.Open(t.Context(), journal.Options{Dir: dir, Logger: quiet})
	}
}

// memHarness opens the store on an in-memory file system, with small segments so the
// suite crosses segment boundaries.
func memHarness(t testing.TB) func() (persistence.Store, error) {
	fs := vfs.NewMem()
	return func() (persistence.Store, error) {
		return journal.Open(t.Context(), journal.Options{Dir: "/data/kahadb", FS: fs, MaxFileLength: 64 << 10, Logger: quiet})
	}
}

func TestConformanceOS(t *testing.T) {
	storetest.Run(t, osHarness, storetest.Features{Durable: true})
}

func TestConformanceMem(t *testing.T) {
	storetest.Run(t, memHarness, storetest.Features{Durable: true})
}

func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, osHarness)
}
