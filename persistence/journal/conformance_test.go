package journal_test

import (
	"context"
	"testing"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
	"github.com/activemq-go/broker/persistence/journal"
	"github.com/activemq-go/broker/persistence/storetest"
)

// quiet discards the store's logs in tests.
var quiet = shelltest.Quiet

// openStore opens the journal in dir: with the defaults on the real file system (fs
// nil), with small segments on fs, so the suite crosses segment boundaries.
func openStore(ctx context.Context, dir string, fs vfs.FS) (persistence.Store, error) {
	if fs == nil {
		return journal.Open(ctx, journal.Options{Dir: dir, Logger: quiet})
	}
	return journal.Open(ctx, journal.Options{Dir: dir, FS: fs, MaxFileLength: 64 << 10, Logger: quiet})
}

func TestConformance(t *testing.T) {
	shelltest.Conformance(t, openStore, "/data/kahadb", journal.ErrLocked)
}

func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, shelltest.OSHarness(openStore)) }
