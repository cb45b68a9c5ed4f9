// Package shelltest holds what the log-structured adapters' tests share (journal,
// logstore): a canonical dump of a store, deterministic workloads with the memory store
// as the oracle, and the crash tests' frame (a workload run with a hook before every
// mutating file-system operation, crash points, a failure injected at every operation).
// Only tests import it.
package shelltest

import (
	"cmp"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// CompareKeys orders subscription keys by client ID, then name.
func CompareKeys(a, b persistence.SubKey) int {
	return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Name, b.Name))
}

// Seqs returns the seqs s stores for dest, in order.
func Seqs(t testing.TB, s persistence.Store, dest string) []uint64 {
	t.Helper()
	seqs := []uint64{}
	require.NoError(t, s.Scan(t.Context(), dest, 0, 0, func(m *persistence.Message) error {
		seqs = append(seqs, m.Seq)
		return nil
	}))
	return seqs
}

// SeqRange returns the seqs from to to, in order (nil if to < from).
func SeqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// Files lists the names in dir on fs that keep accepts, in fs.List order.
func Files(t testing.TB, fs vfs.FS, dir string, keep func(name string) bool) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var files []string
	for _, n := range names {
		if keep(n) {
			files = append(files, n)
		}
	}
	return files
}

// Pending returns the seqs durable subscription k still owes on s (none for an unknown
// subscription).
func Pending(t testing.TB, s persistence.Store, k persistence.SubKey) []uint64 {
	t.Helper()
	var seqs []uint64
	_ = s.ScanSub(t.Context(), k, 0, 0, func(m *persistence.Message) error {
		seqs = append(seqs, m.Seq)
		return nil
	})
	return seqs
}

// Dump renders everything a store holds, canonically, for comparing stores (a store
// with the oracle): destinations with LastSeq and Stats, every message field, the owing
// subscriptions, and the subscriptions with their pending sets.
func Dump(t testing.TB, s persistence.Store) string {
	t.Helper()
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	var b strings.Builder
	for _, d := range rec.Destinations {
		fmt.Fprintf(&b, "dest %s last=%d msgs=%d bytes=%d\n", d.Name, d.LastSeq, d.Msgs, d.Bytes)
		require.NoError(t, s.Scan(t.Context(), d.Name, 0, 0, func(m *persistence.Message) error {
			subs := slices.SortedFunc(slices.Values(m.Subs), CompareKeys)
			fmt.Fprintf(&b, "  %d id=%s p=%v prio=%d exp=%d ts=%d red=%d h=%q body=%d/%08x subs=%v\n", m.Seq, m.ID,
				m.Persistent, m.Priority, m.Expires, m.Timestamp, m.RedeliveryCount, m.Headers,
				len(m.Body), crc32.ChecksumIEEE(m.Body), subs)
			return nil
		}))
	}
	for _, sub := range rec.Subs {
		seqs := Pending(t, s, sub.Key)
		fmt.Fprintf(&b, "sub %v on %s sel=%q created=%d pending=%v\n", sub.Key, sub.Dest, sub.Selector, sub.Created, seqs)
	}
	return b.String()
}

// LastSeq is the LastSeq Recover reports for dest (0 if none).
func LastSeq(t testing.TB, s persistence.Store, dest string) uint64 {
	t.Helper()
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	for _, d := range rec.Destinations {
		if d.Name == dest {
			return d.LastSeq
		}
	}
	return 0
}

// Commit commits a batch built by ops with Sync and requires it to succeed.
func Commit(t testing.TB, s persistence.Store, ops func(b persistence.Batch)) {
	t.Helper()
	b := s.Begin()
	ops(b)
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
}

// Workload is a deterministic sequence of batches and the state a correct store holds
// after each prefix of it: States[k] is the Dump after Steps[:k].
type Workload struct {
	Steps  []func(b persistence.Batch)
	States []string
}

// NewWorkload builds n steps: step i records the operations next(i, oracle) returns
// (next may read the oracle, the memory store holding the steps before i), and each is
// run on the oracle to get the states.
func NewWorkload(t testing.TB, n int, next func(i int, oracle persistence.Store) []func(persistence.Batch)) *Workload {
	t.Helper()
	oracle := memstore.New()
	defer oracle.Close()
	w := &Workload{States: []string{Dump(t, oracle)}}
	for i := range n {
		ops := next(i, oracle)
		step := func(b persistence.Batch) {
			for _, o := range ops {
				o(b)
			}
		}
		Commit(t, oracle, step)
		w.Steps = append(w.Steps, step)
		w.States = append(w.States, Dump(t, oracle))
	}
	return w
}

// AckPending returns, for each of keys that still owes messages on oracle, an AckSub of
// one of them picked by rng: a workload step's acknowledgements of durable
// subscriptions.
func AckPending(t testing.TB, oracle persistence.Store, rng *rand.Rand, keys ...persistence.SubKey) []func(persistence.Batch) {
	t.Helper()
	var ops []func(persistence.Batch)
	for _, k := range keys {
		if p := Pending(t, oracle, k); len(p) > 0 {
			seq := p[rng.IntN(len(p))]
			ops = append(ops, func(b persistence.Batch) { b.AckSub(k, seq) })
		}
	}
	return ops
}

// RequirePrefix asserts that got is the state after k steps for some k in [lo, hi], and
// returns k.
func (w *Workload) RequirePrefix(t testing.TB, got string, lo, hi int, what string) int {
	t.Helper()
	for k := hi; k >= lo; k-- {
		if w.States[k] == got {
			return k
		}
	}
	for k := range w.States {
		if w.States[k] == got {
			t.Logf("%s: the state is the state after %d steps, outside %d..%d", what, k, lo, hi)
		}
	}
	require.Equal(t, w.States[lo], got, "%s: the state is not the state after any of steps %d..%d (diff against %d)", what, lo, hi, lo)
	return -1
}
