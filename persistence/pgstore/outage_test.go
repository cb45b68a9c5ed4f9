package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/internal/race"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
)

// TestDatabaseRestart: commits fail (promptly, with an error) while the database is
// down and succeed again once it is back, without reopening the store.
func TestDatabaseRestart(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.CreateDB(t, "restart")
	// A commit to a stopped database fails on a refused connection within milliseconds.
	// CommitTimeout is set far above that, and the bound below is half of it: a prompt
	// failure cannot reach it however busy the machine, one that waited out the timeout
	// cannot stay under it (issue 27).
	const commitTimeout = time.Minute
	s := openStore(t, pgstore.Options{URL: dsn, CommitTimeout: commitTimeout})
	ctx := t.Context()
	require.NoError(t, add(ctx, s, msg("queue://q", 1)))

	require.NoError(t, srv.Down())
	for seq := uint64(2); seq <= 3; seq++ { // the second attempt runs on fresh connections
		start := time.Now()
		err := add(ctx, s, msg("queue://q", seq))
		require.Error(t, err, "commit while the database is down")
		require.ErrorIs(t, err, pgstore.ErrUnavailable)
		require.Less(t, time.Since(start), commitTimeout/2, "a commit fails promptly, not after CommitTimeout")
		requireNoSecret(t, err.Error(), srv.Password())
	}
	b := s.Begin()
	b.Add(msg("queue://q", 4))
	done := make(chan error, 1)
	b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { done <- err })
	require.ErrorIs(t, <-done, pgstore.ErrUnavailable)
	require.Error(t, s.Scan(ctx, "queue://q", 0, 0, func(*persistence.Message) error { return nil }))

	require.NoError(t, srv.Up())
	var err error
	// A bounded wait: the pool reconnects within a second or two of the restart; 15s
	// (more under -race) leaves room for a busy machine.
	deadline := time.Now().Add(race.Scale(15 * time.Second))
	for seq := uint64(5); ; seq++ {
		if err = add(ctx, s, msg("queue://q", seq)); err == nil {
			require.NoError(t, add(ctx, s, msg("queue://q", seq+1)))
			require.Equal(t, []uint64{1, seq, seq + 1}, seqs(t, s, "queue://q"), "failed commits left nothing")
			n, _ := s.Stats("queue://q")
			require.Equal(t, int64(3), n)
			break
		}
		require.False(t, time.Now().After(deadline), "commits still fail after the restart: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnreachableAtOpen: Open retries, with a log line, until the database comes up.
func TestUnreachableAtOpen(t *testing.T) {
	srv := pgtest.StartStopped(t)
	var logs logBuffer
	type opened struct {
		s   *pgstore.Store
		err error
	}
	ch := make(chan opened, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		s, err := pgstore.Open(ctx, pgstore.Options{URL: srv.DSN("postgres"), Logger: logs.logger(),
			ConnectRetryInterval: 50 * time.Millisecond})
		ch <- opened{s, err}
	}()
	waitFor(t, 10*time.Second, "a retry log line", func() bool {
		return countLines(logs.String(), "database unreachable, retrying in") >= 2
	})
	require.NoError(t, srv.Up())
	var o opened
	select {
	case o = <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("Open did not return after the database came up")
	}
	require.NoError(t, o.err)
	t.Cleanup(func() { require.NoError(t, o.s.Close()) })
	require.NoError(t, add(t.Context(), o.s, msg("queue://q", 1)))
	text := logs.String()
	require.Contains(t, text, "database unreachable, retrying in 50ms")
	require.Contains(t, text, "addr="+srv.Addr())
	requireNoSecret(t, text, srv.Password())
}

// TestUnreachableUntilContextEnds: Open gives up when ctx ends.
func TestUnreachableUntilContextEnds(t *testing.T) {
	srv := pgtest.StartStopped(t)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := pgstore.Open(ctx, pgstore.Options{URL: srv.DSN("postgres"), Logger: quiet,
		ConnectRetryInterval: 50 * time.Millisecond})
	require.ErrorIs(t, err, pgstore.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, srv.Addr())
	requireNoSecret(t, err.Error(), srv.Password())
}
