package shelltest

import (
	"context"
	"errors"
	"io"
	"log/slog"
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
// temporary directory, and on an in-memory one in memDir.
func Conformance(t *testing.T, open Opener, memDir string) {
	t.Run("OS", func(t *testing.T) { storetest.Run(t, OSHarness(open), storetest.Features{Durable: true}) })
	t.Run("Mem", func(t *testing.T) {
		storetest.Run(t, func(t testing.TB) func() (persistence.Store, error) {
			fs := vfs.NewMem()
			return func() (persistence.Store, error) { return open(t.Context(), memDir, fs) }
		}, storetest.Features{Durable: true})
	})
}

// OSHarness opens the store in a fresh temporary directory on the real file system.
func OSHarness(open Opener) storetest.Harness {
	return func(t testing.TB) func() (persistence.Store, error) {
		dir := t.TempDir()
		return func() (persistence.Store, error) { return open(t.Context(), dir, nil) }
	}
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
