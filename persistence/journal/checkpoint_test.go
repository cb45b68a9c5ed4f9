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
			require.Equal(t, uint32(ckptVersion), binary.LittleEndian.Uint32(h[8:]), "Close wrote the current version")
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

// TestCheckpointV2Loads opens journals written by the build before checkpoint version 3
// (testdata/ckpt-v2: the workload of ckpt-v1, with scheduled jobs and replaced seqs in
// the destinations' logs): they recover to the state that build recovered, the next
// checkpoint moves what the logs hold in sealed segments to run files, and the store
// reopened from that version 3 checkpoint holds the same.
func TestCheckpointV2Loads(t *testing.T) {
	for _, name := range []string{"clean", "replaced"} {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "ckpt-v2", name+".dump"))
			require.NoError(t, err)
			dir := t.TempDir()
			src := filepath.Join("testdata", "ckpt-v2", name)
			ents, err := os.ReadDir(src)
			require.NoError(t, err)
			for _, e := range ents {
				data, err := os.ReadFile(filepath.Join(src, e.Name()))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644))
			}
			o := Options{Dir: dir, MaxFileLength: MinFileLength * 4, CheckpointInterval: -1, CleanupInterval: -1,
				Logger: quietLog, spillMin: 4}
			s := mustOpen(t, o)
			counts := func() (logged, inRuns int64) {
				s.mu.RLock()
				defer s.mu.RUnlock()
				for _, d := range s.idx.dests {
					logged += int64(d.log.Len())
					for _, r := range d.runs {
						inRuns += r.n
					}
				}
				return logged, inRuns
			}
			require.Equal(t, string(want), dump(t, s), "state loaded from the version 2 checkpoint")
			logged, inRuns := counts()
			require.Positive(t, logged, "a version 2 checkpoint's logs load into memory")
			require.Zero(t, inRuns)
			require.NoError(t, s.checkpoint(true))
			logged2, inRuns := counts()
			t.Logf("logs: %d messages before the checkpoint, %d after; %d in runs", logged, logged2, inRuns)
			require.Positive(t, inRuns, "the checkpoint spilled the logs' messages of sealed segments")
			require.Equal(t, string(want), dump(t, s), "after the spill")
			require.NoError(t, s.Close())

			s = mustOpen(t, o)
			require.Equal(t, 0, s.Recovery().ReplayedRecords)
			h, err := os.ReadFile(s.Recovery().Checkpoint)
			require.NoError(t, err)
			require.Equal(t, uint32(ckptVersion), binary.LittleEndian.Uint32(h[8:]), "Close wrote version 3")
			require.Equal(t, string(want), dump(t, s), "state loaded from the version 3 checkpoint")
			_, inRuns = counts()
			require.Positive(t, inRuns)
			require.NoError(t, s.Close())
		})
	}
}
