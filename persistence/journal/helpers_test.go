package journal

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

var quietLog = shelltest.Quiet

const testDir = "/data/kahadb"

// memOptions are the options of a store on fs with tiny segments and no background work
// (tests run checkpoints and compaction themselves, and count syncs without the
// AsyncSyncDelay timer's).
func memOptions(fs vfs.FS) Options {
	return Options{
		Dir: testDir, FS: fs, MaxFileLength: MinFileLength,
		CheckpointInterval: -1, CleanupInterval: -1, AsyncSyncDelay: -1, Logger: quietLog,
		spillMin: 1, // every checkpoint moves what logs hold in sealed segments to run files
	}
}

func mustOpen(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), o)
	require.NoError(t, err)
	return s
}

// dump renders everything a store holds, canonically, for comparing stores.
func dump(t testing.TB, s persistence.Store) string { return shelltest.Dump(t, s) }

// fixtureDump is dump as the builds that wrote testdata's .dump files rendered it.
func fixtureDump(t testing.TB, s persistence.Store) string {
	t.Helper()
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	var b strings.Builder
	for _, d := range rec.Destinations {
		fmt.Fprintf(&b, "dest %s last=%d msgs=%d bytes=%d\n", d.Name, d.LastSeq, d.Msgs, d.Bytes)
		require.NoError(t, s.Scan(t.Context(), d.Name, 0, 0, func(m *persistence.Message) error {
			subs := slices.SortedFunc(slices.Values(m.Subs), shelltest.CompareKeys)
			fmt.Fprintf(&b, "  %d id=%s prio=%d red=%d h=%q body=%x subs=%v\n",
				m.Seq, m.ID, m.Priority, m.RedeliveryCount, m.Headers, m.Body, subs)
			return nil
		}))
	}
	for _, sub := range rec.Subs {
		fmt.Fprintf(&b, "sub %v on %s sel=%q pending=%v\n", sub.Key, sub.Dest, sub.Selector, shelltest.Pending(t, s, sub.Key))
	}
	return b.String()
}

// workload is a deterministic sequence of batches, with the state a correct store holds
// after each prefix of it.
type workload = shelltest.Workload

var (
	subA = persistence.SubKey{ClientID: "c1", Name: "a"}
	subB = persistence.SubKey{ClientID: "c2", Name: "b"}
)

const (
	wlQueueA = "queue://a"
	wlQueueB = "queue://b"
	wlTopic  = "topic://t"
	wlJobs   = "scheduler://jobs" // seqs in random order, as scheduled jobs' due times
)

func wlMessage(rng *rand.Rand, dest string, seq uint64, subs ...persistence.SubKey) *persistence.Message {
	body := make([]byte, 20+rng.IntN(700))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	return &persistence.Message{
		Dest: dest, Seq: seq, ID: fmt.Sprintf("ID:%s:%d", dest, seq),
		Headers:    persistence.Headers{"k", fmt.Sprint(seq), "dup", "x", "dup", ""},
		Body:       body,
		Persistent: true, Priority: uint8(seq % 10), Timestamp: int64(seq), Subs: subs,
	}
}

// newWorkload generates n steps with the memory store as the oracle: queue adds and
// acks, topic messages for two durable subscriptions, AckSub, purges, and subscription
// removal and re-creation.
func newWorkload(t testing.TB, seed uint64, n int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	next := map[string]uint64{}
	add := func(ops *[]func(persistence.Batch), dest string, subs ...persistence.SubKey) {
		next[dest]++
		m := wlMessage(rng, dest, next[dest], subs...)
		*ops = append(*ops, func(b persistence.Batch) { b.Add(m) })
	}
	return shelltest.NewWorkload(t, n, func(i int, oracle persistence.Store) []func(persistence.Batch) {
		var ops []func(persistence.Batch)
		switch r := rng.IntN(100); {
		case i == 0:
			ops = append(ops, func(b persistence.Batch) {
				b.AddSub(persistence.SubInfo{Key: subA, Dest: wlTopic, Created: 1})
				b.AddSub(persistence.SubInfo{Key: subB, Dest: wlTopic, Selector: "x > 1", Created: 2})
			})
		case r < 40 && rng.IntN(3) == 0: // scheduled jobs: seqs not appended in order
			for range 1 + rng.IntN(6) {
				seq := 1 + rng.Uint64N(1<<20)
				m := wlMessage(rng, wlJobs, seq)
				ops = append(ops, func(b persistence.Batch) { b.Add(m) })
			}
		case r < 40:
			dest := []string{wlQueueA, wlQueueB}[rng.IntN(2)]
			for range 1 + rng.IntN(4) {
				add(&ops, dest)
			}
		case r < 62:
			for _, dest := range []string{wlQueueA, wlQueueB, wlJobs} {
				seqs := shelltest.Seqs(t, oracle, dest)
				for j := 0; j < len(seqs) && j < 1+rng.IntN(4); j++ {
					seq := seqs[rng.IntN(len(seqs))]
					ops = append(ops, func(b persistence.Batch) { b.Ack(dest, seq) })
				}
			}
			if rng.IntN(2) == 0 {
				add(&ops, wlQueueA)
			}
		case r < 75:
			for range 1 + rng.IntN(2) {
				switch rng.IntN(3) {
				case 0:
					add(&ops, wlTopic, subA)
				case 1:
					add(&ops, wlTopic, subB)
				default:
					add(&ops, wlTopic, subA, subB)
				}
			}
		case r < 88:
			ops = shelltest.AckPending(t, oracle, rng, subA, subB)
		case r < 91:
			ops = append(ops, func(b persistence.Batch) { b.Purge(wlQueueB) })
		case r < 94:
			ops = append(ops, func(b persistence.Batch) {
				b.RemoveSub(subB)
				b.AddSub(persistence.SubInfo{Key: subB, Dest: wlTopic, Created: 3})
			})
		default: // a large message, so records cross segment sizes
			next[wlQueueA]++
			m := wlMessage(rng, wlQueueA, next[wlQueueA])
			m.Body = make([]byte, 3000+rng.IntN(3000))
			ops = append(ops, func(b persistence.Batch) { b.Add(m) })
		}
		return ops
	})
}
