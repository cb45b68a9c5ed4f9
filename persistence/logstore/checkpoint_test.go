package logstore

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

// scripted builds a workload from fixed steps, with the memory store as the oracle.
func scripted(t *testing.T, steps ...func(b persistence.Batch)) *workload {
	t.Helper()
	return shelltest.NewWorkload(t, len(steps), func(i int, _ persistence.Store) []func(persistence.Batch) {
		return steps[i : i+1]
	})
}

// TestCheckpointSubscriptionChanges runs the cases the checkpoint's subscription rule
// (see the checkpoint type) is there for, checkpointing after every step so the
// low-water mark lands between a subscription change and the messages around it; every
// prefix must come back exactly after a clean reopen and after a power cut.
func TestCheckpointSubscriptionChanges(t *testing.T) {
	const q, t1, t2 = "queue://q", "topic://t1", "topic://t2"
	x := persistence.SubKey{ClientID: "c", Name: "x"}
	y := persistence.SubKey{ClientID: "c", Name: "y"}
	info := func(k persistence.SubKey, topic, sel string) persistence.SubInfo {
		return persistence.SubInfo{Key: k, Dest: topic, Selector: sel, Created: 9}
	}
	add := func(m *persistence.Message) func(persistence.Batch) { return func(b persistence.Batch) { b.Add(m) } }
	ack := func(dest string, seq uint64) func(persistence.Batch) {
		return func(b persistence.Batch) { b.Ack(dest, seq) }
	}
	cases := map[string]*workload{
		// A topic message names x before x exists; x registers after it; the mark lies
		// before both. Replay must not hand the message to x.
		// The mark then moves, but not past the message.
		"registered after a message naming it": scripted(t,
			add(testMsg(q, 1, 10)), ack(q, 1), add(testMsg(q, 2, 10)), add(testMsg(q, 3, 10)),
			add(testMsg(t1, 1, 10, x)),
			func(b persistence.Batch) { b.AddSub(info(x, t1, "")) },
			ack(q, 2),
			add(testMsg(t1, 2, 10, x)),
		),
		// x holds messages, is removed and re-created after the mark: the new x holds
		// only what came after it.
		"removed and re-created": scripted(t,
			func(b persistence.Batch) { b.AddSub(info(x, t1, "")); b.AddSub(info(y, t1, "")) },
			add(testMsg(q, 1, 10)), ack(q, 1),
			add(testMsg(t1, 1, 10, x)), add(testMsg(t1, 2, 10, x, y)),
			func(b persistence.Batch) { b.RemoveSub(x) },
			add(testMsg(t1, 3, 10, x, y)),
			func(b persistence.Batch) { b.AddSub(info(x, t1, "again")) },
			add(testMsg(t1, 4, 10, x, y)),
			func(b persistence.Batch) { b.AckSub(y, 2); b.AckSub(y, 3) },
		),
		// x moves to another topic and back, with messages on both in between.
		"moved between topics": scripted(t,
			func(b persistence.Batch) { b.AddSub(info(x, t1, "")) },
			add(testMsg(q, 1, 10)), add(testMsg(q, 2, 10)),
			add(testMsg(t1, 1, 10, x)), add(testMsg(t2, 1, 10, x)),
			func(b persistence.Batch) { b.AddSub(info(x, t2, "moved")) },
			ack(q, 1),
			add(testMsg(t1, 2, 10, x)), add(testMsg(t2, 2, 10, x)),
			func(b persistence.Batch) { b.AddSub(info(x, t1, "back")) },
			ack(q, 2),
			add(testMsg(t2, 3, 10, x)), add(testMsg(t1, 3, 10, x)),
		),
		// x's info is replaced on the same topic while it holds a message pinning the
		// mark: it keeps the message and the latest info.
		"replaced on its topic": scripted(t,
			func(b persistence.Batch) { b.AddSub(info(x, t1, "v1")) },
			add(testMsg(t1, 1, 10, x)),
			func(b persistence.Batch) { b.AddSub(info(x, t1, "v2")) },
			add(testMsg(q, 1, 10)), ack(q, 1),
			func(b persistence.Batch) { b.AddSub(info(x, t1, "v3")); b.AckSub(x, 1) },
			add(testMsg(t1, 2, 10, x)),
		),
		// Everything is acknowledged: the mark reaches the end of the log, LastSeq and
		// the subscriptions live on in the checkpoint alone.
		"all acknowledged": scripted(t,
			func(b persistence.Batch) { b.AddSub(info(x, t1, "")) },
			add(testMsg(t1, 1, 10, x)), add(testMsg(t1, 2, 10)), add(testMsg(q, 7, 10)),
			func(b persistence.Batch) { b.AckSub(x, 1); b.Ack(q, 7) },
			func(b persistence.Batch) { b.Purge(q); b.AddSub(info(y, t2, "")) },
		),
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			for k := 1; k <= len(w.Steps); k++ {
				fs := vfs.NewMem()
				s := mustOpen(t, memOptions(fs))
				for _, step := range w.Steps[:k] {
					commit(t, s, step)
					require.NoError(t, s.checkpoint())
				}
				require.Equal(t, w.States[k], dump(t, s), "prefix %d before reopening", k)
				crashed := fs.CrashClone()
				require.NoError(t, s.Close())
				for _, f := range []*vfs.Mem{fs, crashed} {
					s = mustOpen(t, memOptions(f))
					require.Equal(t, w.States[k], dump(t, s), "prefix %d after reopening", k)
					require.NoError(t, s.Close())
				}
			}
		})
	}
}

func TestCheckpointEncoding(t *testing.T) {
	c := checkpoint{low: 1 << 40, end: 1<<40 + 5,
		dests: []destCheckpoint{{"queue://a", 7}, {"topic://ü", 1 << 62}},
		subs: []subCheckpoint{
			{persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "n"}, Dest: "topic://ü", Selector: "a > 1", Created: -5}, 3},
			{persistence.SubInfo{Key: persistence.SubKey{Name: "only-name"}, Dest: "topic://x"}, 1 << 40},
		}}
	b := c.encode()
	got, err := decodeCheckpoint(b)
	require.NoError(t, err)
	require.Equal(t, c, got)

	empty, err := decodeCheckpoint(new(checkpoint).encode())
	require.NoError(t, err)
	require.Zero(t, empty.low)
	require.Empty(t, empty.dests)
	require.Empty(t, empty.subs)

	for i := range b { // every single-byte change is caught
		bad := append([]byte(nil), b...)
		bad[i] ^= 0x40
		_, err := decodeCheckpoint(bad)
		require.ErrorIs(t, err, ErrCorrupt, "byte %d changed", i)
	}
	for n := range len(b) {
		_, err := decodeCheckpoint(b[:n])
		require.ErrorIs(t, err, ErrCorrupt, "cut at %d", n)
	}
}

// TestDamagedCheckpointRefusesOpen: a checkpoint that fails its checksum is not guessed
// around (that could bring acknowledged messages back or lose subscriptions).
func TestDamagedCheckpointRefusesOpen(t *testing.T) {
	fs := vfs.NewMem()
	s := mustOpen(t, memOptions(fs))
	commit(t, s, func(b persistence.Batch) { b.Add(testMsg("queue://q", 1, 10)) })
	commit(t, s, func(b persistence.Batch) { b.Ack("queue://q", 1) })
	require.NoError(t, s.Close())
	path := filepath.Join(testDir, checkpointFile)
	data, err := fs.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	require.NoError(t, fs.WriteFile(path, data))
	_, err = Open(t.Context(), memOptions(fs))
	require.ErrorIs(t, err, ErrCorrupt)
	// The log is released again: a repaired store opens.
	data[len(data)-1] ^= 1
	require.NoError(t, fs.WriteFile(path, data))
	s = mustOpen(t, memOptions(fs))
	require.NoError(t, s.Close())
}
