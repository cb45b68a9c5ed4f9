package groupcommit

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/activemq-go/broker/persistence"
)

// Batch is the recording half of an adapter's batch, meant to be embedded: the record
// the adapter encodes operations into as they are recorded (Rec), the decoded operations
// beside it (Ops), and the commit methods of persistence.Batch, AsyncBatch and
// CancelableBatch. The adapter adds Add, Ack, ... which append to Rec and Ops unless
// Ended.
//
// A Batch is used by one goroutine at a time. Once committed or rolled back it is
// ended: later operations are ignored and Commit returns persistence.ErrBatchDone.
type Batch[O any] struct {
	Rec   []byte
	Ops   []O
	Ended bool

	q   *Queue[O]
	one [1]O  // backing array for the common single-operation batch
	err error // the first invalid operation, reported by Commit
}

// Init makes b commit to q. b must not be copied afterwards.
func (b *Batch[O]) Init(q *Queue[O]) {
	b.q = q
	b.Ops = b.one[:0]
}

// Invalid records the first invalid operation: Commit fails with
// fmt.Errorf("%w: "+format, sentinel, args...).
func (b *Batch[O]) Invalid(sentinel error, format string, args ...any) {
	if b.err == nil && !b.Ended {
		b.err = fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
	}
}

// Buf returns the record, starting it with start on first use.
func (b *Batch[O]) Buf(start func(buf []byte) []byte) []byte {
	if b.Rec == nil {
		b.Rec = start(GetBuf())
	}
	return b.Rec
}

// Len is the number of operations recorded.
func (b *Batch[O]) Len() int { return len(b.Ops) }

// Finish ends the batch and returns the request to submit. A batch that fails before it
// is queued (ended, invalid, ctx done, too large) gets a request carrying that error
// (and ok false), so CommitAsync can still complete it in order.
func (b *Batch[O]) Finish(ctx context.Context, d persistence.Durability) (r *Request[O], ok bool) {
	r = b.q.newRequest()
	r.Dur = d
	if b.Ended {
		r.Err = persistence.ErrBatchDone
		return r, false
	}
	rec, ops, err := b.Rec, b.Ops, b.err
	b.Ended, b.Rec, b.Ops, b.err = true, nil, nil, nil
	if err == nil {
		err = ctx.Err()
	}
	if limit := b.q.cfg.MaxRecordBytes; err == nil && len(rec) > limit {
		err = fmt.Errorf("%w: %d bytes (at most %d)", b.q.cfg.ErrTooLarge, len(rec), limit)
	}
	if err != nil {
		if rec != nil {
			PutBuf(rec)
		}
		r.Err = err
		return r, false
	}
	if len(ops) > 0 {
		if b.q.cfg.Seal != nil {
			rec = b.q.cfg.Seal(rec, len(ops))
		}
		r.Rec, r.Ops = rec, ops
	}
	return r, true
}

// Commit queues the batch and waits for the writer's outcome. ctx is checked before
// the batch joins the queue; once queued it cannot be taken back. An empty batch
// committed with Async returns Config.CheckOpen at once; with Sync it is a barrier
// that returns once everything committed before it is written (and synced as the
// adapter's policy says).
func (b *Batch[O]) Commit(ctx context.Context, d persistence.Durability) error {
	q := b.q
	r, ok := b.Finish(ctx, d)
	if !ok {
		err := r.Err
		q.release(r)
		return err
	}
	if r.Rec == nil && d == persistence.Async {
		q.release(r)
		return q.cfg.CheckOpen()
	}
	if err := q.Submit(r); err != nil {
		q.release(r)
		return err
	}
	err := <-r.wait
	q.release(r)
	return err
}

// CommitAsync commits like Commit without waiting: done is called exactly once with the
// result, on the completion Runner (after it closed, on the caller's goroutine).
// Callbacks of batches committed from one goroutine run in commit order, also those of
// batches that fail at once (invalid, already done). CommitAsync itself blocks only
// while the queue holds more than MaxQueuedBytes (backpressure).
func (b *Batch[O]) CommitAsync(d persistence.Durability, done func(error)) {
	b.submitAsync(d, done, nil)
}

// CommitCancelable is CommitAsync for a batch the broker may withdraw while it waits in
// the queue (concurrent store and dispatch). It returns nil, and commits as CommitAsync,
// with Config.StoreBeforeDispatch. A withdrawn batch is never written; its done gets
// persistence.ErrCanceled from within cancel, so withdrawing costs the completion Runner
// nothing (with consumers that keep up, most batches are withdrawn).
func (b *Batch[O]) CommitCancelable(d persistence.Durability, done func(error)) (cancel func() bool) {
	if b.q.cfg.StoreBeforeDispatch {
		b.submitAsync(d, done, nil)
		return nil
	}
	st := new(atomic.Uint32)
	b.submitAsync(d, done, st)
	return func() bool {
		if !st.CompareAndSwap(reqQueued, reqCanceled) {
			return false
		}
		b.q.signal() // a writer holding for withdrawals (Queue.Hold) goes on at once
		done(persistence.ErrCanceled)
		return true
	}
}

func (b *Batch[O]) submitAsync(d persistence.Durability, done func(error), st *atomic.Uint32) {
	q := b.q
	r, _ := b.Finish(context.Background(), d)
	r.Done, r.state = done, st
	if err := q.Submit(r); err != nil {
		if st != nil {
			st.Store(reqTaken) // not queued: cancel has nothing to withdraw
		}
		if r.Err != nil {
			err = r.Err
		}
		q.release(r)
		q.cfg.Callbacks.Push(done, err)
	}
}

// Rollback discards the batch.
func (b *Batch[O]) Rollback() {
	if !b.Ended && b.Rec != nil {
		PutBuf(b.Rec)
	}
	b.Ended, b.Rec, b.Ops, b.err = true, nil, nil, nil
}
