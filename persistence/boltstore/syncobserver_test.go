package boltstore_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/boltstore"
)

// Every synced commit (syncStrategy always) is reported to the observer; under never
// nothing is.
func TestSyncObserverReportsSyncedCommits(t *testing.T) {
	for _, tc := range []struct {
		strategy boltstore.SyncStrategy
		want     int64
	}{{boltstore.SyncAlways, 2}, {boltstore.SyncNever, 0}} {
		t.Run(tc.strategy.String(), func(t *testing.T) {
			s, err := boltstore.Open(t.Context(), boltstore.Options{Path: filepath.Join(t.TempDir(), "b.db"), Logger: quiet, SyncStrategy: tc.strategy})
			require.NoError(t, err)
			defer s.Close()
			_, err = s.Recover(t.Context())
			require.NoError(t, err)
			var n atomic.Int64
			s.SetSyncObserver(func(time.Duration) { n.Add(1) })
			commit(t, s, func(b persistence.Batch) { b.Add(msg("queue://q", 1)) })
			commit(t, s, func(b persistence.Batch) { b.Ack("queue://q", 1) })
			require.Equal(t, tc.want, n.Load())
		})
	}
}
