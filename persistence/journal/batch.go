package journal

import (
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
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
// The record, the operations but Add and the commit methods are batchrec.Batch's (its
// groupcommit.Batch's): Commit writes the batch and applies it; with Sync it returns
// once the batch is on stable storage (SyncAlways; see SyncStrategy for the others),
// with Async once it is written and visible. CommitCancelable returns nil when the store
// was opened with StoreBeforeDispatch.
//
// A batch is used by one goroutine at a time. Once committed or rolled back it is done:
// later operations are ignored and Commit returns persistence.ErrBatchDone.
type batch struct {
	batchrec.Batch[op] // the record, Ack, AckSub, AddSub, RemoveSub, Purge, the commit methods
}

// recAdapter is how batchrec.Batch frames records and makes ops for this store.
var recAdapter = batchrec.Adapter[op]{
	Start:   newRecord,
	Invalid: ErrInvalid,
	Op: func(o batchrec.Op) op {
		return op{kind: opKind(o.Kind), dest: o.Dest, seq: o.Seq, key: o.Key, info: o.Info}
	},
}

func (s *Store) newBatch() *batch {
	b := &batch{}
	b.Init(s.w.q, &recAdapter)
	return b
}

// Add encodes m into the batch: the caller may reuse m as soon as Add returns.
func (b *batch) Add(m *persistence.Message) {
	subs, ok := b.CheckAdd(m)
	if !ok {
		return
	}
	var off uint32
	b.Rec, off = appendAdd(b.Record(), m, subs)
	b.Ops = append(b.Ops, op{kind: opAdd, dest: m.Dest, seq: m.Seq, subs: subs, msgOff: off,
		loc: loc{n: uint32(len(b.Rec)) - off, body: uint32(len(m.Body))}})
}

// move records a compactor's copy of the encoded message raw of (dest, seq), now at
// (oldSeg, oldOff).
func (b *batch) move(dest string, seq uint64, old loc, raw []byte) {
	var off uint32
	b.Rec, off = appendMove(b.Record(), old.seg, old.off, raw)
	b.Ops = append(b.Ops, op{kind: opMove, dest: dest, seq: seq, oldSeg: old.seg, oldOff: old.off,
		msgOff: off, loc: loc{n: uint32(len(raw)), body: old.body}})
}
