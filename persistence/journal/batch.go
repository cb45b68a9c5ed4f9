package journal

import (
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/groupcommit"
)

// Compile-time guards: a batch is a persistence.Batch with the AsyncBatch and
// CancelableBatch powers.
var (
	_ persistence.Batch           = (*batch)(nil)
	_ persistence.AsyncBatch      = (*batch)(nil)
	_ persistence.CancelableBatch = (*batch)(nil)
)

// batch encodes every operation into its record as it is recorded, so Add copies the
// message once, straight into the bytes that will be written, and the writer only has
// to copy records into its group buffer. Beside the bytes it keeps the decoded
// operations, which the writer applies to the index once the record is written.
//
// The record and the commit methods are groupcommit.Batch's: Commit writes the batch and
// applies it; with Sync it returns once the batch is on stable storage (SyncAlways; see
// SyncStrategy for the others), with Async once it is written and visible.
// CommitCancelable returns nil when the store was opened with StoreBeforeDispatch.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// later operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	groupcommit.Batch[op]
}

func (s *Store) newBatch() *batch {
	b := &batch{}
	b.Init(s.w.q)
	return b
}

func (b *batch) invalid(format string, args ...any) { b.Invalid(ErrInvalid, format, args...) }

// buf returns the record buffer, starting it on first use.
func (b *batch) buf() []byte { return b.Buf(newRecord) }

// Add encodes m into the batch: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	switch {
	case m == nil:
		b.invalid("Add of a nil message")
		return
	case m.Dest == "" || m.Seq == 0 || m.Seq > maxSeq:
		b.invalid("Add needs Dest and a Seq from 1 to %d (dest %q, seq %d)", uint64(maxSeq), m.Dest, m.Seq)
		return
	case b.Ended:
		return
	}
	var subs []persistence.SubKey
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		subs = slices.Clone(m.Subs)
	}
	var off uint32
	b.Rec, off = appendAdd(b.buf(), m, subs)
	b.Ops = append(b.Ops, op{kind: opAdd, dest: m.Dest, seq: m.Seq, subs: subs, msgOff: off,
		loc: loc{n: uint32(len(b.Rec)) - off, body: uint32(len(m.Body))}})
}

// Ack records the deletion of a message.
func (b *batch) Ack(dest string, seq uint64) {
	if !b.Ended {
		b.Rec = appendAck(b.buf(), dest, seq)
		b.Ops = append(b.Ops, op{kind: opAck, dest: dest, seq: seq})
	}
}

// AckSub records an acknowledgement of a durable subscription.
func (b *batch) AckSub(sub persistence.SubKey, seq uint64) {
	if !b.Ended {
		b.Rec = appendAckSub(b.buf(), sub, seq)
		b.Ops = append(b.Ops, op{kind: opAckSub, key: sub, seq: seq})
	}
}

// AddSub records a durable subscription.
func (b *batch) AddSub(info persistence.SubInfo) {
	if persistence.KindOf(info.Dest) != persistence.KindTopic {
		b.invalid("AddSub %s needs a topic, not %q", info.Key, info.Dest)
		return
	}
	if !b.Ended {
		b.Rec = appendAddSub(b.buf(), info)
		b.Ops = append(b.Ops, op{kind: opAddSub, info: info})
	}
}

// RemoveSub records the removal of a durable subscription.
func (b *batch) RemoveSub(sub persistence.SubKey) {
	if !b.Ended {
		b.Rec = appendRemoveSub(b.buf(), sub)
		b.Ops = append(b.Ops, op{kind: opRemoveSub, key: sub})
	}
}

// Purge records the deletion of every message of dest.
func (b *batch) Purge(dest string) {
	if !b.Ended {
		b.Rec = appendPurge(b.buf(), dest)
		b.Ops = append(b.Ops, op{kind: opPurge, dest: dest})
	}
}

// move records a compactor's copy of the encoded message raw of (dest, seq), now at
// (oldSeg, oldOff).
func (b *batch) move(dest string, seq uint64, old loc, raw []byte) {
	var off uint32
	b.Rec, off = appendMove(b.buf(), old.seg, old.off, raw)
	b.Ops = append(b.Ops, op{kind: opMove, dest: dest, seq: seq, oldSeg: old.seg, oldOff: old.off,
		msgOff: off, loc: loc{n: uint32(len(raw)), body: old.body}})
}
