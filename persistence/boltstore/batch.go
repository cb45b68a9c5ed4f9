package boltstore

import (
	"cmp"
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/oprec"
)

// Compile-time guards: a batch is a persistence.Batch with the AsyncBatch and
// CancelableBatch powers.
var (
	_ persistence.Batch           = (*batch)(nil)
	_ persistence.AsyncBatch      = (*batch)(nil)
	_ persistence.CancelableBatch = (*batch)(nil)
)

// op is one recorded operation. An Add carries the message already encoded (which is
// also the copy Add promises) and the topic subscriptions it names.
type op = oprec.Op[addRec]

// addRec is what an Add keeps: the record it stores and the subscriptions it names.
type addRec struct {
	rec  []byte
	subs []persistence.SubKey
}

// batch records operations; Commit hands them to the writer goroutine, which applies
// them in one bbolt transaction together with every other batch queued at that time.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// further operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	oprec.Recorder[addRec] // Ack, AckSub, RemoveSub, Purge, Len, Rollback
	s                      *Store
}

func (s *Store) newBatch() *batch {
	b := &batch{s: s}
	b.Init(ErrInvalid)
	return b
}

// Add records m, encoded: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	switch {
	case !b.CheckAdd(m):
		return
	case len(m.Dest) > bolt.MaxKeySize:
		b.Invalid("destination name of %d bytes, the limit is %d", len(m.Dest), bolt.MaxKeySize)
		return
	}
	if n := encodedSize(m); n > bolt.MaxValueSize {
		b.Invalid("message %s #%d of %d bytes, the limit is %d", m.Dest, m.Seq, n, bolt.MaxValueSize)
		return
	}
	rec := encodeMessage(m)
	b.RecordAdd(m, addRec{rec: rec, subs: oprec.Subs(m)}, len(rec))
}

// AddSub records a subscription, whose key and topic must fit in a bbolt key.
func (b *batch) AddSub(info persistence.SubInfo) {
	switch {
	case !b.CheckAddSub(info):
		return
	case len(encodeSubKey(info.Key)) > bolt.MaxKeySize || len(info.Dest) > bolt.MaxKeySize:
		b.Invalid("AddSub %s: key or topic name longer than %d bytes", info.Key, bolt.MaxKeySize)
		return
	}
	b.Record(op{Kind: oprec.AddSub, Sub: info.Key, Info: &info})
}

// Commit applies the batch in the next group commit and returns once that bbolt
// transaction committed (with SyncAlways: once it is on disk). Async waits for the same:
// see the package comment. A ctx that is done before the writer took the batch makes
// Commit fail with ctx.Err() and apply nothing; once the writer took it, Commit waits
// for the outcome. After Commit, whatever it returned, the batch is done.
func (b *batch) Commit(ctx context.Context, d persistence.Durability) error {
	ops, bytes, err := b.Take()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ops) == 0 {
		return b.s.w.check() // nothing to write, but a closed or failed store still says so
	}
	r := &request{ops: ops, bytes: bytes, async: d == persistence.Async, wait: make(chan struct{})}
	if err := b.s.w.submit(r); err != nil {
		return err
	}
	select {
	case <-r.wait:
		return r.err
	case <-ctx.Done():
		if r.cancel() {
			return ctx.Err()
		}
		<-r.wait // the writer has it: the outcome is decided, wait for it
		return r.err
	}
}

// CommitAsync commits like Commit without blocking: done is called once, with the
// result, on the store's completion goroutine, after the batch's transaction committed.
// The done callbacks of all batches run one at a time, in the order the batches were
// committed, so done must not block for long; it may commit on this store. A batch that
// fails at once (already done, invalid) still takes its turn in that order. Only when
// the store is closed (or failed) is done called on the caller's goroutine, before
// CommitAsync returns.
func (b *batch) CommitAsync(d persistence.Durability, done func(error)) {
	ops, bytes, err := b.Take()
	r := &request{ops: ops, bytes: bytes, async: d == persistence.Async, done: done, err: err}
	if serr := b.s.w.submit(r); serr != nil {
		done(cmp.Or(err, serr))
	}
}

// CommitCancelable is CommitAsync for a batch the broker may withdraw while it waits
// for the writer (concurrent store and dispatch); nil, and a plain CommitAsync, with
// StoreBeforeDispatch. A withdrawn batch's done gets ErrCanceled from within cancel.
func (b *batch) CommitCancelable(d persistence.Durability, done func(error)) func() bool {
	if b.s.opts.StoreBeforeDispatch {
		b.CommitAsync(d, done)
		return nil
	}
	ops, bytes, err := b.Take()
	r := &request{ops: ops, bytes: bytes, async: d == persistence.Async, done: done, err: err}
	if serr := b.s.w.submit(r); serr != nil {
		done(cmp.Or(err, serr))
		return nil
	}
	return func() bool {
		if !r.cancel() {
			return false
		}
		done(persistence.ErrCanceled)
		return true
	}
}
