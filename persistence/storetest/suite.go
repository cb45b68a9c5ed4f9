// Package storetest is the conformance suite of the persistence.Store contract. Every
// adapter runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, harness, storetest.Features{Durable: true})
//	}
//	func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, harness) }
//
// The suite tests the contract only, never an adapter's internals. Where the comments of
// package persistence leave room, the suite pins the behaviour down; these rules are
// part of the contract every adapter follows:
//
// Messages and sequence numbers
//   - Add copies what it needs before it returns: the caller may modify or reuse the
//     Message (and its Headers and Body) right after Add.
//   - Seq values from 1 to math.MaxInt64 are supported (signed 64-bit columns suffice);
//     Seq 0 is invalid. Adds need not come in seq order; Scan is always in seq order.
//   - Add of a (dest, seq) that is stored replaces that message, Subs included.
//   - Headers round-trip exactly: order, repeated keys, empty values. Body round-trips
//     byte for byte; a nil and an empty Body (or Headers) are not told apart.
//   - The typed part round-trips exactly: Kind, and Props in order with their kinds and
//     values (a float's and a double's bits, NaN included); a nil and an empty byte
//     array (or Props) are not told apart. A message without a typed part reads back with Kind
//     BodyPlain and nil Props.
//   - An operation the store cannot apply (Add without Dest or with Seq 0, AddSub whose
//     Dest is not a topic) makes Commit fail with a non-nil error; nothing of the batch is
//     applied.
//   - Ack(dest, seq) deletes the message whatever the kind of dest; on a topic it deletes
//     it for every subscription. Ack or AckSub of something not stored is a no-op.
//   - Purge deletes every message of one destination (a topic keeps its subscriptions,
//     with nothing pending). Purge of an unknown destination is a no-op.
//
// Durable subscriptions
//   - Subs of a queue message are ignored; Scan reports such messages with empty Subs.
//   - A topic message's Subs entries are resolved when the Add is applied (in batch
//     order): entries naming no subscription registered on that topic, and duplicates,
//     are dropped. A topic message left with no subscription is not stored (it owes
//     nothing to anyone) but counts for LastSeq like any Add.
//   - Scan and ScanSub report in m.Subs the subscriptions that still owe an
//     acknowledgement for that message (order unspecified).
//   - SubKeys are compared field by field: {"a:b","c"} and {"a","b:c"} are different
//     subscriptions although their String() is the same.
//   - AddSub of an existing key on the same topic replaces the SubInfo and keeps what the
//     subscription holds; on another topic it first releases everything, as RemoveSub.
//   - ScanSub of a subscription the store does not hold fails with an error wrapping
//     persistence.ErrUnknownSub. AckSub and RemoveSub of an unknown one are no-ops.
//
// Batches
//   - A batch is done after Commit (whatever it returned) or Rollback: a later Commit
//     returns ErrBatchDone, a later CommitAsync calls done(ErrBatchDone), operations
//     recorded afterwards are ignored, a later Rollback has no effect. Len counts every
//     operation recorded before.
//   - Commit with a ctx that is already done fails with an error wrapping ctx.Err() and
//     applies nothing. A batch is atomic also for concurrent readers: Stats never shows a
//     part of a batch.
//   - CommitAsync may call done on the caller's goroutine before it returns (memstore
//     does); callers must not hold a lock that done takes.
//
// Reading
//   - Scan of an unknown destination calls fn for nothing and returns nil. Scan and
//     ScanSub with a ctx already done return an error wrapping ctx.Err().
//   - fn must not modify the Message, its Headers or Body, and must not call the same
//     Store: adapters may hold locks or transactions while fn runs.
//   - Recover lists every destination an Add was ever committed to, also when it is
//     empty now, sorted by Name; a destination only named by AddSub, Ack or Purge is not
//     listed. Subs are sorted by ClientID, then Name. Msgs and Bytes equal Stats. LastSeq
//     is exactly the highest seq ever added while the store stays open, and after a
//     reopen at least the highest seq committed before. Recover may be called again at
//     any time and reports the current state (the suite always calls it first, right
//     after opening, as the broker does).
//   - Stats is (0, 0) for an unknown destination. Bytes is the sum of len(Body).
//
// Closing
//   - Close returns nil, and so does a second Close. After Close, Commit (of a batch begun
//     before or after it) fails with ErrClosed, CommitAsync calls done(ErrClosed), and
//     Scan, ScanSub and Recover fail with ErrClosed.
//   - A Durable store keeps, across Close and open, everything committed with Sync or
//     Async before Close: messages, acks, subscriptions and their pending messages,
//     LastSeq.
package storetest

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// Harness opens the store under test. open may be called again after the previous store
// was Closed, and for Durable adapters must then see the same data (reopen). Each call of
// the Harness itself gives a fresh, empty store location.
type Harness func(t testing.TB) (open func() (persistence.Store, error))

// Features declares what an adapter promises beyond the common contract.
type Features struct {
	Durable bool // data survives Close + open
}

type testCase struct {
	name    string
	durable bool // needs Features.Durable
	run     func(t *testing.T, f *fixture)
}

// Run runs every case of the suite as a subtest of t, each on a fresh store.
func Run(t *testing.T, h Harness, feat Features) {
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"", messageCases},
		{"", batchCases},
		{"Subs", subCases},
		{"", lifecycleCases},
		{"", dedupCases},
	}
	for _, g := range groups {
		runCases := func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					if c.durable && !feat.Durable {
						t.Skip("adapter declares Features.Durable=false: nothing survives Close, so there is nothing to reopen")
					}
					c.run(t, start(t, h, feat))
				})
			}
		}
		if g.name == "" {
			runCases(t)
		} else {
			t.Run(g.name, runCases)
		}
	}
}

// fixture is one store location and the store currently open on it.
type fixture struct {
	t    *testing.T
	open func() (persistence.Store, error)
	s    persistence.Store
	rec  *persistence.Recovered // what Recover reported right after the last open

	durable bool // Features.Durable: reopen keeps the data
}

// start opens a fresh store and arranges for it to be closed at the end of the test.
func start(t *testing.T, h Harness, feat Features) *fixture {
	f := &fixture{t: t, open: h(t), durable: feat.Durable}
	f.openStore()
	t.Cleanup(func() {
		if err := f.s.Close(); err != nil {
			t.Errorf("Close at the end of the test: %v", err)
		}
	})
	return f
}

// openStore opens the store and calls Recover first, as the broker does.
func (f *fixture) openStore() {
	f.t.Helper()
	s, err := f.open()
	require.NoError(f.t, err, "open")
	require.NotNil(f.t, s, "open returned a nil store")
	f.s = s
	rec, err := s.Recover(f.t.Context())
	require.NoError(f.t, err, "Recover right after open")
	require.NotNil(f.t, rec, "Recover returned nil")
	f.rec = rec
}

// reopen closes the store and opens it again on the same location.
func (f *fixture) reopen() {
	f.t.Helper()
	require.NoError(f.t, f.s.Close(), "Close before reopen")
	f.openStore()
}

// commit runs ops on a new batch and commits it with Sync.
func (f *fixture) commit(ops func(b persistence.Batch)) {
	f.t.Helper()
	b := f.s.Begin()
	ops(b)
	require.NoError(f.t, b.Commit(f.t.Context(), persistence.Sync), "Commit")
}

// add commits msgs in one batch.
func (f *fixture) add(msgs ...*persistence.Message) {
	f.t.Helper()
	f.commit(func(b persistence.Batch) {
		for _, m := range msgs {
			b.Add(m)
		}
	})
}

// scan returns clones of what Scan reports.
func (f *fixture) scan(dest string, afterSeq uint64, max int) []*persistence.Message {
	f.t.Helper()
	var got []*persistence.Message
	err := f.s.Scan(f.t.Context(), dest, afterSeq, max, func(m *persistence.Message) error {
		got = append(got, m.Clone())
		return nil
	})
	require.NoError(f.t, err, "Scan(%q, %d, %d)", dest, afterSeq, max)
	return got
}

// scanSub returns clones of what ScanSub reports.
func (f *fixture) scanSub(key persistence.SubKey, afterSeq uint64, max int) []*persistence.Message {
	f.t.Helper()
	var got []*persistence.Message
	err := f.s.ScanSub(f.t.Context(), key, afterSeq, max, func(m *persistence.Message) error {
		got = append(got, m.Clone())
		return nil
	})
	require.NoError(f.t, err, "ScanSub(%v, %d, %d)", key, afterSeq, max)
	return got
}

// requireSeqs asserts the sequence numbers Scan reports for dest, in order.
func (f *fixture) requireSeqs(dest string, want ...uint64) {
	f.t.Helper()
	require.Equal(f.t, append([]uint64{}, want...), seqsOf(f.scan(dest, 0, 0)), "messages of %s", dest)
}

// requireSubSeqs asserts the sequence numbers ScanSub reports for key, in order, and
// that Recover counts as many in its backlog.
func (f *fixture) requireSubSeqs(key persistence.SubKey, want ...uint64) {
	f.t.Helper()
	require.Equal(f.t, append([]uint64{}, want...), seqsOf(f.scanSub(key, 0, 0)), "pending messages of sub %v", key)
	require.EqualValues(f.t, len(want), f.recover().Pending[key], "Recover's Pending of sub %v", key)
}

// requireStats asserts Stats of dest.
func (f *fixture) requireStats(dest string, msgs, bytes int64) {
	f.t.Helper()
	gotMsgs, gotBytes := f.s.Stats(dest)
	require.Equal(f.t, [2]int64{msgs, bytes}, [2]int64{gotMsgs, gotBytes}, "Stats(%q) (msgs, bytes)", dest)
}

// recover calls Recover on the open store.
func (f *fixture) recover() *persistence.Recovered {
	f.t.Helper()
	rec, err := f.s.Recover(f.t.Context())
	require.NoError(f.t, err, "Recover")
	require.NotNil(f.t, rec, "Recover returned nil")
	return rec
}

// destState finds dest in rec.
func destState(rec *persistence.Recovered, dest string) (persistence.DestState, bool) {
	for _, d := range rec.Destinations {
		if d.Name == dest {
			return d, true
		}
	}
	return persistence.DestState{}, false
}

// requireSorted asserts the ordering Recover promises.
func requireSorted(t testing.TB, rec *persistence.Recovered) {
	t.Helper()
	require.True(t, slices.IsSortedFunc(rec.Destinations, func(a, b persistence.DestState) int {
		return cmp.Compare(a.Name, b.Name)
	}), "Recover: destinations not sorted by name: %v", rec.Destinations)
	require.True(t, slices.IsSortedFunc(rec.Subs, func(a, b persistence.SubInfo) int {
		return compareKeys(a.Key, b.Key)
	}), "Recover: subs not sorted by (ClientID, Name): %v", rec.Subs)
}

func compareKeys(a, b persistence.SubKey) int {
	return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Name, b.Name))
}

// newMsg builds a message whose fields are derived from dest and seq.
func newMsg(dest string, seq uint64, subs ...persistence.SubKey) *persistence.Message {
	return &persistence.Message{
		Dest:       dest,
		Seq:        seq,
		ID:         fmt.Sprintf("ID:storetest-%s-%d", dest, seq),
		Headers:    persistence.Headers{"seq", strconv.FormatUint(seq, 10), "dest", dest},
		Body:       fmt.Appendf(nil, "body of %s #%d", dest, seq),
		Persistent: true,
		Priority:   4,
		Timestamp:  1_700_000_000_000 + int64(seq),
		Subs:       subs,
	}
}

// newMsgs builds newMsg(dest, seq, subs...) for every seq.
func newMsgs(dest string, seqs []uint64, subs ...persistence.SubKey) []*persistence.Message {
	ms := make([]*persistence.Message, len(seqs))
	for i, s := range seqs {
		ms[i] = newMsg(dest, s, subs...)
	}
	return ms
}

// seqRange returns from, from+1, ..., to.
func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func seqsOf(ms []*persistence.Message) []uint64 {
	s := []uint64{}
	for _, m := range ms {
		s = append(s, m.Seq)
	}
	return s
}

func bodyBytes(ms ...*persistence.Message) int64 {
	var n int64
	for _, m := range ms {
		n += int64(len(m.Body))
	}
	return n
}

// requireMessage asserts that got carries every field of want except Subs; a nil and an
// empty Headers or Body count as equal.
func requireMessage(t testing.TB, want, got *persistence.Message) {
	t.Helper()
	norm := func(m *persistence.Message) persistence.Message {
		c := *m
		if len(c.Headers) == 0 {
			c.Headers = nil
		}
		if len(c.Body) == 0 {
			c.Body = nil
		}
		if len(c.Props) == 0 {
			c.Props = nil
		} else {
			c.Props = slices.Clone(c.Props)
			for i := range c.Props {
				if len(c.Props[i].Bytes) == 0 {
					c.Props[i].Bytes = nil
				}
			}
		}
		c.Subs = nil
		return c
	}
	w, g := norm(want), norm(got)
	if len(w.Body) > 1<<16 { // keep a failure message readable
		require.True(t, bytes.Equal(w.Body, g.Body), "seq %d: body of %d bytes differs (got %d bytes)", w.Seq, len(w.Body), len(g.Body))
		w.Body, g.Body = nil, nil
	}
	require.Equal(t, w, g, "message %s #%d", want.Dest, want.Seq)
}

// requireMessages asserts requireMessage pairwise.
func requireMessages(t testing.TB, want, got []*persistence.Message) {
	t.Helper()
	require.Equal(t, seqsOf(want), seqsOf(got), "sequence numbers")
	for i := range want {
		requireMessage(t, want[i], got[i])
	}
}

// requireSubs asserts the pending subscriptions a scanned message reports, in any order.
func requireSubs(t testing.TB, m *persistence.Message, want ...persistence.SubKey) {
	t.Helper()
	got := slices.SortedFunc(slices.Values(m.Subs), compareKeys)
	want = slices.SortedFunc(slices.Values(want), compareKeys)
	if len(want) == 0 {
		require.Empty(t, got, "pending subs of %s #%d", m.Dest, m.Seq)
		return
	}
	require.Equal(t, want, got, "pending subs of %s #%d", m.Dest, m.Seq)
}
