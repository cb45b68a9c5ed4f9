package journal

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// segmentFiles lists the segment files in the test directory.
func segmentFiles(t *testing.T, fs vfs.FS) []string {
	return shelltest.Files(t, fs, testDir, func(n string) bool { _, ok := parseSegmentName(n); return ok })
}

func ackAll(t testing.TB, s persistence.Store, dest string, from, to uint64) {
	t.Helper()
	b := s.Begin()
	for seq := from; seq <= to; seq++ {
		b.Ack(dest, seq)
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
}

func TestRollOverAndDeletion(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 100, 500)
	require.Greater(t, len(segmentFiles(t, fs)), 10, "segments roll over at MaxFileLength")
	for _, name := range segmentFiles(t, fs) {
		data, err := fs.ReadFile(filepath.Join(testDir, name))
		require.NoError(t, err)
		require.LessOrEqual(t, len(data), MinFileLength, "%s exceeds MaxFileLength", name)
	}
	before := s.DiskUsage()

	ackAll(t, s, "queue://q", 1, 100)
	require.Greater(t, len(segmentFiles(t, fs)), 10, "acks alone delete nothing")
	require.NoError(t, s.checkpoint(true))
	require.Equal(t, []string{segmentName(s.w.active.id)}, segmentFiles(t, fs),
		"after the checkpoint only the active segment is left")
	require.Less(t, s.DiskUsage(), before/5)
	_, _, ok := s.OldestSegment()
	require.False(t, ok, "nothing is stored")
	require.NoError(t, s.Close())

	s = mustOpen(t, memOptions(fs))
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []persistence.DestState{{Name: "queue://q", LastSeq: 100}}, rec.Destinations)
	require.NoError(t, s.Close())
	s = mustOpen(t, memOptions(fs.CrashClone()))
	require.Empty(t, scanSeqs(t, s, "queue://q"), "no acked message comes back")
	require.NoError(t, s.Close())
}

// TestRecordLargerThanSegment writes a batch larger than MaxFileLength: it gets a
// segment of its own.
func TestRecordLargerThanSegment(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 1, 100)
	commitMsgs(t, s, "queue://q", 2, 2, 3*MinFileLength)
	commitMsgs(t, s, "queue://q", 3, 3, 100)
	require.Equal(t, shelltest.SeqRange(1, 3), scanSeqs(t, s, "queue://q"))
	require.NoError(t, s.Close())
	s = mustOpen(t, memOptions(fs.CrashClone()))
	require.Equal(t, shelltest.SeqRange(1, 3), scanSeqs(t, s, "queue://q"))
	require.NoError(t, s.Close())
}

// TestCompactionFreesStuckMessage: one message nobody consumes sits in the first
// segment while lots of traffic is acknowledged after it. The compactor copies it
// forward, so the first segment is deleted; the message keeps its place in the order
// and its content, also after a reopen and after a power cut.
func TestCompactionFreesStuckMessage(t *testing.T) {
	const q, topic = "queue://stuck", "topic://stuck"
	offline := persistence.SubKey{ClientID: "offline", Name: "sub"}
	online := persistence.SubKey{ClientID: "online", Name: "sub"}
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	b := s.Begin()
	b.AddSub(persistence.SubInfo{Key: offline, Dest: topic})
	b.AddSub(persistence.SubInfo{Key: online, Dest: topic})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	commitMsgs(t, s, q, 1, 1, 300)
	b = s.Begin()
	b.Add(&persistence.Message{Dest: topic, Seq: 1, Body: bytes.Repeat([]byte{1}, 200), Subs: []persistence.SubKey{offline, online}})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	b = s.Begin()
	b.AckSub(online, 1)
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	for round := uint64(0); round < 10; round++ { // traffic that is consumed
		commitMsgs(t, s, q, 2+round*10, 11+round*10, 400)
		ackAll(t, s, q, 2+round*10, 11+round*10)
	}
	commitMsgs(t, s, q, 200, 203, 300) // live messages after the traffic
	want := dump(t, s)
	file, dest, ok := s.OldestSegment()
	require.True(t, ok)
	require.Equal(t, filepath.Join(testDir, segmentName(1)), file)
	require.Contains(t, []string{q, topic}, dest)
	before := len(segmentFiles(t, fs))
	require.Greater(t, before, 10)

	require.NoError(t, s.cleanup())
	segs := segmentFiles(t, fs)
	require.NotContains(t, segs, segmentName(1), "the stuck messages were moved and their segment deleted")
	require.LessOrEqual(t, len(segs), 3)
	file, _, ok = s.OldestSegment()
	require.True(t, ok)
	require.NotEqual(t, filepath.Join(testDir, segmentName(1)), file)
	require.Equal(t, want, dump(t, s), "compaction changes nothing visible")
	require.Equal(t, []uint64{1, 200, 201, 202, 203}, scanSeqs(t, s, q))
	crashed := fs.CrashClone()
	require.NoError(t, s.Close())

	for name, fs := range map[string]*vfs.Mem{"reopen": fs, "power cut": crashed} {
		s = mustOpen(t, memOptions(fs))
		require.Equal(t, want, dump(t, s), name)
		require.NoError(t, s.Close())
	}
}

// TestMoveOfChangedMessage: a message acknowledged, and one replaced, while the
// compactor copies them: the copies are dead on arrival, live and after replay.
func TestMoveOfChangedMessage(t *testing.T) {
	const q = "queue://q"
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, q, 1, 3, 200)
	commitMsgs(t, s, q, 4, 40, 300)
	ackAll(t, s, q, 4, 40)
	require.NoError(t, s.checkpoint(true))
	items := s.compactCandidates(s.ckpts[len(s.ckpts)-1].pos.seg)
	require.Len(t, items, 3)

	ackAll(t, s, q, 1, 1)
	b := s.Begin()
	b.Add(&persistence.Message{Dest: q, Seq: 2, Body: []byte("replaced")})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	moved, err := s.moveForward(items)
	require.NoError(t, err)
	require.Equal(t, 3, moved)

	check := func(s *Store, what string) {
		var got []string
		require.NoError(t, s.Scan(t.Context(), q, 0, 0, func(m *persistence.Message) error {
			got = append(got, string(m.Body[:min(len(m.Body), 8)]))
			return nil
		}), what)
		require.Equal(t, []string{"replaced", string(bytes.Repeat([]byte{3}, 8))}, got, what)
		n, size := s.Stats(q)
		require.Equal(t, [2]int64{2, 8 + 200}, [2]int64{n, size}, what)
	}
	check(s, "live")
	crashed := fs.CrashClone() // moves not yet covered by a checkpoint: replayed
	require.NoError(t, s.Close())
	s = mustOpen(t, memOptions(crashed))
	require.Positive(t, s.Recovery().ReplayedRecords)
	check(s, "after replay")
	require.NoError(t, s.Close())
}

// TestDeletionKeepsSegmentsOfCheckpointedMessages: an ack applied while a checkpoint is
// written, and not yet synced, must not let the checkpoint delete the segment of the
// message it acks: after a power cut the ack is gone and the checkpoint still lists the
// message.
func TestDeletionKeepsSegmentsOfCheckpointedMessages(t *testing.T) {
	const q = "queue://q"
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, q, 1, 20, 500)
	ackAll(t, s, q, 2, 20)
	require.NoError(t, s.checkpoint(true))
	require.Contains(t, segmentFiles(t, fs), segmentName(1), "message 1 is live in segment 1")
	commitMsgs(t, s, q, 21, 21, 10) // something to checkpoint

	var crashed *vfs.Mem
	fs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, ".ckpt.tmp") {
			fs.Inject(nil)
			// After the snapshot, before the segments are deleted: an unsynced ack.
			b := s.Begin()
			b.Ack(q, 1)
			require.NoError(t, b.Commit(t.Context(), persistence.Async))
		}
		return nil
	})
	require.NoError(t, s.checkpoint(true))
	// The OS may write directory changes back at any time: make the deletions durable.
	require.NoError(t, fs.SyncDir(testDir))
	crashed = fs.CrashClone()
	require.NoError(t, s.Close())

	s = mustOpen(t, memOptions(crashed))
	require.Equal(t, []uint64{1, 21}, scanSeqs(t, s, q), "the unsynced ack is lost, the message is not")
	require.Zero(t, s.Recovery().LostMessages)
	require.NoError(t, s.Close())
}

func TestDiskUsage(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	empty := s.DiskUsage()
	require.EqualValues(t, segHeaderSize, empty)
	commitMsgs(t, s, "queue://q", 1, 30, 500)
	var files int64
	names, err := fs.List(testDir)
	require.NoError(t, err)
	for _, n := range names {
		if n == "lock" {
			continue
		}
		data, err := fs.ReadFile(filepath.Join(testDir, n))
		require.NoError(t, err)
		files += int64(len(data))
	}
	require.Equal(t, files, s.DiskUsage())
	require.NoError(t, s.checkpoint(true))
	require.Greater(t, s.DiskUsage(), files, "checkpoints count")
	require.NoError(t, s.Close())
}
