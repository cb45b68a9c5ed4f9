package journal

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// logBuffer collects log lines for assertions.
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

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// commitMsgs commits one batch per message.
func commitMsgs(t testing.TB, s persistence.Store, dest string, from, to uint64, size int) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		b := s.Begin()
		b.Add(&persistence.Message{Dest: dest, Seq: seq, ID: fmt.Sprint("ID:", seq), Body: bytes.Repeat([]byte{byte(seq)}, size)})
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	}
}

func scanSeqs(t testing.TB, s persistence.Store, dest string) []uint64 {
	t.Helper()
	var seqs []uint64
	require.NoError(t, s.Scan(t.Context(), dest, 0, 0, func(m *persistence.Message) error {
		require.Equal(t, bytes.Repeat([]byte{byte(m.Seq)}, len(m.Body)), m.Body, "body of %d", m.Seq)
		seqs = append(seqs, m.Seq)
		return nil
	}))
	return seqs
}

func TestReopenAfterCleanClose(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 50, 200)
	b := s.Begin()
	b.Ack("queue://q", 7)
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	want := dump(t, s)
	require.NoError(t, s.Close())

	s = mustOpen(t, memOptions(fs))
	rec := s.Recovery()
	require.NotEmpty(t, rec.Checkpoint, "Close writes a checkpoint")
	require.Zero(t, rec.ReplayedRecords, "nothing to replay after a clean Close")
	require.Zero(t, rec.TruncatedBytes)
	require.Empty(t, rec.Corrupt)
	require.Equal(t, want, dump(t, s))
	require.NoError(t, s.Close())
}

func TestReopenWithoutCheckpointReplaysAll(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 40, 300)
	want := dump(t, s)
	crashed := fs.CrashClone() // a power cut: no checkpoint was ever written
	require.NoError(t, s.Close())

	s = mustOpen(t, memOptions(crashed))
	require.Empty(t, s.Recovery().Checkpoint)
	require.Equal(t, 40, s.Recovery().ReplayedRecords)
	require.Greater(t, s.Recovery().Segments, 2, "the messages span several segments")
	require.Equal(t, want, dump(t, s))
	require.NoError(t, s.Close())
}

// lastSegment returns the path of the highest-numbered segment.
func lastSegment(t *testing.T, fs vfs.FS) string {
	t.Helper()
	names, err := fs.List(testDir)
	require.NoError(t, err)
	best := uint32(0)
	for _, n := range names {
		if id, ok := parseSegmentName(n); ok && id > best {
			best = id
		}
	}
	require.NotZero(t, best)
	return filepath.Join(testDir, segmentName(best))
}

func TestTornTailIsTruncated(t *testing.T) {
	for _, cut := range []int{recordAlign + 1, frameHeaderSize + recordAlign, 40, 200} {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			fs := vfs.NewMem()
			s := mustOpen(t, memOptions(fs))
			commitMsgs(t, s, "queue://q", 1, 3, 300)
			crashed := fs.CrashClone()
			require.NoError(t, s.Close())

			// Cut the last record short.
			path := lastSegment(t, crashed)
			data, err := crashed.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, crashed.WriteFile(path, data[:len(data)-cut]))

			var logs logBuffer
			o := memOptions(crashed)
			o.Logger = logs.logger()
			s = mustOpen(t, o)
			require.Equal(t, shelltest.SeqRange(1, 2), scanSeqs(t, s, "queue://q"), "the torn batch is gone, the others are there")
			rec := s.Recovery()
			require.Positive(t, rec.TruncatedBytes)
			require.Empty(t, rec.Corrupt, "a torn tail is not reported as corruption")
			require.Contains(t, logs.String(), "truncated a torn or damaged tail")
			require.Contains(t, logs.String(), fmt.Sprintf("bytes=%d", rec.TruncatedBytes))

			// The store goes on after the cut, and what it writes survives.
			commitMsgs(t, s, "queue://q", 4, 5, 300)
			require.NoError(t, s.Close())
			s = mustOpen(t, memOptions(crashed.CrashClone()))
			require.Equal(t, []uint64{1, 2, 4, 5}, scanSeqs(t, s, "queue://q"))
			require.NoError(t, s.Close())
		})
	}
}

// TestCutPaddingKeepsRecord cuts only the zero padding after the last record: the record
// is whole, so it is kept and the padding is restored.
func TestCutPaddingKeepsRecord(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 3, 301)
	crashed := fs.CrashClone()
	require.NoError(t, s.Close())
	path := lastSegment(t, crashed)
	data, err := crashed.ReadFile(path)
	require.NoError(t, err)
	last := segHeaderSize
	for {
		payload, n, err := decodeFrame(data[last:])
		require.NoError(t, err)
		if last+n == len(data) {
			pad := n - frameHeaderSize - len(payload)
			require.Positive(t, pad, "the test needs a padded record")
			require.NoError(t, crashed.WriteFile(path, data[:len(data)-pad]))
			break
		}
		last += n
	}
	s = mustOpen(t, memOptions(crashed))
	require.Equal(t, shelltest.SeqRange(1, 3), scanSeqs(t, s, "queue://q"))
	require.Zero(t, s.Recovery().TruncatedBytes)
	commitMsgs(t, s, "queue://q", 4, 4, 301)
	require.NoError(t, s.Close())
	s = mustOpen(t, memOptions(crashed.CrashClone()))
	require.Equal(t, shelltest.SeqRange(1, 4), scanSeqs(t, s, "queue://q"), "records after the restored padding are aligned")
	require.NoError(t, s.Close())
}

func TestZeroedTailIsTruncated(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 2, 100)
	crashed := fs.CrashClone()
	require.NoError(t, s.Close())
	path := lastSegment(t, crashed)
	data, err := crashed.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, crashed.WriteFile(path, append(data, make([]byte, 1000)...))) // size grew, data never came

	s = mustOpen(t, memOptions(crashed))
	require.Equal(t, shelltest.SeqRange(1, 2), scanSeqs(t, s, "queue://q"))
	require.EqualValues(t, 1000, s.Recovery().TruncatedBytes)
	require.NoError(t, s.Close())
}

// TestFlippedByteInOlderSegment damages one record in the middle of an older segment:
// recovery reports that range, skips it, and recovers everything else, in this segment
// and the following ones.
func TestFlippedByteInOlderSegment(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 30, 500) // ~7 messages per 4 KiB segment
	crashed := fs.CrashClone()                // no checkpoint: everything is replayed
	require.NoError(t, s.Close())

	path := filepath.Join(testDir, segmentName(2))
	data, err := crashed.ReadFile(path)
	require.NoError(t, err)
	// The second record of segment 2: find it by decoding the first.
	_, n, err := decodeFrame(data[segHeaderSize:])
	require.NoError(t, err)
	second := segHeaderSize + n
	payload, _, err := decodeFrame(data[second:])
	require.NoError(t, err)
	ops, err := decodeBatch(payload, interner{}, nil)
	require.NoError(t, err)
	lostSeq := ops[0].Seq
	data[second+frameHeaderSize+100] ^= 0x40
	require.NoError(t, crashed.WriteFile(path, data))

	var logs logBuffer
	o := memOptions(crashed)
	o.Logger = logs.logger()
	s = mustOpen(t, o)
	var want []uint64
	for seq := uint64(1); seq <= 30; seq++ {
		if seq != lostSeq {
			want = append(want, seq)
		}
	}
	require.Equal(t, want, scanSeqs(t, s, "queue://q"), "only the damaged record is lost")
	rec := s.Recovery()
	require.Len(t, rec.Corrupt, 1)
	require.Equal(t, path, rec.Corrupt[0].File)
	require.EqualValues(t, second, rec.Corrupt[0].Offset)
	require.EqualValues(t, n, rec.Corrupt[0].Length, "exactly the damaged record is skipped")
	require.Zero(t, rec.TruncatedBytes)
	require.Contains(t, logs.String(), "damaged data skipped")
	require.NoError(t, s.Close())
}

// TestFlippedByteInCheckpointedMessage damages a message that recovery does not replay
// (it is covered by the checkpoint): Scan logs it and skips it, the rest is readable.
func TestFlippedByteInCheckpointedMessage(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 5, 100)
	require.NoError(t, s.Close())

	path := filepath.Join(testDir, segmentName(1))
	data, err := fs.ReadFile(path)
	require.NoError(t, err)
	i := bytes.Index(data, bytes.Repeat([]byte{3}, 100)) // the body of message 3
	require.Positive(t, i)
	data[i+50] ^= 1
	require.NoError(t, fs.WriteFile(path, data))

	var logs logBuffer
	o := memOptions(fs)
	o.Logger = logs.logger()
	s = mustOpen(t, o)
	require.Equal(t, []uint64{1, 2, 4, 5}, scanSeqs(t, s, "queue://q"))
	require.Contains(t, logs.String(), "stored message is damaged and skipped")
	require.Contains(t, logs.String(), "seq=3")
	require.NoError(t, s.Close())
}

// TestDamagedCheckpointFallsBack damages the newest checkpoint after segments were
// deleted: the previous checkpoint and the journal after it (segments are only deleted
// below the older retained checkpoint) still give the same state, with nothing lost and
// nothing acknowledged back.
func TestDamagedCheckpointFallsBack(t *testing.T) {
	const q, filler = "queue://q", "queue://filler"
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, q, 1, 40, 500)
	require.NoError(t, s.checkpoint(true))
	for seq := uint64(1); seq <= 40; seq++ { // acks spread over segments of dead filler
		b := s.Begin()
		b.Ack(q, seq)
		b.Add(&persistence.Message{Dest: filler, Seq: seq, Body: make([]byte, 500)})
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	}
	ackAll(t, s, filler, 1, 40)
	commitMsgs(t, s, q, 41, 45, 100)
	want := dump(t, s)
	before := len(segmentFiles(t, fs))
	require.NoError(t, s.checkpoint(true))
	require.Less(t, len(segmentFiles(t, fs)), before, "the second checkpoint deletes segments")
	require.Len(t, s.ckpts, 2)
	newest := s.ckpts[1].path
	require.NoError(t, s.Close()) // nothing changed: no third checkpoint

	data, err := fs.ReadFile(newest)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, fs.WriteFile(newest, data))

	s = mustOpen(t, memOptions(fs))
	require.Equal(t, want, dump(t, s), "the older checkpoint plus the journal after it give the same state")
	require.NotEqual(t, newest, s.Recovery().Checkpoint)
	require.NotEmpty(t, s.Recovery().Corrupt)
	require.Zero(t, s.Recovery().LostMessages)
	require.NoError(t, s.Close())
}

func TestMissingSegmentDropsItsMessages(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commitMsgs(t, s, "queue://q", 1, 20, 500)
	require.NoError(t, s.Close())
	require.NoError(t, fs.Remove(filepath.Join(testDir, segmentName(1))))

	var logs logBuffer
	o := memOptions(fs)
	o.Logger = logs.logger()
	s = mustOpen(t, o)
	got := scanSeqs(t, s, "queue://q")
	require.NotEmpty(t, got)
	require.NotEqual(t, uint64(1), got[0])
	require.Equal(t, 20-len(got), s.Recovery().LostMessages)
	n, _ := s.Stats("queue://q")
	require.EqualValues(t, len(got), n, "Stats agrees with what can be read")
	require.True(t, strings.Contains(logs.String(), "stored messages lost"))
	require.NoError(t, s.Close())
}
