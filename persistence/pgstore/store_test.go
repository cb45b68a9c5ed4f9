package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
)

func TestOpenByName(t *testing.T) {
	require.Contains(t, persistence.Adapters(), "jdbc")
	dsn := sharedDB(t)
	s, err := persistence.Open(t.Context(), "jdbc", persistence.Options{Raw: map[string]any{
		"url": dsn, "tableprefix": freshPrefix(), "maxconnections": 4,
	}})
	require.NoError(t, err)
	require.IsType(t, &pgstore.Store{}, s)
	_, ok := s.(persistence.Locker)
	require.True(t, ok, "the jdbc store is a persistence.Locker")
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	require.Empty(t, rec.Destinations)
	require.NoError(t, s.Close())

	_, err = persistence.Open(t.Context(), "jdbc", persistence.Options{Raw: map[string]any{"url": dsn, "pool": 3}})
	var ce *setting.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "persistenceAdapter.jdbc.pool", ce.Key)
}

func TestTablesCreatedWithPrefix(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.CreateDB(t, "tables")
	s := openStore(t, pgstore.Options{URL: dsn}) // default prefix ACTIVEMQ_
	require.Equal(t, "activemq_msgs", pgstore.TableName(s, "msgs"))
	var names []string
	ctx := t.Context()
	conn := connect(t, dsn)
	rows, err := conn.Query(ctx, `SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"activemq_acks", "activemq_dests", "activemq_lock", "activemq_msgs",
		"activemq_schema_version", "activemq_sub_pending"}, names)
	var lockRows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM activemq_lock`).Scan(&lockRows))
	require.Equal(t, 1, lockRows, "the lease row exists from the start")
}

func TestCreateTablesOnStartupFalse(t *testing.T) {
	dsn := pgtest.Shared(t).CreateDB(t, "nocreate")
	_, err := pgstore.Open(t.Context(), pgstore.Options{URL: dsn, SkipCreateTables: true, Logger: quiet})
	require.ErrorIs(t, err, pgstore.ErrNoSchema)
	require.ErrorContains(t, err, "createTablesOnStartup")
	require.ErrorContains(t, err, "activemq_")

	openStore(t, pgstore.Options{URL: dsn}).Close()
	s := openStore(t, pgstore.Options{URL: dsn, SkipCreateTables: true})
	require.NoError(t, add(t.Context(), s, msg("queue://q", 1)), "existing tables are used")
}

func TestSchemaVersion(t *testing.T) {
	dsn := sharedDB(t)
	prefix := freshPrefix()
	s := openStore(t, pgstore.Options{URL: dsn, TablePrefix: prefix})
	table := pgstore.TableName(s, "schema_version")
	require.NoError(t, s.Close())

	exec(t, dsn, `UPDATE `+table+` SET VERSION = 2`)
	_, err := pgstore.Open(t.Context(), pgstore.Options{URL: dsn, TablePrefix: prefix, Logger: quiet})
	require.ErrorIs(t, err, pgstore.ErrSchemaVersion)
	require.ErrorContains(t, err, "version 2")

	exec(t, dsn, `UPDATE `+table+` SET VERSION = 1`)
	openStore(t, pgstore.Options{URL: dsn, TablePrefix: prefix})
}

// TestActiveMQTablesRefused: the tables of a real ActiveMQ (same names, no version
// table) are never written to.
func TestActiveMQTablesRefused(t *testing.T) {
	dsn := pgtest.Shared(t).CreateDB(t, "activemq")
	exec(t, dsn, `CREATE TABLE ACTIVEMQ_MSGS (ID BIGINT NOT NULL, CONTAINER VARCHAR(250) NOT NULL,
		MSGID_PROD VARCHAR(250), MSGID_SEQ BIGINT, EXPIRATION BIGINT, MSG BYTEA, PRIORITY BIGINT,
		XID VARCHAR(250), PRIMARY KEY (ID))`)
	_, err := pgstore.Open(t.Context(), pgstore.Options{URL: dsn, Logger: quiet})
	require.ErrorIs(t, err, pgstore.ErrSchemaVersion)
	require.ErrorContains(t, err, "tablePrefix")
	openStore(t, pgstore.Options{URL: dsn, TablePrefix: "GO_"})
}

func TestConcurrentOpenCreatesOnce(t *testing.T) {
	dsn := sharedDB(t)
	prefix := freshPrefix()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := pgstore.Open(t.Context(), pgstore.Options{URL: dsn, TablePrefix: prefix, Logger: quiet})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestPasswordNeverInErrorsOrLogs(t *testing.T) {
	srv := pgtest.Shared(t)
	var logs logBuffer
	wrong := "Wr0ng:p@ss/w?rd#x"
	o := pgstore.Options{URL: strings.Replace(srv.DSN("postgres"), "jdbc:", "", 1), Password: wrong,
		Logger: logs.logger(), ConnectRetryInterval: 10 * time.Millisecond}
	_, err := pgstore.Open(t.Context(), o)
	require.Error(t, err, "authentication fails")
	require.ErrorContains(t, err, srv.Addr())
	requireNoSecret(t, err.Error(), wrong)
	requireNoSecret(t, err.Error(), srv.Password())

	// The right password, a database that does not exist.
	_, err = pgstore.Open(t.Context(), pgstore.Options{URL: srv.DSN("no_such_db"), Logger: logs.logger()})
	require.Error(t, err)
	require.ErrorContains(t, err, "no_such_db")
	requireNoSecret(t, err.Error(), srv.Password())

	// In a jdbc: URL as a parameter.
	jdbc := fmt.Sprintf("jdbc:postgresql://%s/no_such_db?user=%s&password=%s", srv.Addr(), pgtest.User,
		strings.NewReplacer("@", "%40", "/", "%2F", "?", "%3F", "#", "%23", ":", "%3A").Replace(srv.Password()))
	_, err = pgstore.Open(t.Context(), pgstore.Options{URL: jdbc, Logger: logs.logger()})
	require.Error(t, err)
	requireNoSecret(t, err.Error(), srv.Password())
	requireNoSecret(t, logs.String(), srv.Password())
	requireNoSecret(t, logs.String(), wrong)
}

func TestInvalidOperations(t *testing.T) {
	s := openStore(t, pgstore.Options{URL: sharedDB(t), TablePrefix: freshPrefix()})
	long := "queue://" + strings.Repeat("é", 243) // 251 characters
	for name, ops := range map[string]func(b persistence.Batch){
		"long dest":       func(b persistence.Batch) { b.Add(msg(long, 1)) },
		"NUL in dest":     func(b persistence.Batch) { b.Add(msg("queue://a\x00b", 1)) },
		"bad UTF-8 dest":  func(b persistence.Batch) { b.Add(msg("queue://\xff", 1)) },
		"seq above int64": func(b persistence.Batch) { b.Add(msg("queue://q", 1<<63)) },
		"bad UTF-8 clientID": func(b persistence.Batch) {
			b.AddSub(persistence.SubInfo{Key: persistence.SubKey{ClientID: "\xfe", Name: "n"}, Dest: "topic://t"})
		},
		"NUL in selector": func(b persistence.Batch) {
			b.AddSub(persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "n"}, Dest: "topic://t", Selector: "a\x00"})
		},
	} {
		b := s.Begin()
		b.Add(msg("queue://ok", 1))
		ops(b)
		require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), pgstore.ErrInvalid, name)
	}
	require.Empty(t, seqs(t, s, "queue://ok"), "nothing of an invalid batch is applied")
	// 250 characters is fine.
	ok := "queue://" + strings.Repeat("é", 242)
	require.NoError(t, add(t.Context(), s, msg(ok, 1)))
	require.Equal(t, []uint64{1}, seqs(t, s, ok))
}

func TestCorruptMessageReported(t *testing.T) {
	dsn := sharedDB(t)
	s := openStore(t, pgstore.Options{URL: dsn, TablePrefix: freshPrefix()})
	require.NoError(t, add(t.Context(), s, msg("queue://q", 1)))
	require.NoError(t, add(t.Context(), s, msg("queue://q", 2)))
	exec(t, dsn, `UPDATE `+pgstore.TableName(s, "msgs")+` SET MSG = '\x09ff'::bytea WHERE ID = 2`)
	var got []uint64
	err := s.Scan(t.Context(), "queue://q", 0, 0, func(m *persistence.Message) error {
		got = append(got, m.Seq)
		return nil
	})
	require.ErrorIs(t, err, pgstore.ErrCorrupt)
	require.ErrorContains(t, err, "queue://q #2")
	require.Equal(t, []uint64{1}, got)
}

// TestGroupCommit proves that concurrent committers share transactions.
func TestGroupCommit(t *testing.T) {
	s := openStore(t, pgstore.Options{URL: sharedDB(t), TablePrefix: freshPrefix()})
	const writers, each = 32, 20
	g0, b0 := s.GroupStats()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			q := fmt.Sprintf("queue://group.%d", w)
			for i := uint64(1); i <= each; i++ {
				if err := add(t.Context(), s, msg(q, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	g1, b1 := s.GroupStats()
	require.Equal(t, int64(writers*each), b1-b0, "batches committed")
	require.Less(t, g1-g0, b1-b0, "fewer transactions than batches")
	t.Logf("sync commits: %d batches in %d transactions", b1-b0, g1-g0)

	// CommitAsync from one goroutine: the queue fills while a transaction runs.
	const n = 300
	done := make(chan error, n)
	for i := uint64(1); i <= n; i++ {
		b := s.Begin()
		b.Add(msg("queue://group.async", i))
		b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { done <- err })
	}
	for range n {
		require.NoError(t, <-done)
	}
	g2, b2 := s.GroupStats()
	require.Equal(t, int64(n), b2-b1)
	require.Less(t, g2-g1, int64(n/2), "CommitAsync batches are grouped")
	t.Logf("async commits: %d batches in %d transactions", b2-b1, g2-g1)
	require.Len(t, seqs(t, s, "queue://group.async"), n)
}

// TestFailedBatchIsolated: a batch whose statement fails on the server fails alone;
// the batches committed in the same group still succeed.
func TestFailedBatchIsolated(t *testing.T) {
	dsn := sharedDB(t)
	s := openStore(t, pgstore.Options{URL: dsn, TablePrefix: freshPrefix()})
	msgs := pgstore.TableName(s, "msgs")
	exec(t, dsn, `CREATE FUNCTION `+msgs+`_trap() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.CONTAINER = 'queue://slow' THEN PERFORM pg_sleep(0.3); END IF;
			IF NEW.CONTAINER = 'queue://poison' THEN RAISE EXCEPTION 'poisoned message'; END IF;
			RETURN NEW;
		END $$`)
	exec(t, dsn, `CREATE TRIGGER trap BEFORE INSERT ON `+msgs+` FOR EACH ROW EXECUTE FUNCTION `+msgs+`_trap()`)

	type result struct {
		name string
		err  error
	}
	results := make(chan result, 4)
	commit := func(name string, m *persistence.Message) {
		b := s.Begin()
		b.Add(m)
		b.(persistence.AsyncBatch).CommitAsync(persistence.Sync, func(err error) { results <- result{name, err} })
	}
	g0, _ := s.GroupStats()
	commit("slow", msg("queue://slow", 1)) // keeps the writer busy while the next three queue up
	time.Sleep(50 * time.Millisecond)
	commit("good1", msg("queue://good", 1))
	commit("poison", msg("queue://poison", 1))
	commit("good2", msg("queue://good", 2))
	got := map[string]error{}
	for range 4 {
		r := <-results
		got[r.name] = r.err
	}
	require.NoError(t, got["slow"])
	require.NoError(t, got["good1"])
	require.NoError(t, got["good2"])
	require.ErrorContains(t, got["poison"], "poisoned message")
	require.NotErrorIs(t, got["poison"], pgstore.ErrUnavailable, "an SQL error is not an outage")
	require.Equal(t, []uint64{1, 2}, seqs(t, s, "queue://good"))
	require.Empty(t, seqs(t, s, "queue://poison"))
	msgsN, _ := s.Stats("queue://poison")
	require.Zero(t, msgsN)
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	for _, d := range rec.Destinations {
		require.NotEqual(t, "queue://poison", d.Name, "a failed Add creates no destination")
	}
	g1, _ := s.GroupStats()
	require.GreaterOrEqual(t, g1-g0, int64(3), "slow, then good1 and good2 alone after the group failed")
}

func TestCommitAfterCloseAndCanceled(t *testing.T) {
	s, err := pgstore.Open(t.Context(), pgstore.Options{URL: sharedDB(t), TablePrefix: freshPrefix(), Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Lock(t.Context()), persistence.ErrClosed)
	require.ErrorIs(t, add(context.Background(), s, msg("queue://q", 1)), persistence.ErrClosed)
}
