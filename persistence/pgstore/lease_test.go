package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
)

// leaseOptions: a 250ms keep-alive, so a lease lasts 750ms; short, yet long enough
// for a renewal on a loaded CI machine running -race.
func leaseOptions(dsn, prefix string, logs *logBuffer) pgstore.Options {
	o := pgstore.Options{URL: dsn, TablePrefix: prefix, LockKeepAlivePeriod: 250 * time.Millisecond, LeaseHolderID: "test"}
	if logs != nil {
		o.Logger = logs.logger()
	}
	return o
}

// lockAsync runs s.Lock in the background.
func lockAsync(ctx context.Context, s *pgstore.Store) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.Lock(ctx) }()
	return ch
}

func requireBlocked(t *testing.T, locked <-chan error, d time.Duration) {
	t.Helper()
	select {
	case err := <-locked:
		t.Fatalf("Lock returned (%v) while another store holds the lease", err)
	case <-time.After(d):
	}
}

func requireLocked(t *testing.T, locked <-chan error, d time.Duration) {
	t.Helper()
	select {
	case err := <-locked:
		require.NoError(t, err)
	case <-time.After(d):
		t.Fatalf("Lock did not return within %v", d)
	}
}

// TestLockHandover: the second broker waits while the first holds and renews the
// lease, takes over when it closes, and sees everything it committed.
func TestLockHandover(t *testing.T) {
	dsn, prefix := sharedDB(t), freshPrefix()
	var logsB logBuffer
	a := openStore(t, leaseOptions(dsn, prefix, nil))
	require.NoError(t, a.Lock(t.Context()))
	require.NoError(t, a.Lock(t.Context()), "Lock while holding returns at once")

	b := openStore(t, leaseOptions(dsn, prefix, &logsB))
	locked := lockAsync(t.Context(), b)
	requireBlocked(t, locked, 2*time.Second) // more than two leases: a renews

	sub := persistence.SubKey{ClientID: "c", Name: "s"}
	tb := a.Begin()
	tb.AddSub(persistence.SubInfo{Key: sub, Dest: "topic://t"})
	for i := uint64(1); i <= 10; i++ {
		tb.Add(msg("queue://q", i))
	}
	m := msg("topic://t", 1)
	m.Subs = []persistence.SubKey{sub}
	tb.Add(m)
	require.NoError(t, tb.Commit(t.Context(), persistence.Sync))
	tb = a.Begin()
	tb.Ack("queue://q", 10)
	require.NoError(t, tb.Commit(t.Context(), persistence.Sync))

	require.Equal(t, 1, countLines(logsB.String(), "waiting for the lock held by "+pgstore.HolderID(a)),
		"logged once:\n%s", logsB.String())
	require.NoError(t, a.Close())
	requireLocked(t, locked, 5*time.Second) // a released the lease: at b's next poll

	rec, err := b.Recover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []persistence.SubInfo{{Key: sub, Dest: "topic://t"}}, rec.Subs)
	require.Len(t, rec.Destinations, 2)
	require.Equal(t, persistence.DestState{Name: "queue://q", LastSeq: 10, Msgs: 9, Bytes: rec.Destinations[0].Bytes},
		rec.Destinations[0], "LastSeq and counts of what a committed")
	require.NoError(t, add(t.Context(), b, msg("queue://q", 11)))
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 11}, seqs(t, b, "queue://q"))
	var got []uint64
	require.NoError(t, b.ScanSub(t.Context(), sub, 0, 0, func(m *persistence.Message) error {
		got = append(got, m.Seq)
		return nil
	}))
	require.Equal(t, []uint64{1}, got)
	select {
	case <-b.Lost():
		t.Fatal("b lost the lock")
	default:
	}
}

// TestLockExpires: a broker that stops renewing (hung) loses the lock when its lease
// expires; Lost fires, its commits fail, and the waiting broker takes over.
func TestLockExpires(t *testing.T) {
	dsn, prefix := sharedDB(t), freshPrefix()
	var logsA logBuffer
	a := openStore(t, leaseOptions(dsn, prefix, &logsA))
	require.NoError(t, a.Lock(t.Context()))
	require.NoError(t, add(t.Context(), a, msg("queue://q", 1)))
	b := openStore(t, leaseOptions(dsn, prefix, nil))
	locked := lockAsync(t.Context(), b)
	requireBlocked(t, locked, 500*time.Millisecond)

	pgstore.PauseRenewal(a)
	select {
	case <-a.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed after the lease expired")
	}
	requireLocked(t, locked, 5*time.Second)
	require.Contains(t, logsA.String(), "lost the database lock")

	err := add(t.Context(), a, msg("queue://q", 2))
	require.ErrorIs(t, err, pgstore.ErrLockLost, "a deposed master cannot write")
	require.ErrorIs(t, a.Lock(t.Context()), pgstore.ErrLockLost)

	rec, err := b.Recover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []persistence.DestState{{Name: "queue://q", LastSeq: 1, Msgs: 1, Bytes: int64(len("body 1"))}}, rec.Destinations)
	require.NoError(t, add(t.Context(), b, msg("queue://q", 2)))
	require.Equal(t, []uint64{1, 2}, seqs(t, b, "queue://q"))
}

// TestCommitFencedByLease: the lease check inside the commit transaction stops a
// broker whose lease was taken before it noticed (its renewal is paused, and the
// lease is far from expiring by its own clock).
func TestCommitFencedByLease(t *testing.T) {
	dsn, prefix := sharedDB(t), freshPrefix()
	o := leaseOptions(dsn, prefix, nil)
	o.LockKeepAlivePeriod = 10 * time.Second
	a := openStore(t, o)
	require.NoError(t, a.Lock(t.Context()))
	pgstore.PauseRenewal(a)
	require.NoError(t, add(t.Context(), a, msg("queue://q", 1)))

	exec(t, dsn, `UPDATE `+pgstore.TableName(a, "lock")+` SET BROKER_NAME = 'intruder',
		TIME = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000`)
	err := add(t.Context(), a, msg("queue://q", 2))
	require.ErrorIs(t, err, pgstore.ErrLockLost)
	select {
	case <-a.Lost():
	default:
		t.Fatal("Lost not closed by a fenced commit")
	}
	require.Equal(t, []uint64{1}, seqs(t, a, "queue://q"), "nothing of the fenced commit was written")
	require.ErrorIs(t, add(t.Context(), a, msg("queue://q", 3)), pgstore.ErrLockLost)
}

func TestLockContextAndDisabled(t *testing.T) {
	dsn, prefix := sharedDB(t), freshPrefix()
	a := openStore(t, leaseOptions(dsn, prefix, nil))
	require.NoError(t, a.Lock(t.Context()))

	b := openStore(t, leaseOptions(dsn, prefix, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.Lock(ctx), context.DeadlineExceeded)

	o := leaseOptions(dsn, prefix, nil)
	o.DisableLock = true // useLock: false
	c := openStore(t, o)
	require.NoError(t, c.Lock(t.Context()), "useLock: false never waits")
	require.NoError(t, add(t.Context(), c, msg("queue://c", 1)))

	closing := openStore(t, leaseOptions(dsn, prefix, nil))
	locked := lockAsync(t.Context(), closing)
	requireBlocked(t, locked, 200*time.Millisecond)
	require.NoError(t, closing.Close())
	select {
	case err := <-locked:
		require.True(t, errors.Is(err, persistence.ErrClosed), "%v", err)
	case <-time.After(3 * time.Second):
		t.Fatal("Lock did not return after Close")
	}
}

// TestLeaseSurvivesConnectionChurn: the lease is a row, not a session: killing every
// connection of the holder costs at most a failed commit, never the lock.
func TestLeaseSurvivesConnectionChurn(t *testing.T) {
	dsn := pgtest.Shared(t).CreateDB(t, "churn")
	o := leaseOptions(dsn, freshPrefix(), nil)
	o.LockKeepAlivePeriod = 500 * time.Millisecond // a reconnect must fit in a period
	o.CommitTimeout = 5 * time.Second
	a := openStore(t, o)
	require.NoError(t, a.Lock(t.Context()))
	require.NoError(t, add(t.Context(), a, msg("queue://q", 1)))

	for range 3 {
		exec(t, dsn, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		time.Sleep(600 * time.Millisecond) // more than a renewal period
	}
	var err error
	for seq := uint64(2); seq <= 4; seq++ { // the first may meet a killed pooled connection
		if err = add(t.Context(), a, msg("queue://q", seq)); err == nil {
			break
		}
		require.ErrorIs(t, err, pgstore.ErrUnavailable)
	}
	require.NoError(t, err)
	time.Sleep(1600 * time.Millisecond) // more than a lease (1.5s)
	select {
	case <-a.Lost():
		t.Fatal("the lock was lost to connection churn")
	default:
	}
	require.NoError(t, add(t.Context(), a, msg("queue://q", 10)))
}
