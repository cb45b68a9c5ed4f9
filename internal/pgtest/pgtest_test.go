package pgtest_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func query(t *testing.T, dsn string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var db string
	err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	return db, err
}

func TestSharedAndCreateDB(t *testing.T) {
	srv := pgtest.Shared(t)
	require.Same(t, srv, pgtest.Shared(t), "one server per test binary")
	db, err := query(t, srv.DSN("postgres"))
	require.NoError(t, err)
	require.Equal(t, "postgres", db)

	dsn := srv.CreateDB(t, "My-Test DB")
	dsn2 := srv.CreateDB(t, "My-Test DB")
	require.NotEqual(t, dsn, dsn2, "CreateDB names are unique")
	db, err = query(t, dsn)
	require.NoError(t, err)
	require.Regexp(t, `^my_test_db_\d+$`, db)
}

func TestPasswordIsChecked(t *testing.T) {
	srv := pgtest.Shared(t)
	u, err := url.Parse(srv.DSN("postgres"))
	require.NoError(t, err)
	u.User = url.UserPassword(pgtest.User, "wrong")
	_, err = query(t, u.String())
	require.Error(t, err, "scram-sha-256 authentication must reject a wrong password")
	require.Contains(t, srv.DSN("x"), url.UserPassword(pgtest.User, srv.Password()).String())
}

func TestDownUp(t *testing.T) {
	srv := pgtest.Start(t)
	require.NotEqual(t, pgtest.Shared(t).Port(), srv.Port())
	dsn := srv.CreateDB(t, "downup")
	_, err := query(t, dsn)
	require.NoError(t, err)

	require.NoError(t, srv.Down())
	_, err = query(t, dsn)
	require.Error(t, err, "nothing listens after Down")

	require.NoError(t, srv.Up())
	db, err := query(t, dsn)
	require.NoError(t, err, "same port and data after Up")
	require.Contains(t, db, "downup")
}

func TestStartStopped(t *testing.T) {
	srv := pgtest.StartStopped(t)
	_, err := query(t, srv.DSN("postgres"))
	require.Error(t, err)
	require.NoError(t, srv.Up())
	_, err = query(t, srv.DSN("postgres"))
	require.NoError(t, err)
}

func TestCloseRemovesEverything(t *testing.T) {
	srv, err := pgtest.New(pgtest.Options{})
	require.NoError(t, err)
	dsn := srv.DSN("postgres")
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "a second Close does nothing")
	_, err = query(t, dsn)
	require.Error(t, err)
}

func TestMissingBinariesFailWithAdvice(t *testing.T) {
	_, err := pgtest.New(pgtest.Options{BinDir: t.TempDir()})
	require.Error(t, err)
	require.ErrorContains(t, err, ".ci/run")
	require.ErrorContains(t, err, "apt-get install postgresql-15")

	t.Setenv(pgtest.BinDirEnv, "/nonexistent/bin")
	_, err = pgtest.New(pgtest.Options{})
	require.ErrorContains(t, err, "/nonexistent/bin")
}
