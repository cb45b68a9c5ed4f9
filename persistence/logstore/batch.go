package logstore

import (
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// A batch is a batchrec.Batch[op] (the shell's Begin): it encodes every operation into
// its record as it is recorded, so Add copies the message once, straight into the bytes
// the log will hold, and keeps the decoded operations beside them for the writer to
// apply once the record is appended (the same operations replay decodes from the
// record). Commit with Sync returns once the batch is on stable storage (FlushBatch;
// see FlushPolicy for the others), with Async once it is appended and visible.
// CommitCancelable returns nil when the store was opened with StoreBeforeDispatch; a
// batch withdrawn before the writer took it is never appended.

// recAdapter is how batchrec.Batch frames this store's records: an Add is the
// length-prefixed message at pos of the record (see appendAdd).
var recAdapter = batchrec.NewAdapter(newRecord, ErrInvalid,
	func(rec []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, op) {
		rec, pos := appendAdd(rec, m, subs)
		return rec, op{pos: pos, body: uint32(len(m.Body))}
	})
