package logstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
	"github.com/activemq-go/broker/persistence/logstore"
	"github.com/activemq-go/broker/persistence/storetest"
)

// openStore opens the store in dir: with the defaults the broker uses on the real file
// system (fs nil); on fs with the smallest segments and a checkpoint every millisecond,
// so the suite crosses segment boundaries and has segments deleted under its scans.
func openStore(ctx context.Context, dir string, fs vfs.FS) (persistence.Store, error) {
	if fs == nil {
		return logstore.Open(ctx, logstore.Options{Dir: dir, Logger: shelltest.Quiet})
	}
	return logstore.Open(ctx, logstore.Options{Dir: dir, FS: fs,
		SegmentBytes: logstore.MinSegmentBytes, CheckpointInterval: time.Millisecond, Logger: shelltest.Quiet})
}

func TestConformance(t *testing.T) {
	shelltest.Conformance(t, openStore, "/data/kafkalog", logstore.ErrLocked)
}

func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, shelltest.OSHarness(openStore)) }
