package pgstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

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

// op is one recorded batch operation. An Add carries the message already encoded
// (the copy Add promises) and the column values derived from it.
type op struct {
	kind opKind
	dest string
	seq  int64
	sub  persistence.SubInfo // AddSub: all of it; AckSub, RemoveSub: the Key
	// Add only.
	msg      []byte
	size     int64 // len(Body)
	prio     int64
	expires  int64
	msgID    string
	subs     []persistence.SubKey // topic messages only
	msgBytes int                  // len(msg), for the group size limit
}

// batch records operations; Commit hands them to the writer, which applies them in
// one SQL transaction together with the other batches of its group.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is
// done: further operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	s     *Store
	ops   []op
	one   [1]op // backing array for the common single-operation batch
	bytes int
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

// validText reports whether s can be stored in a text column: UTF-8 without NUL.
func validText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// validDest checks a destination name for the CONTAINER columns.
func (b *batch) validDest(what, dest string) bool {
	switch {
	case dest == "":
		b.invalid("%s needs a destination", what)
	case !validText(dest):
		b.invalid("%s: destination %q is not UTF-8 text without NUL", what, dest)
	case utf8.RuneCountInString(dest) > maxContainer:
		b.invalid("%s: destination name longer than %d characters", what, maxContainer)
	default:
		return true
	}
	return false
}

// Add records an encoded copy of m: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	if b.done {
		return
	}
	switch {
	case m == nil:
		b.invalid("Add of a nil message")
		return
	case m.Seq == 0 || m.Seq > math.MaxInt64:
		b.invalid("Add needs a Seq from 1 to %d (dest %q, seq %d)", int64(math.MaxInt64), m.Dest, m.Seq)
		return
	case !b.validDest("Add", m.Dest):
		return
	}
	o := op{
		kind: opAdd, dest: m.Dest, seq: int64(m.Seq),
		msg:  encodeMessage(make([]byte, 0, encodedSize(m)), m),
		size: int64(len(m.Body)), prio: int64(m.Priority), expires: m.Expires, msgID: m.ID,
	}
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		o.subs = slices.Clone(m.Subs)
	}
	o.msgBytes = len(o.msg)
	b.bytes += o.msgBytes
	b.record(o)
}

// Ack records the deletion of a stored message.
func (b *batch) Ack(dest string, seq uint64) {
	if seq == 0 || seq > math.MaxInt64 {
		b.record(op{kind: opAck}) // counts for Len, deletes nothing
		return
	}
	b.record(op{kind: opAck, dest: dest, seq: int64(seq)})
}

// AckSub records that sub acknowledged the topic message seq.
func (b *batch) AckSub(sub persistence.SubKey, seq uint64) {
	if seq == 0 || seq > math.MaxInt64 {
		b.record(op{kind: opAckSub})
		return
	}
	b.record(op{kind: opAckSub, sub: persistence.SubInfo{Key: sub}, seq: int64(seq)})
}

// AddSub records the creation or replacement of a durable subscription.
func (b *batch) AddSub(info persistence.SubInfo) {
	if b.done {
		return
	}
	if persistence.KindOf(info.Dest) != persistence.KindTopic {
		b.invalid("AddSub %s needs a topic, not %q", info.Key, info.Dest)
		return
	}
	if !b.validDest("AddSub", info.Dest) {
		return
	}
	if !validText(info.Key.ClientID) || !validText(info.Key.Name) || !validText(info.Selector) {
		b.invalid("AddSub %q: client id, name and selector must be UTF-8 text without NUL", info.Key)
		return
	}
	b.record(op{kind: opAddSub, sub: info})
}

// RemoveSub records the removal of a durable subscription.
func (b *batch) RemoveSub(sub persistence.SubKey) {
	b.record(op{kind: opRemoveSub, sub: persistence.SubInfo{Key: sub}})
}

// Purge records the deletion of every message of dest.
func (b *batch) Purge(dest string) {
	b.record(op{kind: opPurge, dest: dest})
}

// Len is the number of operations recorded.
func (b *batch) Len() int { return len(b.ops) }

// take ends the batch and returns what Commit needs.
func (b *batch) take() ([]op, int, error) {
	ops, bytes, err := b.ops, b.bytes, b.err
	b.done, b.ops, b.err, b.bytes = true, nil, nil, 0
	return ops, bytes, err
}

// Commit applies the batch in the next group commit and waits for it: with Sync until
// PostgreSQL reports the transaction durable, with Async until it is committed and
// visible (its WAL flush may still be pending; see the package comment). A ctx that
// ends while the batch still waits for the writer withdraws it (Commit returns
// ctx.Err() and nothing is applied); once the writer has taken it, Commit waits for
// the outcome, which Options.CommitTimeout bounds.
func (b *batch) Commit(ctx context.Context, d persistence.Durability) error {
	if b.done {
		return persistence.ErrBatchDone
	}
	ops, bytes, err := b.take()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{ops: ops, bytes: bytes, sync: d == persistence.Sync, result: make(chan error, 1)}
	if err := b.s.submit(r); err != nil {
		return err
	}
	select {
	case err := <-r.result:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqCanceled) {
			return ctx.Err()
		}
		return <-r.result // taken by the writer: the outcome is on its way
	}
}

// CommitAsync commits like Commit without blocking; done is called once, on the
// store's completion goroutine, with the result. Callbacks run in commit order.
func (b *batch) CommitAsync(d persistence.Durability, done func(error)) {
	if b.done {
		b.s.completeNow(done, persistence.ErrBatchDone)
		return
	}
	ops, bytes, err := b.take()
	if err != nil {
		b.s.completeNow(done, err)
		return
	}
	r := &request{ops: ops, bytes: bytes, sync: d == persistence.Sync, done: done}
	if err := b.s.submit(r); err != nil {
		b.s.completeNow(done, err)
	}
}

// CommitCancelable is CommitAsync for a batch the broker may withdraw while it waits
// for the writer (concurrent store and dispatch); nil, and a plain CommitAsync, with
// StoreBeforeDispatch. A withdrawn batch's done gets ErrCanceled from within cancel.
func (b *batch) CommitCancelable(d persistence.Durability, done func(error)) func() bool {
	if b.s.opts.StoreBeforeDispatch || b.done {
		b.CommitAsync(d, done)
		return nil
	}
	ops, bytes, err := b.take()
	if err != nil {
		b.s.completeNow(done, err)
		return nil
	}
	r := &request{ops: ops, bytes: bytes, sync: d == persistence.Sync, done: done}
	if err := b.s.submit(r); err != nil {
		b.s.completeNow(done, err)
		return nil
	}
	return func() bool {
		if !r.state.CompareAndSwap(reqQueued, reqCanceled) {
			return false
		}
		done(persistence.ErrCanceled)
		return true
	}
}

// Rollback discards the batch.
func (b *batch) Rollback() {
	b.take()
}
