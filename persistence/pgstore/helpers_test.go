package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
)

// logBuffer collects the store's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// requireNoSecret asserts that text holds password in none of its spellings.
func requireNoSecret(t *testing.T, text, password string) {
	t.Helper()
	require.NotEmpty(t, password)
	for _, form := range []string{password, url.QueryEscape(password), url.PathEscape(password)} {
		require.NotContains(t, text, form, "the password leaked")
	}
}

// openStore opens a store and closes it when the test ends.
func openStore(t *testing.T, o pgstore.Options) *pgstore.Store {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quiet
	}
	s, err := pgstore.Open(t.Context(), o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	_, err = s.Recover(t.Context())
	require.NoError(t, err)
	return s
}

func msg(dest string, seq uint64) *persistence.Message {
	return &persistence.Message{
		Dest: dest, Seq: seq, ID: fmt.Sprintf("ID:test-1:1:1:%d", seq),
		Headers: persistence.Headers{"n", fmt.Sprint(seq)}, Body: fmt.Appendf(nil, "body %d", seq),
		Persistent: true, Priority: 4,
	}
}

// add commits one Add with Sync.
func add(ctx context.Context, s persistence.Store, m *persistence.Message) error {
	b := s.Begin()
	b.Add(m)
	return b.Commit(ctx, persistence.Sync)
}

func seqs(t *testing.T, s persistence.Store, dest string) []uint64 {
	t.Helper()
	out := []uint64{}
	require.NoError(t, s.Scan(t.Context(), dest, 0, 0, func(m *persistence.Message) error {
		out = append(out, m.Seq)
		return nil
	}))
	return out
}

// waitFor polls cond until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countLines(text, substr string) int { return strings.Count(text, substr) }

// connect opens a plain connection for checks and sabotage.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// exec runs one statement on its own connection.
func exec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	_, err := connect(t, dsn).Exec(t.Context(), sql, args...)
	require.NoError(t, err, sql)
}
