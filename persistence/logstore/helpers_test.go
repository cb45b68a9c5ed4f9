package logstore

import (
	"cmp"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

const testDir = "/data/kafkalog"

// memOptions are the options of a store on fs with the smallest segments and no
// background checkpoints (tests call checkpoint themselves).
func memOptions(fs vfs.FS) Options {
	return Options{Dir: testDir, FS: fs, SegmentBytes: MinSegmentBytes, CheckpointInterval: -1, Logger: quietLog}
}

func mustOpen(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), o)
	require.NoError(t, err)
	return s
}

func commit(t testing.TB, s persistence.Store, ops func(b persistence.Batch)) {
	t.Helper()
	b := s.Begin()
	ops(b)
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
}

func testMsg(dest string, seq uint64, bodyLen int, subs ...persistence.SubKey) *persistence.Message {
	body := make([]byte, bodyLen)
	for i := range body {
		body[i] = byte(seq + uint64(i))
	}
	return &persistence.Message{Dest: dest, Seq: seq, ID: fmt.Sprintf("ID:%s:%d", dest, seq),
		Headers: persistence.Headers{"n", fmt.Sprint(seq)}, Body: body, Persistent: true, Priority: 4, Subs: subs}
}

func scanSeqs(t testing.TB, s persistence.Store, dest string) []uint64 {
	t.Helper()
	seqs := []uint64{}
	require.NoError(t, s.Scan(t.Context(), dest, 0, 0, func(m *persistence.Message) error {
		seqs = append(seqs, m.Seq)
		return nil
	}))
	return seqs
}

func compareKeys(a, b persistence.SubKey) int {
	return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Name, b.Name))
}

// dump renders everything a store holds, canonically, for comparing a store with the
// oracle: destinations with LastSeq and Stats, every message field, the owing
// subscriptions, and the subscriptions with their pending sets.
func dump(t testing.TB, s persistence.Store) string {
	t.Helper()
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	var b strings.Builder
	for _, d := range rec.Destinations {
		fmt.Fprintf(&b, "dest %s last=%d msgs=%d bytes=%d\n", d.Name, d.LastSeq, d.Msgs, d.Bytes)
		require.NoError(t, s.Scan(t.Context(), d.Name, 0, 0, func(m *persistence.Message) error {
			subs := slices.SortedFunc(slices.Values(m.Subs), compareKeys)
			fmt.Fprintf(&b, "  %d id=%s p=%v prio=%d exp=%d ts=%d red=%d h=%q body=%d/%08x subs=%v\n", m.Seq, m.ID,
				m.Persistent, m.Priority, m.Expires, m.Timestamp, m.RedeliveryCount, m.Headers,
				len(m.Body), crc32.ChecksumIEEE(m.Body), subs)
			return nil
		}))
	}
	for _, sub := range rec.Subs {
		var seqs []uint64
		require.NoError(t, s.ScanSub(t.Context(), sub.Key, 0, 0, func(m *persistence.Message) error {
			seqs = append(seqs, m.Seq)
			return nil
		}))
		fmt.Fprintf(&b, "sub %v on %s sel=%q created=%d pending=%v\n", sub.Key, sub.Dest, sub.Selector, sub.Created, seqs)
	}
	return b.String()
}

// workload is a deterministic sequence of batches and the state a correct store holds
// after each prefix of it: states[k] is the dump after steps[:k].
type workload struct {
	steps  []func(b persistence.Batch)
	states []string
}

var (
	subX = persistence.SubKey{ClientID: "c1", Name: "x"}
	subY = persistence.SubKey{ClientID: "c2", Name: "y"}
)

const (
	wlQueue1 = "queue://one"
	wlQueue2 = "queue://two"
	wlTopic1 = "topic://t1"
	wlTopic2 = "topic://t2"
)

// newWorkload generates n steps, run on the memory store as the oracle: queue adds
// (some replacing a stored seq) and acks, topic messages for two durable subscriptions,
// AckSub, purges, and the subscription changes the checkpoint must get right: removal,
// re-creation, replacement on the same topic and moves to the other topic.
func newWorkload(t testing.TB, seed uint64, n int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	oracle := memstore.New()
	defer oracle.Close()
	w := &workload{states: []string{dump(t, oracle)}}
	last := map[string]uint64{}
	subTopic := map[persistence.SubKey]string{}
	stored := func(dest string) []uint64 { return scanSeqs(t, oracle, dest) }
	pending := func(k persistence.SubKey) []uint64 {
		var seqs []uint64
		_ = oracle.ScanSub(t.Context(), k, 0, 0, func(m *persistence.Message) error {
			seqs = append(seqs, m.Seq)
			return nil
		})
		return seqs
	}
	msg := func(dest string, seq uint64, subs ...persistence.SubKey) *persistence.Message {
		m := testMsg(dest, seq, 10+rng.IntN(400), subs...)
		m.Priority, m.Expires, m.RedeliveryCount = uint8(rng.IntN(10)), rng.Int64N(1<<40), uint32(rng.IntN(3))
		if rng.IntN(4) == 0 {
			m.Headers = append(m.Headers, "dup", "a", "dup", "")
		}
		return m
	}
	for i := range n {
		var ops []func(persistence.Batch)
		add := func(m *persistence.Message) { ops = append(ops, func(b persistence.Batch) { b.Add(m) }) }
		next := func(dest string) uint64 { last[dest]++; return last[dest] }
		switch r := rng.IntN(100); {
		case i == 0:
			subTopic[subX], subTopic[subY] = wlTopic1, wlTopic1
			ops = append(ops, func(b persistence.Batch) {
				b.AddSub(persistence.SubInfo{Key: subX, Dest: wlTopic1, Created: 1})
				b.AddSub(persistence.SubInfo{Key: subY, Dest: wlTopic1, Selector: "a > 1", Created: 2})
			})
		case r < 35:
			dest := []string{wlQueue1, wlQueue2}[rng.IntN(2)]
			for range 1 + rng.IntN(4) {
				add(msg(dest, next(dest)))
			}
		case r < 40: // redelivery: replace a stored message
			if seqs := stored(wlQueue1); len(seqs) > 0 {
				add(msg(wlQueue1, seqs[rng.IntN(len(seqs))]))
			}
		case r < 60:
			for _, dest := range []string{wlQueue1, wlQueue2} {
				seqs := stored(dest)
				for j := 0; j < len(seqs) && j < 1+rng.IntN(5); j++ {
					ops = append(ops, func(b persistence.Batch) { b.Ack(dest, seqs[j]) }) // mostly in order
				}
			}
		case r < 75:
			topic := []string{wlTopic1, wlTopic2}[rng.IntN(2)]
			for range 1 + rng.IntN(3) {
				subs := [][]persistence.SubKey{{subX}, {subY}, {subX, subY}, {subY, subX, subY}}[rng.IntN(4)]
				add(msg(topic, next(topic), subs...))
			}
		case r < 88:
			for _, k := range []persistence.SubKey{subX, subY} {
				if p := pending(k); len(p) > 0 {
					seq := p[rng.IntN(len(p))]
					ops = append(ops, func(b persistence.Batch) { b.AckSub(k, seq) })
				}
			}
		case r < 91:
			ops = append(ops, func(b persistence.Batch) { b.Purge(wlQueue2) })
		case r < 94: // remove and re-create, maybe in separate batches
			k := []persistence.SubKey{subX, subY}[rng.IntN(2)]
			topic := subTopic[k]
			ops = append(ops, func(b persistence.Batch) { b.RemoveSub(k) })
			if rng.IntN(2) == 0 {
				ops = append(ops, func(b persistence.Batch) {
					b.AddSub(persistence.SubInfo{Key: k, Dest: topic, Created: int64(i)})
				})
			}
		case r < 97: // move to the other topic, or (re)create on it
			k := []persistence.SubKey{subX, subY}[rng.IntN(2)]
			topic := wlTopic2
			if subTopic[k] == wlTopic2 {
				topic = wlTopic1
			}
			subTopic[k] = topic
			ops = append(ops, func(b persistence.Batch) {
				b.AddSub(persistence.SubInfo{Key: k, Dest: topic, Selector: "moved", Created: int64(i)})
			})
		default: // replace a subscription's info on its topic; or a large message
			if k := subX; subTopic[k] != "" && rng.IntN(2) == 0 {
				topic := subTopic[k]
				ops = append(ops, func(b persistence.Batch) {
					b.AddSub(persistence.SubInfo{Key: k, Dest: topic, Selector: fmt.Sprint("v", i), Created: 7})
				})
			} else {
				m := msg(wlQueue1, next(wlQueue1))
				m.Body = make([]byte, 3000+rng.IntN(6000)) // crosses segment boundaries
				add(m)
			}
		}
		step := func(b persistence.Batch) {
			for _, o := range ops {
				o(b)
			}
		}
		b := oracle.Begin()
		step(b)
		require.NoError(t, b.Commit(t.Context(), persistence.Sync))
		w.steps = append(w.steps, step)
		w.states = append(w.states, dump(t, oracle))
	}
	return w
}

// requirePrefix asserts that got is the state after k steps for some k in [lo, hi], and
// returns k.
func (w *workload) requirePrefix(t testing.TB, got string, lo, hi int, what string) int {
	t.Helper()
	for k := hi; k >= lo; k-- {
		if w.states[k] == got {
			return k
		}
	}
	for k := range w.states {
		if w.states[k] == got {
			t.Logf("%s: the state is the state after %d steps, outside %d..%d", what, k, lo, hi)
		}
	}
	require.Equal(t, w.states[lo], got, "%s: the state is not the state after any of steps %d..%d (diff against %d)", what, lo, hi, lo)
	return -1
}
