package journal

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// A synced group commit reports one fsync duration to the observer; removing the
// observer stops the reports.
func TestSyncObserverReportsEachSyncedGroup(t *testing.T) {
	s := mustOpen(t, memOptions(vfs.NewMem()))
	defer s.Close()
	_, err := s.Recover(t.Context())
	require.NoError(t, err)
	var n atomic.Int64
	s.SetSyncObserver(func(d time.Duration) {
		if d > 0 {
			n.Add(1)
		}
	})
	for seq := uint64(1); seq <= 3; seq++ {
		b := s.Begin()
		b.Add(&persistence.Message{Dest: "queue://q", Seq: seq, ID: "m", Body: []byte("x"), Persistent: true})
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	}
	require.Equal(t, int64(3), n.Load(), "one report per synced commit, the commits being one after the other")

	s.SetSyncObserver(nil)
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://q", Seq: 4, ID: "m", Body: []byte("x"), Persistent: true})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	require.Equal(t, int64(3), n.Load(), "no report once the observer is removed")
}
