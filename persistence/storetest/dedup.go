package storetest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// dedupCases pin down what duplicate detection (package broker/dedup) relies on:
// a message and the entry of its duplicate-detection id in an id log (a destination
// "meta://dedup/" + the message's destination) are written in one batch, so they are
// applied, and survive, together; the id entry outlives the message's Ack; the log's old
// entries are pruned by Ack in later batches; a reopen gives back the remaining entries
// with their ID and Timestamp, in seq order, and a LastSeq the log's next entries can
// follow without reusing a seq.
var dedupCases = []testCase{
	{name: "DedupLogSameBatch", run: testDedupLogSameBatch},
}

func testDedupLogSameBatch(t *testing.T, f *fixture) {
	const dest, log = "queue://storetest.dedup", "meta://dedup/queue://storetest.dedup"
	idEntry := func(seq uint64, id string) *persistence.Message {
		return &persistence.Message{Dest: log, Seq: seq, ID: id, Timestamp: 1700000000000 + int64(seq), Persistent: true, Priority: 4}
	}
	for i := uint64(1); i <= 5; i++ {
		id := "producer-" + strconv.FormatUint(i, 10)
		f.commit(func(b persistence.Batch) {
			m := newMsg(dest, i)
			m.Headers = persistence.Headers{"_AMQ_DUPL_ID", id}
			b.Add(m)
			b.Add(idEntry(i, id))
			if i > 3 {
				b.Ack(log, i-3) // the cache keeps 3 ids: the oldest is pruned
			}
		})
	}
	// A rolled-back batch leaves neither the message nor its id.
	b := f.s.Begin()
	b.Add(newMsg(dest, 6))
	b.Add(idEntry(6, "producer-6"))
	b.Rollback()
	// The messages are consumed; their ids stay.
	f.commit(func(b persistence.Batch) {
		for i := uint64(1); i <= 5; i++ {
			b.Ack(dest, i)
		}
	})
	check := func(when string) {
		t.Helper()
		f.requireSeqs(dest)
		got := f.scan(log, 0, 0)
		ids := make([]string, 0, len(got))
		for _, m := range got {
			ids = append(ids, m.ID)
			require.Equal(t, 1700000000000+int64(m.Seq), m.Timestamp, "%s: Timestamp of id entry %d", when, m.Seq)
		}
		require.Equal(t, []string{"producer-3", "producer-4", "producer-5"}, ids, when)
		var last uint64
		for _, d := range f.recover().Destinations {
			if d.Name == log {
				last = d.LastSeq
			}
		}
		require.GreaterOrEqual(t, last, uint64(5), "%s: LastSeq of the id log", when)
	}
	check("before reopen")
	if !f.canReopen() {
		return
	}
	f.reopen()
	check("after reopen")
	// The log goes on after the recovered LastSeq.
	f.commit(func(b persistence.Batch) { b.Add(idEntry(6, "producer-6")); b.Ack(log, 3) })
	f.reopen()
	got := f.scan(log, 0, 0)
	require.Len(t, got, 3)
	require.Equal(t, "producer-6", got[2].ID)
}
