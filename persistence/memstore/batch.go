package memstore

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

type opKind uint8

const (
	opAdd opKind = iota + 1
	opAck
	opAckSub
	opAddSub
	opRemoveSub
	opPurge
)

// op is one recorded batch operation. sub carries the whole SubInfo for AddSub and
// only the Key for AckSub and RemoveSub.
type op struct {
	kind opKind
	seq  uint64
	dest string
	e    *entry // Add: the message copied into its future store entry
	sub  persistence.SubInfo
}

// batch records operations and applies them under the store's write lock, which makes
// a Commit atomic and orders it after every Commit that returned before it started.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// further operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	s    *Store
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

// Add records a copy of m: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	switch {
	case m == nil:
		b.invalid("Add of a nil message")
		return
	case m.Dest == "" || m.Seq == 0:
		b.invalid("Add needs Dest and a Seq > 0 (dest %q, seq %d)", m.Dest, m.Seq)
		return
	}
	if b.done {
		return
	}
	e := &entry{msg: *m}
	c := &e.msg
	c.Headers = slices.Clone(m.Headers)
	c.Body = slices.Clone(m.Body)
	c.Subs = nil
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		c.Subs = slices.Clone(m.Subs) // consumed by add; queue messages have none
	}
	b.record(op{kind: opAdd, e: e})
}

func (b *batch) Ack(dest string, seq uint64) {
	b.record(op{kind: opAck, dest: dest, seq: seq})
}

func (b *batch) AckSub(sub persistence.SubKey, seq uint64) {
	b.record(op{kind: opAckSub, sub: persistence.SubInfo{Key: sub}, seq: seq})
}

func (b *batch) AddSub(info persistence.SubInfo) {
	if persistence.KindOf(info.Dest) != persistence.KindTopic {
		b.invalid("AddSub %s needs a topic, not %q", info.Key, info.Dest)
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

// Commit applies the batch. Memory has no stable storage, so d is ignored and Sync
// costs what Async does. A ctx already done makes Commit fail with ctx.Err() and apply
// nothing. After Commit, whatever it returned, the batch is done.
func (b *batch) Commit(ctx context.Context, d persistence.Durability) error {
	if b.done {
		return persistence.ErrBatchDone
	}
	ops, err := b.ops, b.err
	b.done, b.ops, b.err = true, nil, nil
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

func (b *batch) Rollback() {
	b.done, b.ops, b.err = true, nil, nil
}
