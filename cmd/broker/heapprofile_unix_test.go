//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeapProfileOnSignal sends the process SIGUSR1 and waits for the profile, twice
// (the second replaces the first), then stops watching.
func TestHeapProfileOnSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	stop, err := watchHeapProfile(context.Background(), path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		before := time.Now().Add(-time.Second)
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
		require.Eventually(t, func() bool {
			fi, err := os.Stat(path)
			return err == nil && fi.ModTime().After(before) && fi.Size() > 0
		}, 10*time.Second, 10*time.Millisecond)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, []byte{0x1f, 0x8b}), "a profile is gzipped protobuf")
		require.NoError(t, os.Remove(path))
	}
	stop()
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Empty(t, entries, "no temporary file is left behind")
}
