package batchrec

import (
	"math"
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
)

// Op is an operation other than Add as Batch recorded it; an Adapter turns it into the
// adapter's own decoded operation. Only the fields of its Kind are set.
type Op struct {
	Kind byte
	Dest string              // Ack, Purge
	Seq  uint64              // Ack, AckSub
	Key  persistence.SubKey  // AckSub, RemoveSub
	Info persistence.SubInfo // AddSub
}

// Adapter is what Batch needs of the adapter using it. Make it a package-level variable:
// Batch keeps a pointer to it.
type Adapter[O any] struct {
	Start   func(buf []byte) []byte // starts a record in buf (the adapter's framing)
	Op      func(Op) O              // the adapter's decoded operation for o
	Invalid error                   // the adapter's sentinel for an invalid operation
	// Add appends the adapter's framing of an Add of m naming subs (see CheckAdd) to
	// rec, and returns the record and the decoded operation.
	Add func(rec []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, O)
}

// Compile-time guards: a Batch is a persistence.Batch with the AsyncBatch and
// CancelableBatch powers.
var (
	_ persistence.Batch           = (*Batch[int])(nil)
	_ persistence.AsyncBatch      = (*Batch[int])(nil)
	_ persistence.CancelableBatch = (*Batch[int])(nil)
)

// Batch is a groupcommit.Batch that records every operation of persistence.Batch: each
// is encoded into the record as it is recorded (see the package comment), so Add
// copies the message once, straight into the bytes that will be written, and kept,
// decoded, in Ops, which the writer applies to the index once the record is written.
// Add's framing is the adapter's (Adapter.Add); the commit methods are
// groupcommit.Batch's.
//
// A Batch is used by one goroutine at a time. Once committed or rolled back it is done:
// later operations are ignored and Commit returns persistence.ErrBatchDone.
type Batch[O any] struct {
	groupcommit.Batch[O]
	a *Adapter[O]
}

// Init makes b commit to q and record as a says. b must not be copied afterwards.
func (b *Batch[O]) Init(q *groupcommit.Queue[O], a *Adapter[O]) {
	b.Batch.Init(q)
	b.a = a
}

// Invalidf records the first invalid operation with the adapter's sentinel.
func (b *Batch[O]) Invalidf(format string, args ...any) { b.Invalid(b.a.Invalid, format, args...) }

// Record returns the record buffer, starting it on first use.
func (b *Batch[O]) Record() []byte { return b.Buf(b.a.Start) }

// Add encodes m into the batch: the caller may reuse m as soon as Add returns.
func (b *Batch[O]) Add(m *persistence.Message) {
	subs, ok := b.CheckAdd(m)
	if !ok {
		return
	}
	var o O
	b.Rec, o = b.a.Add(b.Record(), m, subs)
	b.Ops = append(b.Ops, o)
}

// Ack records the deletion of a message.
func (b *Batch[O]) Ack(dest string, seq uint64) {
	if !b.Ended {
		b.Rec = AppendAck(b.Record(), dest, seq)
		b.Ops = append(b.Ops, b.a.Op(Op{Kind: OpAck, Dest: dest, Seq: seq}))
	}
}

// AckSub records an acknowledgement of a durable subscription.
func (b *Batch[O]) AckSub(sub persistence.SubKey, seq uint64) {
	if !b.Ended {
		b.Rec = AppendAckSub(b.Record(), sub, seq)
		b.Ops = append(b.Ops, b.a.Op(Op{Kind: OpAckSub, Key: sub, Seq: seq}))
	}
}

// AddSub records a durable subscription; its Dest must be a topic.
func (b *Batch[O]) AddSub(info persistence.SubInfo) {
	if persistence.KindOf(info.Dest) != persistence.KindTopic {
		b.Invalidf("AddSub %s needs a topic, not %q", info.Key, info.Dest)
		return
	}
	if !b.Ended {
		b.Rec = AppendAddSub(b.Record(), info)
		b.Ops = append(b.Ops, b.a.Op(Op{Kind: OpAddSub, Info: info}))
	}
}

// RemoveSub records the removal of a durable subscription.
func (b *Batch[O]) RemoveSub(sub persistence.SubKey) {
	if !b.Ended {
		b.Rec = AppendRemoveSub(b.Record(), sub)
		b.Ops = append(b.Ops, b.a.Op(Op{Kind: OpRemoveSub, Key: sub}))
	}
}

// Purge records the deletion of every message of dest.
func (b *Batch[O]) Purge(dest string) {
	if !b.Ended {
		b.Rec = AppendPurge(b.Record(), dest)
		b.Ops = append(b.Ops, b.a.Op(Op{Kind: OpPurge, Dest: dest}))
	}
}

// MaxSeq is the largest sequence number Add accepts (signed 64-bit, as the Store
// contract promises).
const MaxSeq = math.MaxInt64

// CheckAdd applies the rules of Add to m: it records an invalid m and returns false, or
// false for an ended batch, or true and the subscriptions the record names (a copy of
// m.Subs for a topic message, nil otherwise).
func (b *Batch[O]) CheckAdd(m *persistence.Message) (subs []persistence.SubKey, ok bool) {
	switch {
	case m == nil:
		b.Invalidf("Add of a nil message")
		return nil, false
	case m.Dest == "" || m.Seq == 0 || m.Seq > MaxSeq:
		b.Invalidf("Add needs Dest and a Seq from 1 to %d (dest %q, seq %d)", uint64(MaxSeq), m.Dest, m.Seq)
		return nil, false
	case b.Ended:
		return nil, false
	}
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		subs = slices.Clone(m.Subs)
	}
	return subs, true
}
