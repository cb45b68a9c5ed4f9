package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
	"github.com/activemq-go/broker/persistence/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	sharedDBOnce sync.Once
	sharedDSN    string
	sharedDBErr  error
	prefixes     atomic.Int64
)

// sharedDB is one database of the shared server for the tests that tell their data
// apart by table prefix; it goes with the server.
func sharedDB(t testing.TB) string {
	t.Helper()
	srv := pgtest.Shared(t)
	sharedDBOnce.Do(func() {
		sharedDBErr = srv.Exec(context.Background(), "postgres", "CREATE DATABASE pgstore_shared")
		sharedDSN = srv.DSN("pgstore_shared")
	})
	if sharedDBErr != nil {
		t.Fatal(sharedDBErr)
	}
	return sharedDSN
}

// quiet discards the store's log lines.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// freshPrefix returns a table prefix no other test uses.
func freshPrefix() string { return fmt.Sprintf("t%d_", prefixes.Add(1)) }

// harness gives every case of the suite its own tables (a fresh tablePrefix in the
// shared database, much cheaper than a database each) and reopens the same ones.
func harness(t testing.TB) func() (persistence.Store, error) {
	dsn := sharedDB(t)
	prefix := freshPrefix()
	return func() (persistence.Store, error) {
		return pgstore.Open(context.Background(), pgstore.Options{URL: dsn, TablePrefix: prefix, Logger: quiet})
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness, storetest.Features{Durable: true})
}

func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, harness)
}

// BenchmarkGroupCommit is ParallelAdd with many more producers than CPUs (64 on two
// cores), the load group commit is for: Sync batches of one Add each, one queue per
// producer. It reports msgs/s and batches per transaction.
func BenchmarkGroupCommit(b *testing.B) {
	s, err := pgstore.Open(b.Context(), pgstore.Options{URL: sharedDB(b), TablePrefix: freshPrefix(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	var producers atomic.Int64
	body := make([]byte, 256)
	g0, b0 := s.GroupStats()
	b.ReportAllocs()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		q := fmt.Sprintf("queue://bench.group.%d", producers.Add(1))
		m := &persistence.Message{Dest: q, ID: "ID:bench", Body: body, Persistent: true, Priority: 4}
		for pb.Next() {
			m.Seq++
			bt := s.Begin()
			bt.Add(m)
			if err := bt.Commit(b.Context(), persistence.Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "msgs/s")
	}
	if g1, b1 := s.GroupStats(); g1 > g0 {
		b.ReportMetric(float64(b1-b0)/float64(g1-g0), "batches/tx")
	}
}
