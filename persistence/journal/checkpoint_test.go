package journal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// TestCheckpointV1Loads opens journals written by the build before checkpoint version
// 2 (testdata/ckpt-v1: a workload of queues, a topic with two durable subscriptions and
// scheduled jobs in 16 KiB segments; "clean" was closed, "tail" copied while open, so
// records after its version 1 checkpoint are replayed; "replaced" has a queue whose
// seqs were stored again, replacing stored messages and acknowledged ones in the same
// segment, and compacted). Each must recover to the state that build recovered (the
// .dump files, written by it), with the runs of messages that can be moved from the
// logs into extents moved, and again after this build rewrote the checkpoint as
// version 2.
func TestCheckpointV1Loads(t *testing.T) {
	for _, name := range []string{"clean", "tail", "replaced"} {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "ckpt-v1", name+".dump"))
			require.NoError(t, err)
			dir := t.TempDir()
			src := filepath.Join("testdata", "ckpt-v1", name)
			ents, err := os.ReadDir(src)
			require.NoError(t, err)
			for _, e := range ents {
				data, err := os.ReadFile(filepath.Join(src, e.Name()))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644))
			}
			o := Options{Dir: dir, MaxFileLength: MinFileLength * 4, CheckpointInterval: -1, CleanupInterval: -1, Logger: quietLog}
			s := mustOpen(t, o)
			require.Equal(t, string(want), dump(t, s), "state loaded from the version 1 checkpoint")
			inExt, inLog := int64(0), 0
			for _, d := range s.idx.dests {
				for _, e := range d.ext {
					inExt += e.n
				}
				inLog += d.log.Len()
			}
			t.Logf("%d messages in extents, %d in logs", inExt, inLog)
			require.Positive(t, inExt, "runs of messages moved from the logs to extents")
			require.NoError(t, s.Close()) // nothing written, but the checkpoint is rewritten

			s = mustOpen(t, o)
			require.Equal(t, 0, s.Recovery().ReplayedRecords)
			h, err := os.ReadFile(s.Recovery().Checkpoint)
			require.NoError(t, err)
			require.Equal(t, uint32(ckptVersion), binary.LittleEndian.Uint32(h[8:]), "Close wrote version 2")
			require.Equal(t, string(want), dump(t, s), "state loaded from the version 2 checkpoint")
			// An ack of a seq that is not stored changes nothing.
			b := s.Begin()
			b.Ack("queue://a", 1<<40)
			require.NoError(t, b.Commit(t.Context(), persistence.Sync))
			require.Equal(t, string(want), dump(t, s))
			require.NoError(t, s.Close())
			s = mustOpen(t, o)
			require.Equal(t, string(want), dump(t, s), "after an ack of nothing")
			require.NoError(t, s.Close())
		})
	}
}
