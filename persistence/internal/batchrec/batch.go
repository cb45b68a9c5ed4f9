package batchrec

import (
	"math"
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
)

// Op is an operation as Batch recorded it, or as replay decoded it: what every
// adapter's decoded operation holds. An adapter's operation type embeds Op and adds
// where the message is in its record; Batch fills in the Op. Only the fields of its
// Kind are set.
type Op struct {
	Kind byte
	Dest string               // Add, Ack, Purge (and an adapter's own kinds)
	Seq  uint64               // Add, Ack, AckSub
	Key  persistence.SubKey   // AckSub, RemoveSub
	Info persistence.SubInfo  // AddSub
	Subs []persistence.SubKey // Add of a topic message: the subscriptions it names
}

// core returns o: through it, Batch reaches the Op an adapter's operation embeds.
func (o *Op) core() *Op { return o }

// Embeds is satisfied by a pointer to an adapter's operation type O that embeds Op.
type Embeds[O any] interface {
	*O
	core() *Op
}

// Adapter is what Batch needs of the adapter using it: how it frames records and the
// Add of a message (see NewAdapter). Make it a package-level variable: Batch keeps a
// pointer to it.
type Adapter[O any] struct {
	start   func(buf []byte) []byte
	invalid error
	add     func(rec []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, O)
	core    func(*O) *Op
}

// NewAdapter returns the Adapter of an adapter whose operation type O embeds Op. start
// starts a record in a buffer (the adapter's framing); invalid is the adapter's
// sentinel for an invalid operation; add appends the adapter's framing of an Add of m
// naming subs (see CheckAdd) to rec, and returns the record and the adapter's own
// fields of the operation, its Op left zero (Batch fills it in).
func NewAdapter[O any, P Embeds[O]](start func(buf []byte) []byte, invalid error,
	add func(rec []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, O)) Adapter[O] {
	return Adapter[O]{start: start, invalid: invalid, add: add, core: func(o *O) *Op { return P(o).core() }}
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
// Add's framing is the adapter's (NewAdapter's add); the commit methods are
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
func (b *Batch[O]) Invalidf(format string, args ...any) { b.Invalid(b.a.invalid, format, args...) }

// Record returns the record buffer, starting it on first use.
func (b *Batch[O]) Record() []byte { return b.Buf(b.a.start) }

// Add encodes m into the batch: the caller may reuse m as soon as Add returns.
func (b *Batch[O]) Add(m *persistence.Message) {
	subs, ok := b.CheckAdd(m)
	if !ok {
		return
	}
	var o O
	b.Rec, o = b.a.add(b.Record(), m, subs)
	b.Ops = append(b.Ops, o)
	c := b.a.core(&b.Ops[len(b.Ops)-1]) // zero: set the fields of an Add alone
	c.Kind, c.Dest, c.Seq, c.Subs = OpAdd, m.Dest, m.Seq, subs
}

// push appends the operation o to Ops, in place (an adapter's operation is large).
func (b *Batch[O]) push(o Op) {
	var zero O
	b.Ops = append(b.Ops, zero)
	*b.a.core(&b.Ops[len(b.Ops)-1]) = o
}

// Ack records the deletion of a message.
func (b *Batch[O]) Ack(dest string, seq uint64) {
	if !b.Ended {
		b.Rec = AppendAck(b.Record(), dest, seq)
		b.push(Op{Kind: OpAck, Dest: dest, Seq: seq})
	}
}

// AckSub records an acknowledgement of a durable subscription.
func (b *Batch[O]) AckSub(sub persistence.SubKey, seq uint64) {
	if !b.Ended {
		b.Rec = AppendAckSub(b.Record(), sub, seq)
		b.push(Op{Kind: OpAckSub, Key: sub, Seq: seq})
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
		b.push(Op{Kind: OpAddSub, Info: info})
	}
}

// RemoveSub records the removal of a durable subscription.
func (b *Batch[O]) RemoveSub(sub persistence.SubKey) {
	if !b.Ended {
		b.Rec = AppendRemoveSub(b.Record(), sub)
		b.push(Op{Kind: OpRemoveSub, Key: sub})
	}
}

// Purge records the deletion of every message of dest.
func (b *Batch[O]) Purge(dest string) {
	if !b.Ended {
		b.Rec = AppendPurge(b.Record(), dest)
		b.push(Op{Kind: OpPurge, Dest: dest})
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
