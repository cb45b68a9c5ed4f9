package logstore

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
// message once, straight into the bytes the log will hold, and keeps the decoded
// operations beside them for the writer to apply once the record is appended (the same
// operations replay decodes from the record).
//
// The record, the operations but Add and the commit methods are batchrec.Batch's (its
// groupcommit.Batch's): Commit appends the batch to the log and applies it; with Sync
// it returns once the batch is on stable storage (FlushBatch; see FlushPolicy for the
// others), with Async once it is appended and visible. CommitCancelable returns nil
// when the store was opened with StoreBeforeDispatch; a batch withdrawn before the writer took it is never appended.
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
	var pos uint32
	b.Rec, pos = appendAdd(b.Record(), m, subs)
	b.Ops = append(b.Ops, op{kind: opAdd, dest: m.Dest, seq: m.Seq, subs: subs, pos: pos, body: uint32(len(m.Body))})
}
