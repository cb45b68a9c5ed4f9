package shelltest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/storetest"
)

// Quiet discards a store's logs in tests.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Opener opens an adapter's store in dir on fs (nil: the real file system), logging to
// Quiet, with the adapter's defaults (real file system) or small segments (fs).
type Opener func(ctx context.Context, dir string, fs vfs.FS) (persistence.Store, error)

// Conformance runs the storetest suite on the adapter: on the real file system in a
// temporary directory, and on an in-memory one in memDir. It also checks that one store
// at a time has a directory open: a second Open fails with errLocked (the adapter's)
// until the first store closed.
func Conformance(t *testing.T, open Opener, memDir string, errLocked error) {
	t.Run("OS", func(t *testing.T) { storetest.Run(t, OSHarness(open), storetest.Features{Durable: true}) })
	t.Run("Mem", func(t *testing.T) {
		storetest.Run(t, func(t testing.TB) func() (persistence.Store, error) {
			fs := vfs.NewMem()
			return func() (persistence.Store, error) { return open(t.Context(), memDir, fs) }
		}, storetest.Features{Durable: true})
	})
	t.Run("Locked", func(t *testing.T) {
		fs := vfs.NewMem()
		s, err := open(t.Context(), memDir, fs)
		require.NoError(t, err)
		_, err = open(t.Context(), memDir, fs)
		require.ErrorIs(t, err, errLocked)
		require.NoError(t, s.Close())
		s, err = open(t.Context(), memDir, fs)
		require.NoError(t, err, "the directory is free once the store closed")
		require.NoError(t, s.Close())
	})
}

// OSHarness opens the store in a fresh temporary directory on the real file system.
func OSHarness(open Opener) storetest.Harness {
	return func(t testing.TB) func() (persistence.Store, error) {
		dir := t.TempDir()
		return func() (persistence.Store, error) { return open(t.Context(), dir, nil) }
	}
}

// RequireDefaults checks an adapter's ParseOptions of an empty block: every option but
// the directory is left to Open (dirOnly returns the Options holding only dir), and the
// directory is <DataDirectory>/<name>, or data/<name> without a data directory.
func RequireDefaults[T any](t *testing.T, parse func(persistence.Options) (T, error), name string, dirOnly func(dir string) T) {
	t.Helper()
	o, err := parse(persistence.Options{DataDirectory: "/var/amq"})
	require.NoError(t, err)
	require.Equal(t, dirOnly(filepath.Join("/var/amq", name)), o, "defaults are left to Open")
	o, err = parse(persistence.Options{})
	require.NoError(t, err)
	require.Equal(t, dirOnly(filepath.Join("data", name)), o, "without a data directory")
}

// OptionError is a bad value of an adapter's block: ParseOptions fails for it with a
// *setting.Error wrapping the adapter's ErrOption whose message holds every Want.
type OptionError struct {
	Key   string
	Value any
	Want  []string
}

// RequireOptionErrors checks each case with parse (the adapter's ParseOptions of
// persistence.Options{Raw: raw}).
func RequireOptionErrors(t *testing.T, parse func(raw map[string]any) error, errOption error, cases []OptionError) {
	for _, c := range cases {
		t.Run(c.Key, func(t *testing.T) {
			err := parse(map[string]any{c.Key: c.Value})
			require.Error(t, err, "%s=%v", c.Key, c.Value)
			require.ErrorIs(t, err, errOption)
			var ce *setting.Error
			require.True(t, errors.As(err, &ce), "%T is a *setting.Error, as the broker prints them", err)
			for _, w := range c.Want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}
