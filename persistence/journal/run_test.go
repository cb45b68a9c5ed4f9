package journal

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
)

// jobStore is a store of scheduled jobs and what it must hold: seq -> body.
type jobStore struct {
	acked []uint64 // jobs acknowledged, in order
	t     *testing.T
	o     Options
	s     *Store
	want  map[uint64][]byte
	rng   *rand.Rand
}

// newJobStore opens a store in a real directory with small segments (4 KiB: a few
// dozen jobs each), so the jobs spread over many sealed segments and runs.
func newJobStore(t *testing.T) *jobStore {
	o := Options{Dir: t.TempDir(), MaxFileLength: MinFileLength, CheckpointInterval: -1, CleanupInterval: -1,
		Logger: quietLog, spillMin: 8}
	js := &jobStore{t: t, o: o, want: map[uint64][]byte{}, rng: rand.New(rand.NewPCG(11, 12))}
	js.s = mustOpen(t, o)
	t.Cleanup(func() { js.s.Close() })
	return js
}

// add stores n jobs with random keys (due time << 21), 50 a batch.
func (js *jobStore) add(n int) {
	for lo := 0; lo < n; lo += 50 {
		b := js.s.Begin()
		for range min(50, n-lo) {
			seq := (1+js.rng.Uint64N(1<<30))<<21 | js.rng.Uint64N(1<<21)
			if js.want[seq] != nil {
				continue
			}
			body := make([]byte, 16+js.rng.IntN(64))
			for i := range body {
				body[i] = byte(js.rng.Uint32())
			}
			js.want[seq] = body
			b.Add(&persistence.Message{Dest: wlJobs, Seq: seq, Body: body, Persistent: true})
		}
		require.NoError(js.t, b.Commit(js.t.Context(), persistence.Sync))
	}
}

// ack acknowledges a random fraction of the stored jobs.
func (js *jobStore) ack(frac float64) {
	b := js.s.Begin()
	for _, seq := range slices.Sorted(maps.Keys(js.want)) {
		if js.rng.Float64() < frac {
			b.Ack(wlJobs, seq)
			delete(js.want, seq)
			js.acked = append(js.acked, seq)
		}
	}
	require.NoError(js.t, b.Commit(js.t.Context(), persistence.Sync))
}

// reopen closes the store and opens it again from its files.
func (js *jobStore) reopen() {
	require.NoError(js.t, js.s.Close())
	js.s = mustOpen(js.t, js.o)
}

// check asserts that the store holds exactly the wanted jobs, in seq order, with exact
// Stats, and that Scan from any point (the scheduler's storedKey: Scan(k-1, 1)) finds
// the next one.
func (js *jobStore) check(what string) {
	t := js.t
	t.Helper()
	seqs := slices.Sorted(maps.Keys(js.want))
	var got []uint64
	bodyBytes := int64(0)
	require.NoError(t, js.s.Scan(t.Context(), wlJobs, 0, 0, func(m *persistence.Message) error {
		got = append(got, m.Seq)
		if !bytes.Equal(js.want[m.Seq], m.Body) {
			t.Errorf("%s: body of %d differs", what, m.Seq)
		}
		return nil
	}), what)
	require.Equal(t, seqs, got, what)
	for _, seq := range seqs {
		bodyBytes += int64(len(js.want[seq]))
	}
	msgs, b := js.s.Stats(wlJobs)
	require.Equal(t, [2]int64{int64(len(seqs)), bodyBytes}, [2]int64{msgs, b}, "%s: Stats", what)
	for range 50 {
		k := js.rng.Uint64N(1<<51) + 1
		i, _ := slices.BinarySearch(seqs, k)
		var next []uint64
		require.NoError(t, js.s.Scan(t.Context(), wlJobs, k-1, 1, func(m *persistence.Message) error {
			next = append(next, m.Seq)
			return nil
		}))
		if i < len(seqs) {
			require.Equal(t, []uint64{seqs[i]}, next, "%s: Scan(%d, 1)", what, k-1)
		} else {
			require.Empty(t, next, "%s: Scan(%d, 1)", what, k-1)
		}
	}
	js.checkContains(what)
}

// checkContains checks Contains against the jobs stored, acknowledged and never added.
func (js *jobStore) checkContains(what string) {
	t := js.t
	t.Helper()
	contains := func(seq uint64) bool {
		ok, err := js.s.Contains(t.Context(), wlJobs, seq)
		require.NoError(t, err, "%s: Contains(%d)", what, seq)
		return ok
	}
	for seq := range js.want {
		require.True(t, contains(seq), "%s: Contains(%d) of a stored job", what, seq)
	}
	for _, seq := range js.acked {
		if js.want[seq] == nil {
			require.False(t, contains(seq), "%s: Contains(%d) of an acknowledged job", what, seq)
		}
	}
	for range 200 {
		seq := js.rng.Uint64N(1<<51) + 1
		require.Equal(t, js.want[seq] != nil, contains(seq), "%s: Contains(%d)", what, seq)
	}
	ok, err := js.s.Contains(t.Context(), "queue://none", 1)
	require.NoError(t, err)
	require.False(t, ok, "%s: Contains of an unknown destination", what)
}

// runs returns how many runs and log entries the jobs' destination has.
func (js *jobStore) runs() (runs, logged int) {
	js.s.shell.Mu.RLock()
	defer js.s.shell.Mu.RUnlock()
	d := js.s.idx.dests[wlJobs]
	if d == nil {
		return 0, 0
	}
	return len(d.runs), d.log.Len()
}

func TestRunsHoldJobsAcrossReopen(t *testing.T) {
	js := newJobStore(t)
	js.add(3000)
	js.ack(0.2)
	require.NoError(t, js.s.checkpoint(true))
	runs, logged := js.runs()
	require.Greater(t, runs, 10, "jobs of sealed segments spill to runs")
	require.Less(t, logged, 200, "only the active segment's jobs stay in the log")
	js.check("after the spill")

	js.ack(0.2) // acknowledgements of run entries: found in the files
	js.add(500)
	js.check("after acks of run entries")

	js.reopen()
	require.Zero(t, js.s.Recovery().ReplayedRecords)
	runs, logged = js.runs()
	require.Greater(t, runs, 10)
	require.Zero(t, logged, "Close spills the active segment's jobs too")
	js.check("after reopen")
	onDisk := int64(0)
	for _, pattern := range []string{"db-*.log", "run-*.idx", "index-*.ckpt"} {
		names, err := filepath.Glob(filepath.Join(js.o.Dir, pattern))
		require.NoError(t, err)
		for _, name := range names {
			fi, err := os.Stat(name)
			require.NoError(t, err)
			onDisk += fi.Size()
		}
	}
	require.Equal(t, onDisk, js.s.DiskUsage(), "DiskUsage counts segments, run files and checkpoints")

	js.ack(0.3)
	js.check("after acks after reopen")
	js.reopen()
	js.check("after the second reopen")

	// Compaction moves the live jobs of mostly dead segments (their runs' live entries)
	// forward; the emptied segments are deleted with their run files.
	js.ack(0.6)
	js.s.opts.CompactLiveRatio = 0.9
	segsBefore, runFilesBefore := countFiles(t, js.o.Dir)
	moved, err := js.s.compact()
	require.NoError(t, err)
	require.Positive(t, moved)
	require.NoError(t, js.s.checkpoint(true))
	require.NoError(t, js.s.checkpoint(true))
	js.check("after compaction")
	segsAfter, runFilesAfter := countFiles(t, js.o.Dir)
	require.Less(t, segsAfter, segsBefore, "compacted segments are deleted")
	require.Less(t, runFilesAfter, runFilesBefore, "with their run files")
	js.reopen()
	js.check("after compaction and reopen")
}

// countFiles counts the segment and run files in dir.
func countFiles(t *testing.T, dir string) (segs, runs int) {
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range names {
		if _, ok := parseSegmentName(e.Name()); ok {
			segs++
		}
		if _, _, ok := parseRunName(e.Name()); ok {
			runs++
		}
	}
	return segs, runs
}

// TestRunFileDamagedFallsBack damages or deletes a run file the checkpoints refer to:
// they are unusable, recovery replays the segments, and every job is there.
func TestRunFileDamagedFallsBack(t *testing.T) {
	for _, how := range []string{"flipped byte", "truncated", "deleted"} {
		t.Run(how, func(t *testing.T) {
			js := newJobStore(t)
			js.add(1500)
			require.NoError(t, js.s.checkpoint(true))
			js.add(200)
			require.NoError(t, js.s.Close())
			names, err := filepath.Glob(filepath.Join(js.o.Dir, "run-*.idx"))
			require.NoError(t, err)
			require.NotEmpty(t, names)
			victim := names[len(names)/2]
			switch how {
			case "flipped byte":
				b, err := os.ReadFile(victim)
				require.NoError(t, err)
				b[len(b)/2] ^= 0x40
				require.NoError(t, os.WriteFile(victim, b, 0o644))
			case "truncated":
				require.NoError(t, os.Truncate(victim, 100))
			case "deleted":
				require.NoError(t, os.Remove(victim))
			}
			js.s = mustOpen(t, js.o)
			require.NotEmpty(t, js.s.Recovery().Corrupt, "the checkpoints are reported unusable")
			require.Positive(t, js.s.Recovery().ReplayedRecords)
			js.check("after recovery without a usable checkpoint")
			js.ack(0.5)
			js.reopen()
			js.check("after acks and reopen")
		})
	}
}

func TestRunNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		seg  uint32
		id   uint64
		ok   bool
	}{
		{"run-1-1.idx", 1, 1, true},
		{"run-42-7.idx", 42, 7, true},
		{"run-0-1.idx", 0, 0, false},
		{"run-1-0.idx", 0, 0, false},
		{"run-01-1.idx", 0, 0, false},
		{"run-1-1.idx.tmp", 0, 0, false},
		{"run-1.idx", 0, 0, false},
		{"db-1.log", 0, 0, false},
	} {
		seg, id, ok := parseRunName(tc.name)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.seg, seg, tc.name)
		require.Equal(t, tc.id, id, tc.name)
	}
}

// TestOrphanRunFilesRemoved: a run file no retained checkpoint refers to (a spill
// whose checkpoint was never written) is deleted by the first checkpoint after which
// every retained checkpoint's runs are known, while those they refer to stay.
func TestOrphanRunFilesRemoved(t *testing.T) {
	js := newJobStore(t)
	js.add(1000)
	require.NoError(t, js.s.checkpoint(true))
	require.NoError(t, js.s.Close())
	names, err := filepath.Glob(filepath.Join(js.o.Dir, "run-*.idx"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	seg, _, ok := parseRunName(filepath.Base(names[0]))
	require.True(t, ok)
	orphan := filepath.Join(js.o.Dir, runName(seg, 1<<40))
	data, err := os.ReadFile(names[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(orphan, data, 0o644))

	js.s = mustOpen(t, js.o)
	js.check("with an orphan run file")
	require.FileExists(t, orphan, "Open deletes only the run files whose segment is gone")
	js.add(100)
	require.NoError(t, js.s.checkpoint(true)) // the older checkpoint, only peeked at, leaves
	require.NoFileExists(t, orphan)
	js.check("after the orphan's removal")
	js.reopen()
	js.check("after reopen")
}

// FuzzRunFile feeds arbitrary bytes to the run file reader, with the header fields a
// checkpoint would claim taken from the input: it never panics, and a file it accepts
// is sorted and every entry is found where it is.
func FuzzRunFile(f *testing.F) {
	const dest = "scheduler://jobs"
	seed := func(entries []runEntry) []byte {
		fs := vfs.NewMem()
		require.NoError(f, fs.MkdirAll("/d", 0o755))
		r, err := writeRun(fs, "/d", 1, 1, dest, entries)
		require.NoError(f, err)
		require.NoError(f, r.f.Close())
		data, err := readFile(fs, r.path)
		require.NoError(f, err)
		return data
	}
	var many []runEntry
	for i := range 200 {
		many = append(many, runEntry{seq: uint64(i*7 + 1), l: loc{seg: 1, off: uint32(16 + 8*i), n: 40, body: 3}})
	}
	f.Add(seed(many[:1]))
	f.Add(seed(many))
	f.Add(seed(many[:65]))
	f.Add([]byte(runMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		require.NoError(t, fs.MkdirAll("/d", 0o755))
		path := filepath.Join("/d", runName(1, 1))
		w, err := fs.Create(path)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		hdr := runHeaderLen + len(dest)
		count := max(0, (len(data)-hdr-runTrailer)/runEntryLen)
		crc := uint32(0)
		if len(data) >= runTrailer {
			crc = binary.LittleEndian.Uint32(data[len(data)-runTrailer:])
		}
		live := make([]uint64, (count+63)/64)
		for p := range count {
			live[p>>6] |= 1 << (p & 63)
		}
		r, err := openRun(fs, "/d", 1, 1, dest, count, crc, live)
		if err != nil {
			return
		}
		defer r.f.Close()
		require.Equal(t, int64(count), r.n)
		var buf []byte
		prev, n := uint64(0), 0
		require.NoError(t, r.each(0, &buf, func(p int, e runEntry) bool {
			require.Greater(t, e.seq, prev)
			prev = e.seq
			n++
			q, got, ok, err := r.find(e.seq, &buf)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, p, q)
			require.Equal(t, e, got)
			require.True(t, r.mayHold(e.seq, mix64(e.seq)))
			return true
		}))
		require.Equal(t, count, n)
	})
}

// TestRunsOfTopic: a topic whose messages arrive out of seq order (late batches) gets
// its log spilled to runs like the scheduler's; a durable subscription's scan and
// acknowledgements find them there, before and after a reopen.
func TestRunsOfTopic(t *testing.T) {
	o := Options{Dir: t.TempDir(), MaxFileLength: MinFileLength, CheckpointInterval: -1, CleanupInterval: -1,
		Logger: quietLog, spillMin: 8}
	s := mustOpen(t, o)
	defer func() { s.Close() }()
	const topic = "topic://late"
	sub := persistence.SubKey{ClientID: "c", Name: "s"}
	b := s.Begin()
	b.AddSub(persistence.SubInfo{Key: sub, Dest: topic, Created: 1})
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	rng := rand.New(rand.NewPCG(21, 22))
	perm := rng.Perm(2000)
	want := map[uint64]bool{}
	for lo := 0; lo < len(perm); lo += 40 {
		b := s.Begin()
		for _, p := range perm[lo : lo+40] {
			seq := uint64(p+1) * 3
			want[seq] = true
			b.Add(&persistence.Message{Dest: topic, Seq: seq, Body: []byte("late"), Subs: []persistence.SubKey{sub}})
		}
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	}
	require.NoError(t, s.checkpoint(true))
	s.shell.Mu.RLock()
	runs := len(s.idx.dests[topic].runs)
	s.shell.Mu.RUnlock()
	require.Positive(t, runs)
	check := func(what string) {
		t.Helper()
		var got []uint64
		require.NoError(t, s.ScanSub(t.Context(), sub, 0, 0, func(m *persistence.Message) error {
			got = append(got, m.Seq)
			require.Equal(t, []persistence.SubKey{sub}, m.Subs)
			return nil
		}), what)
		require.Equal(t, slices.Sorted(maps.Keys(want)), got, what)
		msgs, bytes := s.Stats(topic)
		require.Equal(t, [2]int64{int64(len(want)), int64(4 * len(want))}, [2]int64{msgs, bytes}, what)
	}
	check("after the spill")
	ackSome := func() {
		b := s.Begin()
		for seq := range want {
			if rng.IntN(3) == 0 {
				b.AckSub(sub, seq)
				delete(want, seq)
			}
		}
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	}
	ackSome()
	check("after acknowledgements")
	require.NoError(t, s.Close())
	s = mustOpen(t, o)
	check("after reopen")
	ackSome()
	check("after acknowledgements after reopen")
}

// TestRunFilter: a run's membership filter never misses a seq it holds and says "may
// hold" of about 1% of the others (at most 2% here).
func TestRunFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 100_000
	seqs := make([]uint64, 0, n)
	held := map[uint64]bool{}
	for len(seqs) < n {
		seq := (1+rng.Uint64N(1<<30))<<21 | rng.Uint64N(1<<21)
		if !held[seq] {
			held[seq] = true
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	r := &run{count: n, n: n}
	r.index(func(yield func(p int, e runEntry)) {
		for p, seq := range seqs {
			yield(p, runEntry{seq: seq})
		}
	})
	for _, seq := range seqs {
		require.True(t, r.mayHold(seq, mix64(seq)), "seq %d held", seq)
	}
	fp, tries := 0, 0
	for tries < n {
		seq := r.lo + rng.Uint64N(r.hi-r.lo)
		if held[seq] {
			continue
		}
		tries++
		if r.mayHold(seq, mix64(seq)) {
			fp++
		}
	}
	t.Logf("false positives: %.2f%% (%d bits a seq, %d probes in one word)", 100*float64(fp)/float64(tries), runBloomBits, runBloomHashes)
	require.Less(t, fp, tries/50)
}
