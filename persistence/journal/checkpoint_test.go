package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
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
			dir := copyFixture(t, filepath.Join("testdata", "ckpt-v1", name))
			o := Options{Dir: dir, MaxFileLength: MinFileLength * 4, CheckpointInterval: -1, CleanupInterval: -1, Logger: quietLog}
			s := mustOpen(t, o)
			require.Equal(t, string(want), fixtureDump(t, s), "state loaded from the version 1 checkpoint")
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
			require.Equal(t, string(want), fixtureDump(t, s), "state loaded from the rewritten checkpoint")
			// An ack of a seq that is not stored changes nothing.
			b := s.Begin()
			b.Ack("queue://a", 1<<40)
			require.NoError(t, b.Commit(t.Context(), persistence.Sync))
			require.Equal(t, string(want), fixtureDump(t, s))
			require.NoError(t, s.Close())
			s = mustOpen(t, o)
			require.Equal(t, string(want), fixtureDump(t, s), "after an ack of nothing")
			require.NoError(t, s.Close())
		})
	}
}

// copyFixture copies the files of testdata directory src into a new directory.
func copyFixture(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644))
	}
	return dir
}

// liveDump lists each segment's live message count and bytes, as the ckpt-v2 fixture
// does after its dump.
func liveDump(s *Store) string {
	var live []string
	for id, st := range s.idx.live {
		live = append(live, fmt.Sprintf("segment %d msgs=%d bytes=%d\n", id, st.msgs, st.bytes))
	}
	slices.Sort(live)
	return strings.Join(live, "")
}

// TestCheckpointV2VariedLoads opens a journal closed by the build before checkpoint version 3
// (testdata/ckpt-v2: a queue and a topic with two durable subscriptions, messages of
// varied sizes and headers, acks at random positions): it must recover to the state
// that build recovered, Stats and each segment's live bytes exact, with its extents'
// length runs converted into length tables; then acknowledge messages at random
// positions, add more and close, writing version 3, and load that to the same state.
func TestCheckpointV2VariedLoads(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "ckpt-v2", "varied.dump"))
	require.NoError(t, err)
	dir := copyFixture(t, filepath.Join("testdata", "ckpt-v2", "varied"))
	o := Options{Dir: dir, MaxFileLength: MinFileLength * 4, CheckpointInterval: -1, CleanupInterval: -1, Logger: quietLog}
	s := mustOpen(t, o)
	require.EqualValues(t, ckptVersionV2, s.ckpts[len(s.ckpts)-1].version)
	require.Equal(t, 0, s.Recovery().ReplayedRecords)
	require.Equal(t, string(want), fixtureDump(t, s)+liveDump(s), "state loaded from the version 2 checkpoint")
	inExt := int64(0)
	for _, d := range s.idx.dests {
		for _, e := range d.ext {
			inExt += e.n
		}
	}
	require.Greater(t, inExt, int64(400), "messages in extents")

	bodies := map[uint64]int64{}
	require.NoError(t, s.Scan(t.Context(), "queue://v", 0, 0, func(m *persistence.Message) error {
		bodies[m.Seq] = int64(len(m.Body))
		return nil
	}))
	msgs, total := s.Stats("queue://v")
	rng := rand.New(rand.NewPCG(7, 8))
	b := s.Begin()
	for seq := range bodies {
		if rng.IntN(4) == 0 {
			b.Ack("queue://v", seq)
			msgs--
			total -= bodies[seq]
		}
	}
	for seq := uint64(364); seq < 464; seq++ {
		size := rng.IntN(300)
		b.Add(&persistence.Message{Dest: "queue://v", Seq: seq, ID: "n", Body: make([]byte, size), Persistent: true})
		msgs++
		total += int64(size)
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	gotMsgs, gotBytes := s.Stats("queue://v")
	require.Equal(t, [2]int64{msgs, total}, [2]int64{gotMsgs, gotBytes}, "Stats after acks at random positions and adds")
	state := dump(t, s) + liveDump(s)
	require.NoError(t, s.Close())

	s = mustOpen(t, o)
	require.EqualValues(t, ckptVersion, s.ckpts[len(s.ckpts)-1].version, "Close wrote the current version")
	require.Equal(t, 0, s.Recovery().ReplayedRecords)
	require.Equal(t, state, dump(t, s)+liveDump(s), "state loaded from the version 3 checkpoint")
	require.NoError(t, s.Close())
}

// Items of a length table (lentable.go), for hand-made checkpoints.
func itemLen(body uint64) uint64 { return body << 1 }
func itemRep(k uint64) uint64    { return k<<2 | itemRepeat }
func itemGap(k uint64) uint64    { return k<<3 | itemSkip }
func itemOvr(o int64) uint64     { return zigzag(o)<<3 | itemOver }

// ckptExtent encodes an extent of seqs [lo, hi] in segment 1 storing seqs, with a
// length table of one chunk per entry of chunks (a version 3 checkpoint) starting at
// base and ending at end, or with no chunks and the values runs (its runs: count, then
// start delta, length and body length each), and one sparse entry.
func ckptExtent(lo, hi uint64, seqs []uint64, base, end uint64, chunks [][]uint64, runs ...uint64) []byte {
	var b []byte
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, lo)
	b = binary.AppendUvarint(b, hi-lo)
	b = binary.AppendUvarint(b, 4096)
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, 0)
	live := make([]uint64, hi/64+1)
	for _, seq := range seqs {
		live[seq/64] |= 1 << (seq % 64)
	}
	b = binary.AppendUvarint(b, uint64(len(live)))
	for _, w := range live {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	b = binary.AppendUvarint(b, uint64(len(chunks)))
	for _, v := range runs {
		b = binary.AppendUvarint(b, v)
	}
	if len(chunks) > 0 {
		b = binary.AppendUvarint(b, base)
		b = binary.AppendUvarint(b, end-base)
		var items []byte
		for _, c := range chunks {
			n := len(items)
			for _, v := range c {
				items = binary.AppendUvarint(items, v)
			}
			b = binary.AppendUvarint(b, uint64(len(items)-n))
		}
		b = append(b, items...)
	}
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, 0)
	return binary.AppendUvarint(b, 16)
}

// TestCheckpointLengthTableChecked: an extent of a version 3 checkpoint whose length
// table is malformed, or does not give a length to every stored seq, fails to load.
func TestCheckpointLengthTableChecked(t *testing.T) {
	seqs := []uint64{1, 2, 3}
	good := ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(2)}})
	d := decoder{b: good}
	e := d.extent(ckptVersion)
	require.False(t, d.bad)
	require.Equal(t, len(good), d.off)
	require.Equal(t, [3]int64{3, 33, 30}, [3]int64{e.n, e.bytes, e.body})
	for seq := uint64(1); seq <= 3; seq++ {
		n, body := e.lengths(seq)
		require.Equal(t, [2]uint32{11, 10}, [2]uint32{n, body})
	}
	runs := ckptExtent(1, 3, seqs, 0, 0, nil, 2, 1, 11, 10, 2, 21, 20)
	d = decoder{b: runs}
	e = d.extent(ckptVersion)
	require.False(t, d.bad)
	require.Equal(t, len(runs), d.off)
	require.Equal(t, [3]int64{3, 43, 40}, [3]int64{e.n, e.bytes, e.body})
	n, body := e.lengths(3)
	require.Equal(t, [2]uint32{21, 20}, [2]uint32{n, body})

	bad := map[string][]byte{
		"a length before an overhead": ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemLen(10), itemRep(2)}}),
		"a repeat before a length":    ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemRep(3)}}),
		"a repeat of none":            ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(0), itemRep(2)}}),
		"a gap of none":               ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(0), itemGap(1), itemOvr(0), itemLen(10), itemRep(2)}}),
		"past the chunk's end":        ckptExtent(1, 70, seqs, 0, 71, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(69)}, {}}),
		"a length past the chunk":     ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(62), itemLen(3)}}),
		"not ending at its end":       ckptExtent(1, 4, seqs, 0, 5, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(2)}}),
		"ending past hi":              ckptExtent(1, 3, seqs, 0, 6, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(4)}}),
		"a stored seq skipped":        ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(1), itemGap(1)}}),
		"a stored seq below the table": ckptExtent(1, 70, []uint64{1, 70}, 64, 71,
			[][]uint64{{itemGap(6), itemOvr(0), itemLen(10)}}),
		"encoded shorter than the body": ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(-5), itemLen(10), itemRep(2)}}),
		"encoded of 2^32 bytes":         ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(math.MaxUint32 - 10), itemLen(10), itemRep(2)}}),
		"a repeat after the overhead grew": ckptExtent(1, 3, seqs, 0, 4,
			[][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemOvr(math.MaxUint32 - 10), itemRep(2)}}),
		"an overhead out of range":     ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(1 << 40), itemLen(10), itemRep(2)}}),
		"a body of 2^32 bytes":         ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(1 << 32), itemRep(2)}}),
		"runs, none":                   ckptExtent(1, 3, seqs, 0, 0, nil, 0),
		"runs, too many":               ckptExtent(1, 3, seqs, 0, 0, nil, slices.Repeat([]uint64{1, 11, 10}, maxLenRuns+1)...),
		"a run with body above length": ckptExtent(1, 3, seqs, 0, 0, nil, 1, 1, 10, 11),
		"a run of 2^32 bytes":          ckptExtent(1, 3, seqs, 0, 0, nil, 1, 1, 1<<32, 11),
		"runs after the first stored":  ckptExtent(1, 3, seqs, 0, 0, nil, 1, 2, 11, 10),
		"a run past hi":                ckptExtent(1, 3, seqs, 0, 0, nil, 2, 1, 11, 10, 3, 12, 10),
		"a run below lo":               ckptExtent(2, 3, []uint64{2, 3}, 0, 0, nil, 1, 1, 11, 10),
		"two runs at one seq":          ckptExtent(1, 3, seqs, 0, 0, nil, 2, 1, 11, 10, 0, 12, 10),
		"a base not a chunk's":         ckptExtent(1, 3, seqs, 1, 4, [][]uint64{{itemOvr(0), itemLen(10), itemRep(2)}}),
		"more chunks than its end":     ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(2)}, {}}),
	}
	// A uvarint cut short at the end of the chunk's bytes.
	cut := ckptExtent(1, 3, seqs, 0, 4, [][]uint64{{itemGap(1), itemOvr(0), itemLen(10), itemRep(2)}})
	i := bytes.Index(cut, []byte{byte(itemGap(1)), byte(itemOvr(0)), byte(itemLen(10)), byte(itemRep(2))})
	require.Positive(t, i)
	cut[i+3] = 0x80 // the chunk's last item: a continuation byte with nothing after it
	bad["an item cut short"] = cut
	// Chunk lengths that add up past the data.
	long := slices.Clone(good)
	long[i-1] = 0x7f // the chunk's byte count
	bad["chunks past the data"] = long
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			d := decoder{b: b}
			d.extent(ckptVersion)
			require.True(t, d.bad || d.off != len(b), "loaded")
		})
	}
}

// TestCheckpointCorruptionFailsOrHolds flips bytes of a version 3 and a version 2
// checkpoint body of extents with messages of varied sizes, and truncates them: decoding must never panic,
// a truncated body must fail, and whatever loads must be consistent (every stored seq
// of an extent has lengths, which add up to its counts).
func TestCheckpointCorruptionFailsOrHolds(t *testing.T) {
	v3, v2, p := variedCheckpoint(t)
	for _, c := range []struct {
		v    uint32
		body []byte
	}{{ckptVersion, v3}, {ckptVersionV2, v2}} {
		t.Run(fmt.Sprint("version ", c.v), func(t *testing.T) {
			body := c.body
			x, err := decodeCheckpoint(body, c.v, p, nil)
			require.NoError(t, err)
			requireConsistent(t, x)
			for n := range body {
				_, err := decodeCheckpoint(body[:n], c.v, p, nil)
				require.ErrorIs(t, err, ErrCorrupt, "cut at %d", n)
			}
			loaded := 0
			for i := range body {
				for _, flip := range []byte{0x01, 0x40, 0x80, 0xff} {
					b := slices.Clone(body)
					b[i] ^= flip
					if x, err := decodeCheckpoint(b, c.v, p, nil); err == nil {
						requireConsistent(t, x)
						loaded++
					}
				}
			}
			t.Logf("%d bytes, %d of %d flips load", len(body), loaded, 4*len(body))
		})
	}
}

// variedCheckpoint returns the bodies of a version 3 and a version 2 checkpoint, and
// their position, of a store holding a queue and a topic of messages of varied sizes,
// some acknowledged at random positions.
func variedCheckpoint(t testing.TB) (v3, v2 []byte, p pos) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	rng := rand.New(rand.NewPCG(1, 1))
	b := s.Begin()
	b.AddSub(persistence.SubInfo{Key: subA, Dest: "topic://t", Created: 1})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	for seq := uint64(1); seq <= 150; seq++ {
		b := s.Begin()
		b.Add(&persistence.Message{Dest: "queue://q", Seq: seq, ID: "m", Body: make([]byte, rng.IntN(200))})
		if seq%3 == 0 {
			b.Add(&persistence.Message{Dest: "topic://t", Seq: seq, ID: "m", Body: make([]byte, rng.IntN(200)), Subs: []persistence.SubKey{subA}})
		}
		if seq%4 == 0 {
			b.Ack("queue://q", 1+uint64(rng.IntN(int(seq))))
		}
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	}
	var buf bytes.Buffer
	_, err := writeCheckpointBody(&buf, 1, s.snapshot())
	require.NoError(t, err)
	v2 = v2Checkpoint(s.snapshot())
	p = s.idx.applied
	require.NoError(t, s.Close())
	return buf.Bytes()[ckptHeaderSize : buf.Len()-ckptTrailer], v2, p
}

// FuzzCheckpointDecode decodes checkpoint bodies seeded with a version 3 and a version
// 2 checkpoint of messages of varied sizes, as both versions: never a panic, and what
// loads is consistent.
func FuzzCheckpointDecode(f *testing.F) {
	v3, v2, _ := variedCheckpoint(f)
	f.Add(v3)
	f.Add(v2)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []uint32{ckptVersion, ckptVersionV2} {
			if x, err := decodeCheckpoint(data, v, pos{1, segHeaderSize}, nil); err == nil {
				requireConsistent(t, x)
			}
		}
	})
}

// requireConsistent checks that every stored seq of x's extents has lengths, and that
// they add up to the extent's counts.
func requireConsistent(t *testing.T, x *index) {
	t.Helper()
	for _, d := range x.dests {
		for _, e := range slices.Concat(d.ext, d.moved) {
			var n, bytes, body int64
			e.after(0, func(seq uint64) bool {
				ln, lb := e.lengths(seq)
				require.LessOrEqual(t, lb, ln)
				n, bytes, body = n+1, bytes+int64(ln), body+int64(lb)
				return true
			})
			require.Equal(t, [3]int64{e.n, e.bytes, e.body}, [3]int64{n, bytes, body})
		}
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
			dir := copyFixture(t, filepath.Join("testdata", "ckpt-v2", name))
			o := Options{Dir: dir, MaxFileLength: MinFileLength * 4, CheckpointInterval: -1, CleanupInterval: -1,
				Logger: quietLog, spillMin: 4}
			s := mustOpen(t, o)
			counts := func() (logged, inRuns int64) {
				s.shell.Mu.RLock()
				defer s.shell.Mu.RUnlock()
				for _, d := range s.idx.dests {
					logged += int64(d.log.Len())
					for _, r := range d.runs {
						inRuns += r.n
					}
				}
				return logged, inRuns
			}
			require.Equal(t, string(want), fixtureDump(t, s), "state loaded from the version 2 checkpoint")
			logged, inRuns := counts()
			require.Positive(t, logged, "a version 2 checkpoint's logs load into memory")
			require.Zero(t, inRuns)
			require.NoError(t, s.checkpoint(true))
			logged2, inRuns := counts()
			t.Logf("logs: %d messages before the checkpoint, %d after; %d in runs", logged, logged2, inRuns)
			require.Positive(t, inRuns, "the checkpoint spilled the logs' messages of sealed segments")
			require.Equal(t, string(want), fixtureDump(t, s), "after the spill")
			require.NoError(t, s.Close())

			s = mustOpen(t, o)
			require.Equal(t, 0, s.Recovery().ReplayedRecords)
			h, err := os.ReadFile(s.Recovery().Checkpoint)
			require.NoError(t, err)
			require.Equal(t, uint32(ckptVersion), binary.LittleEndian.Uint32(h[8:]), "Close wrote version 3")
			require.Equal(t, string(want), fixtureDump(t, s), "state loaded from the version 3 checkpoint")
			_, inRuns = counts()
			require.Positive(t, inRuns)
			require.NoError(t, s.Close())
		})
	}
}
