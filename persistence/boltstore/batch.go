package boltstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/persistence"
)

// Compile-time guards: a batch is a persistence.Batch with the AsyncBatch power.
var (
	_ persistence.Batch      = (*batch)(nil)
	_ persistence.AsyncBatch = (*batch)(nil)
)

type opKind uint8

const (
	opAdd opKind = iota + 1
	opAck
	opAckSub
	opAddSub
	opRemoveSub
	opPurge
)

// op is one recorded operation. For Add, rec is the message already encoded (which is
// also the copy Add promises) and subs the topic subscriptions it names; sub carries
// the whole SubInfo for AddSub and only the Key for AckSub and RemoveSub.
type op struct {
	kind opKind
	seq  uint64
	dest string
	rec  []byte
	subs []persistence.SubKey
	sub  persistence.SubInfo
}

// batch records operations; Commit hands them to the writer goroutine, which applies
// them in one bbolt transaction together with every other batch queued at that time.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// further operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	s     *Store
	ops   []op
	one   [1]op // backing array for the common single-operation batch
	bytes int   // encoded bytes of the Adds, for sizing a group
	done  bool
	err   error // the first invalid operation, reported by Commit
}

func (s *Store) newBatch() *batch {
	b := &batch{s: s}
	b.ops = b.one[:0]
	return b
}

func (b *batch) record(o op) {
	if !b.done {
		b.ops = append(b.ops, o)
	}
}

func (b *batch) invalid(format string, args ...any) {
	if b.err == nil && !b.done {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// Add records m, encoded: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	switch {
	case b.done:
		return
	case m == nil:
		b.invalid("Add of a nil message")
		return
	case m.Dest == "" || m.Seq == 0:
		b.invalid("Add needs Dest and a Seq > 0 (dest %q, seq %d)", m.Dest, m.Seq)
		return
	case len(m.Dest) > bolt.MaxKeySize:
		b.invalid("destination name of %d bytes, the limit is %d", len(m.Dest), bolt.MaxKeySize)
		return
	}
	if n := encodedSize(m); n > bolt.MaxValueSize {
		b.invalid("message %s #%d of %d bytes, the limit is %d", m.Dest, m.Seq, n, bolt.MaxValueSize)
		return
	}
	o := op{kind: opAdd, dest: m.Dest, seq: m.Seq, rec: encodeMessage(m)}
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		o.subs = slices.Clone(m.Subs)
	}
	b.bytes += len(o.rec)
	b.record(o)
}

func (b *batch) Ack(dest string, seq uint64) {
	b.record(op{kind: opAck, dest: dest, seq: seq})
}

func (b *batch) AckSub(sub persistence.SubKey, seq uint64) {
	b.record(op{kind: opAckSub, sub: persistence.SubInfo{Key: sub}, seq: seq})
}

func (b *batch) AddSub(info persistence.SubInfo) {
	switch {
	case persistence.KindOf(info.Dest) != persistence.KindTopic:
		b.invalid("AddSub %s needs a topic, not %q", info.Key, info.Dest)
		return
	case len(encodeSubKey(info.Key)) > bolt.MaxKeySize || len(info.Dest) > bolt.MaxKeySize:
		b.invalid("AddSub %s: key or topic name longer than %d bytes", info.Key, bolt.MaxKeySize)
		return
	}
	b.record(op{kind: opAddSub, sub: info})
}

func (b *batch) RemoveSub(sub persistence.SubKey) {
	b.record(op{kind: opRemoveSub, sub: persistence.SubInfo{Key: sub}})
}

func (b *batch) Purge(dest string) {
	b.record(op{kind: opPurge, dest: dest})
}

func (b *batch) Len() int { return len(b.ops) }

// finish marks the batch done and returns what Commit hands on: the operations, or the
// error that fails the commit at once.
func (b *batch) finish() (ops []op, bytes int, err error) {
	if b.done {
		return nil, 0, persistence.ErrBatchDone
	}
	ops, bytes, err = b.ops, b.bytes, b.err
	b.done, b.ops, b.err = true, nil, nil
	return ops, bytes, err
}

// Commit applies the batch in the next group commit and returns once that bbolt
// transaction committed (with SyncAlways: once it is on disk). Async waits for the same:
// see the package comment. A ctx that is done before the writer took the batch makes
// Commit fail with ctx.Err() and apply nothing; once the writer took it, Commit waits
// for the outcome. After Commit, whatever it returned, the batch is done.
func (b *batch) Commit(ctx context.Context, _ persistence.Durability) error {
	ops, bytes, err := b.finish()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ops) == 0 {
		return b.s.w.check() // nothing to write, but a closed or failed store still says so
	}
	r := &request{ops: ops, bytes: bytes, wait: make(chan struct{})}
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
func (b *batch) CommitAsync(_ persistence.Durability, done func(error)) {
	ops, bytes, err := b.finish()
	r := &request{ops: ops, bytes: bytes, done: done, err: err}
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
	ops, bytes, err := b.finish()
	r := &request{ops: ops, bytes: bytes, done: done, err: err}
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

func (b *batch) Rollback() {
	b.done, b.ops, b.err = true, nil, nil
}
