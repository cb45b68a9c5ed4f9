package journal

import (
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// A batch is a batchrec.Batch[op] (the shell's Begin): it encodes every operation into
// its record as it is recorded and keeps the decoded operations beside the bytes, which
// the writer applies to the index once the record is written. Commit with Sync returns
// once the batch is on stable storage (SyncAlways; see SyncStrategy for the others),
// with Async once it is written and visible. CommitCancelable returns nil when the store
// was opened with StoreBeforeDispatch.

// recAdapter is how batchrec.Batch frames this store's records: an Add is the message
// with its checksum, at msgOff of the record (see appendAdd).
var recAdapter = batchrec.NewAdapter(newRecord, ErrInvalid,
	func(rec []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, op) {
		rec, off := appendAdd(rec, m, subs)
		return rec, op{msgOff: off, loc: loc{n: uint32(len(rec)) - off, body: uint32(len(m.Body))}}
	})

// recordMove records in b a compactor's copy of the encoded message raw of (dest, seq),
// now at old.
func recordMove(b *batchrec.Batch[op], dest string, seq uint64, old loc, raw []byte) {
	var off uint32
	b.Rec, off = appendMove(b.Record(), old.seg, old.off, raw)
	b.Ops = append(b.Ops, op{Op: batchrec.Op{Kind: opMove, Dest: dest, Seq: seq}, oldSeg: old.seg, oldOff: old.off,
		msgOff: off, loc: loc{n: uint32(len(raw)), body: old.body}})
}
