package logstore_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/logstore"
	"github.com/activemq-go/broker/persistence/storetest"
)

// quiet discards the store's logs in tests.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// osHarness opens the store in a fresh temporary directory on the real file system,
// with the defaults the broker uses.
func osHarness(t testing.TB) func() (persistence.Store, error) {
	dir := t.TempDir()
	return func() (persistence.Store, error) {
		return logstore.Open(t.Context(), logstore.Options{Dir: dir, Logger: quiet})
	}
}

// memHarness opens the store on an in-memory file system with the smallest segments
// and a checkpoint every millisecond, so the suite crosses segment boundaries and has
// segments deleted under its scans.
func memHarness(t testing.TB) func() (persistence.Store, error) {
	fs := vfs.NewMem()
	return func() (persistence.Store, error) {
		return logstore.Open(t.Context(), logstore.Options{Dir: "/data/kafkalog", FS: fs,
			SegmentBytes: logstore.MinSegmentBytes, CheckpointInterval: time.Millisecond, Logger: quiet})
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
