package logstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/activemq-go/broker/persistence"
)

// Compile-time guards: a batch is a persistence.Batch with the AsyncBatch power.
var (
	_ persistence.Batch      = (*batch)(nil)
	_ persistence.AsyncBatch = (*batch)(nil)
)

// batch encodes every operation into its record as it is recorded, so Add copies the
// message once, straight into the bytes the log will hold, and keeps the decoded
// operations beside them for the writer to apply once the record is appended (the same
// operations replay decodes from the record).
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// later operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	s    *Store
	rec  []byte
	ops  []op
	one  [1]op // backing array for the common single-operation batch
	done bool
	err  error // the first invalid operation, reported by Commit
}

func (s *Store) newBatch() *batch {
	b := &batch{s: s}
	b.ops = b.one[:0]
	return b
}

func (b *batch) invalid(format string, args ...any) {
	if b.err == nil && !b.done {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// buf returns the record buffer, starting it on first use.
func (b *batch) buf() []byte {
	if b.rec == nil {
		b.rec = newRecord(getRecordBuf())
	}
	return b.rec
}

// Add encodes m into the batch: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	switch {
	case m == nil:
		b.invalid("Add of a nil message")
		return
	case m.Dest == "" || m.Seq == 0 || m.Seq > maxSeq:
		b.invalid("Add needs Dest and a Seq from 1 to %d (dest %q, seq %d)", uint64(maxSeq), m.Dest, m.Seq)
		return
	case b.done:
		return
	}
	var subs []persistence.SubKey
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		subs = slices.Clone(m.Subs)
	}
	var pos uint32
	b.rec, pos = appendAdd(b.buf(), m, subs)
	b.ops = append(b.ops, op{kind: opAdd, dest: m.Dest, seq: m.Seq, subs: subs, pos: pos, body: uint32(len(m.Body))})
}

// Ack records the deletion of a message.
func (b *batch) Ack(dest string, seq uint64) {
	if !b.done {
		b.rec = appendAck(b.buf(), dest, seq)
		b.ops = append(b.ops, op{kind: opAck, dest: dest, seq: seq})
	}
}

// AckSub records an acknowledgement of a durable subscription.
func (b *batch) AckSub(sub persistence.SubKey, seq uint64) {
	if !b.done {
		b.rec = appendAckSub(b.buf(), sub, seq)
		b.ops = append(b.ops, op{kind: opAckSub, key: sub, seq: seq})
	}
}

// AddSub records a durable subscription.
func (b *batch) AddSub(info persistence.SubInfo) {
	if persistence.KindOf(info.Dest) != persistence.KindTopic {
		b.invalid("AddSub %s needs a topic, not %q", info.Key, info.Dest)
		return
	}
	if !b.done {
		b.rec = appendAddSub(b.buf(), info)
		b.ops = append(b.ops, op{kind: opAddSub, info: info})
	}
}

// RemoveSub records the removal of a durable subscription.
func (b *batch) RemoveSub(sub persistence.SubKey) {
	if !b.done {
		b.rec = appendRemoveSub(b.buf(), sub)
		b.ops = append(b.ops, op{kind: opRemoveSub, key: sub})
	}
}

// Purge records the deletion of every message of dest.
func (b *batch) Purge(dest string) {
	if !b.done {
		b.rec = appendPurge(b.buf(), dest)
		b.ops = append(b.ops, op{kind: opPurge, dest: dest})
	}
}

// Len is the number of operations recorded.
func (b *batch) Len() int { return len(b.ops) }

// finish ends the batch and returns the request to submit. A batch that fails before it
// is queued (done, invalid, ctx done, too large) gets a request carrying that error (and
// ok false), so CommitAsync can still complete it in order.
func (b *batch) finish(ctx context.Context, d persistence.Durability) (r *request, ok bool) {
	r = requestPool.Get().(*request)
	r.dur = d
	if b.done {
		r.err = persistence.ErrBatchDone
		return r, false
	}
	rec, ops, err := b.rec, b.ops, b.err
	b.done, b.rec, b.ops, b.err = true, nil, nil, nil
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && len(rec) > MaxRecordBytes {
		err = fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, len(rec), MaxRecordBytes)
	}
	if err != nil {
		if rec != nil {
			putRecordBuf(rec)
		}
		r.err = err
		return r, false
	}
	if len(ops) > 0 {
		r.rec, r.ops = rec, ops
	}
	return r, true
}

// Commit appends the batch to the log and applies it. With Sync it returns once the
// batch is on stable storage (FlushBatch; see FlushPolicy for the others), with Async
// once it is appended and visible. ctx is checked before the batch joins the write
// queue; once queued it cannot be taken back, so Commit waits for its outcome. An empty
// batch committed with Sync is a barrier: it returns once everything committed before
// it is appended (and, with FlushBatch, synced).
func (b *batch) Commit(ctx context.Context, d persistence.Durability) error {
	r, ok := b.finish(ctx, d)
	if !ok {
		err := r.err
		release(r)
		return err
	}
	if r.rec == nil && d == persistence.Async {
		release(r)
		return b.s.checkOpen()
	}
	if err := b.s.w.submit(r); err != nil {
		release(r)
		return err
	}
	err := <-r.wait
	release(r)
	return err
}

// CommitAsync commits like Commit without waiting: done is called exactly once with the
// result, on the store's completion goroutine (after Close, on the caller's goroutine).
// Callbacks of batches committed from one goroutine run in commit order, also those of
// batches that fail at once (invalid, already done). done must not block for long: it
// delays every later callback; it may call the store. CommitAsync itself blocks only
// while the write queue holds more than 64 MiB (backpressure).
func (b *batch) CommitAsync(d persistence.Durability, done func(error)) {
	r, _ := b.finish(context.Background(), d)
	r.done = done
	if err := b.s.w.submit(r); err != nil {
		if r.err != nil {
			err = r.err
		}
		release(r)
		b.s.callbacks.push(done, err)
	}
}

// Rollback discards the batch.
func (b *batch) Rollback() {
	if !b.done && b.rec != nil {
		putRecordBuf(b.rec)
	}
	b.done, b.rec, b.ops, b.err = true, nil, nil, nil
}
