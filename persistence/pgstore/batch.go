package pgstore

import (
	"context"
	"math"
	"strings"
	"unicode/utf8"

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

// op is one recorded batch operation. An Add carries the message already encoded
// (the copy Add promises) and the column values derived from it.
type op = oprec.Op[*addRow]

// addRow is what an Add keeps: the encoded message and its column values.
type addRow struct {
	msg     []byte
	size    int64 // len(Body)
	prio    int64
	expires int64
	msgID   string
	subs    []persistence.SubKey // topic messages only
}

// batch records operations; Commit hands them to the writer, which applies them in
// one SQL transaction together with the other batches of its group.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is
// done: further operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	oprec.Recorder[*addRow] // RemoveSub, Purge, Len, Rollback
	s                       *Store
}

func (s *Store) newBatch() *batch {
	b := &batch{s: s}
	b.Init(ErrInvalid)
	return b
}

// validText reports whether s can be stored in a text column: UTF-8 without NUL.
func validText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// validDest checks a destination name for the CONTAINER columns.
func (b *batch) validDest(what, dest string) bool {
	switch {
	case dest == "":
		b.Invalid("%s needs a destination", what)
	case !validText(dest):
		b.Invalid("%s: destination %q is not UTF-8 text without NUL", what, dest)
	case utf8.RuneCountInString(dest) > maxContainer:
		b.Invalid("%s: destination name longer than %d characters", what, maxContainer)
	default:
		return true
	}
	return false
}

// Add records an encoded copy of m: the caller may reuse m as soon as Add returns.
// Its rules are stricter than oprec's CheckAdd: a Seq must fit in a BIGINT.
func (b *batch) Add(m *persistence.Message) {
	if b.Done() {
		return
	}
	switch {
	case m == nil:
		b.Invalid("Add of a nil message")
		return
	case m.Seq == 0 || m.Seq > math.MaxInt64:
		b.Invalid("Add needs a Seq from 1 to %d (dest %q, seq %d)", int64(math.MaxInt64), m.Dest, m.Seq)
		return
	case !b.validDest("Add", m.Dest):
		return
	}
	row := &addRow{
		msg:  encodeMessage(make([]byte, 0, encodedSize(m)), m),
		size: int64(len(m.Body)), prio: int64(m.Priority), expires: m.Expires, msgID: m.ID,
		subs: oprec.Subs(m),
	}
	b.RecordAdd(m, row, len(row.msg))
}

// Ack records the deletion of a stored message.
func (b *batch) Ack(dest string, seq uint64) {
	if seq == 0 || seq > math.MaxInt64 {
		b.Record(op{Kind: oprec.Ack}) // counts for Len, deletes nothing
		return
	}
	b.Recorder.Ack(dest, seq)
}

// AckSub records that sub acknowledged the topic message seq.
func (b *batch) AckSub(sub persistence.SubKey, seq uint64) {
	if seq == 0 || seq > math.MaxInt64 {
		b.Record(op{Kind: oprec.AckSub})
		return
	}
	b.Recorder.AckSub(sub, seq)
}

// AddSub records the creation or replacement of a durable subscription.
func (b *batch) AddSub(info persistence.SubInfo) {
	switch {
	case !b.CheckAddSub(info), !b.validDest("AddSub", info.Dest):
		return
	case !validText(info.Key.ClientID) || !validText(info.Key.Name) || !validText(info.Selector):
		b.Invalid("AddSub %q: client id, name and selector must be UTF-8 text without NUL", info.Key)
		return
	}
	b.Record(op{Kind: oprec.AddSub, Sub: info.Key, Info: &info})
}

// Commit applies the batch in the next group commit and waits for it: with Sync until
// PostgreSQL reports the transaction durable, with Async until it is committed and
// visible (its WAL flush may still be pending; see the package comment). A ctx that
// ends while the batch still waits for the writer withdraws it (Commit returns
// ctx.Err() and nothing is applied); once the writer has taken it, Commit waits for
// the outcome, which Options.CommitTimeout bounds.
func (b *batch) Commit(ctx context.Context, d persistence.Durability) error {
	ops, bytes, err := b.Take()
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
	ops, bytes, err := b.Take()
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
	if b.s.opts.StoreBeforeDispatch {
		b.CommitAsync(d, done)
		return nil
	}
	ops, bytes, err := b.Take()
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
