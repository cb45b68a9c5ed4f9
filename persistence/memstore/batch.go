package memstore

import (
	"context"
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/oprec"
)

// Compile-time guards: a batch is a persistence.Batch with the AsyncBatch power.
var (
	_ persistence.Batch      = (*batch)(nil)
	_ persistence.AsyncBatch = (*batch)(nil)
)

// op is one recorded batch operation; an Add carries the message copied into its
// future store entry.
type op = oprec.Op[*entry]

// batch records operations and applies them under the store's write lock, which makes
// a Commit atomic and orders it after every Commit that returned before it started.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// further operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	oprec.Recorder[*entry] // Ack, AckSub, AddSub, RemoveSub, Purge, Len, Rollback
	s                      *Store
}

func (s *Store) newBatch() *batch {
	b := &batch{s: s}
	b.Init(ErrInvalid)
	return b
}

// Add records a copy of m: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	if !b.CheckAdd(m) {
		return
	}
	e := &entry{msg: *m}
	c := &e.msg
	c.Headers = slices.Clone(m.Headers)
	c.Props = m.Props.Clone()
	c.Body = slices.Clone(m.Body)
	c.Subs = oprec.Subs(m) // consumed by add; queue messages have none
	b.RecordAdd(m, e, 0)
}

// Commit applies the batch. Memory has no stable storage, so d is ignored and Sync
// costs what Async does. A ctx already done makes Commit fail with ctx.Err() and apply
// nothing. After Commit, whatever it returned, the batch is done.
func (b *batch) Commit(ctx context.Context, d persistence.Durability) error {
	ops, _, err := b.Take()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.s.applyBatch(ops)
}

// CommitAsync commits like Commit and calls done with the result before it returns, on
// the caller's goroutine: memory needs no fsync to wait for. Callers must therefore not
// hold, while calling CommitAsync, a lock that done takes.
func (b *batch) CommitAsync(d persistence.Durability, done func(error)) {
	done(b.Commit(context.Background(), d))
}
