// Package logstore is the "kafkalog" persistence adapter: the broker's store kept in a
// log of the project's own kafkalog library, for brokers that want the log as their
// store. It implements persistence.Store, persistence.AsyncBatch and
// persistence.SpaceReporter.
//
// # Design
//
//   - Writes: every Batch is encoded, as its operations are recorded, into one record
//     (a kafkalog Record's value). One writer goroutine takes every batch queued since
//     its last round and appends their records with ONE kafkalog Append to the single
//     partition of the internal topic "store": one CRC-framed log batch, so a round, and
//     each store batch in it, is on disk whole or not at all. With FlushBatch it then
//     fsyncs once if a batch of the round committed with Sync (group commit; Async-only
//     rounds are not synced), applies the batches to the index in order under one lock,
//     and wakes the committers. Never one fsync per message.
//   - Index: per destination a seq-ordered slice of (seq, log offset, position in the
//     record, body length) with tombstones; per topic message the durable subscriptions
//     that still owe it; per subscription a seq-ordered pending set. No header or body is
//     kept in memory: Scan reads messages back from the log, one read per run of
//     adjacent records. A stored message costs about 24 bytes of index (plus the owing
//     subscriptions of a topic message).
//   - Low-water mark: the lowest log offset holding a stored message (or the end of the
//     log when none is stored): every record before it is dead. A count of stored
//     messages per record offset keeps it current as acks, purges and subscription
//     removals delete messages. As DESIGN.md puts it, acks advance a committed offset to
//     the lowest unacked message.
//   - Checkpoint: every CheckpointInterval, if the mark moved, and at Close, the log is
//     fsynced and the file "checkpoint" is replaced atomically (temp file, fsync, rename,
//     directory fsync) with the mark, LastSeq per destination and the durable
//     subscriptions (see the checkpoint type for why that is all recovery needs). Then
//     every log segment wholly below the mark is deleted (kafkalog Log.DeleteBefore), so
//     an acknowledged workload gives its disk back a segment at a time; the log's own
//     time and size retention is off, so nothing live is ever dropped.
//   - Recovery: the log recovers itself (a torn tail is cut at a batch boundary); then
//     the index starts from the checkpoint and replays every record from the mark on.
//     The cost is proportional to the log after the oldest stored message.
//
// One message nobody consumes pins the mark, and with it every later segment: the
// space is given back once it is acknowledged. OldestSegment names the segment and the
// destination of that message, for the stats endpoint.
//
// # On-disk format: records version 2, checkpoint version 1
//
// Options.Dir holds:
//
//	log/                 a kafkalog directory (see package kafkalog: segments, indexes,
//	                     recovery checkpoint, lock) with one topic "store", 1 partition
//	checkpoint           the store's checkpoint (checkpoint.tmp while being replaced)
//
// A record (the value of one kafkalog record; the key is nil) is one committed batch.
// uvarint/varint are encoding/binary's; str is a uvarint length and the bytes. The log
// batch frame carries the CRC-32C, so records carry none.
//
//	u8 record format version (1, or 2 when a message in it has a typed part)
//	operations to the end of the value, each a u8 kind and its fields (package
//	batchrec's encoding, version 2, shared with journal; Add's length is logstore's):
//	  1 Add       uvarint length, message
//	  2 Ack       str dest, uvarint seq
//	  3 AckSub    str clientID, str name, uvarint seq
//	  4 AddSub    str clientID, str name, str dest, str selector, varint created
//	  5 RemoveSub str clientID, str name
//	  6 Purge     str dest
//
// Message (self-contained, so the index can point at it and Scan decode it alone;
// batchrec.AppendMessage's encoding):
//
//	uvarint seq, str dest, u8 flags (bit 0: persistent, bit 1: typed), u8 priority,
//	varint expires, varint timestamp, uvarint redelivery count, str id,
//	uvarint header string count, str × count (key, value, key, value, ...),
//	str body, [str typed part, if flags bit 1], uvarint subscription count,
//	(str clientID, str name) × count
//
// The typed part is persistence.AppendTyped's encoding (the JMS body kind and typed
// properties; version 1, described there). Record version 2 (this build) is version 1
// with it: a record holding a message that has a typed part is written as version 2,
// which a build that does not know the typed part refuses rather than dropping it;
// every other record is written as version 1, byte for byte as before, and both are
// read.
//
// Checkpoint file:
//
//	"LGSTCKPT" | u8 format version (1)
//	uvarint low-water mark | uvarint end (the log offset the rest describes)
//	uvarint destination count, per destination: str name, uvarint last seq
//	uvarint subscription count, per subscription: str clientID, str name, str dest,
//	  str selector, varint created, uvarint offset of the record that registered it
//	u32 CRC-32C (Castagnoli, big-endian) of everything before
//
// Compatibility rule: a reader refuses a record or checkpoint whose version it does not
// know (ErrCorrupt; the data is never misread). A change to any layout above takes a new
// version number; a build that writes version N+1 keeps reading N.
//
// # Failure handling
//
// A record that fails to decode although its log batch passed the CRC, a damaged
// checkpoint file, or a log that no longer reaches the checkpoint's mark makes Open fail
// with ErrCorrupt: the checkpoint is replaced atomically and written only after the log
// is synced past it, so none of these happens without media damage or a bug, and
// guessing would bring acknowledged messages back or lose subscriptions. An append or
// fsync error fails the store (ErrFailed) until it is reopened.
//
// # Options (persistenceAdapter.kafkaLog)
//
//	directory           default <dataDirectory>/kafkalog
//	flush               batch | interval | os (see FlushPolicy for loss windows)
//	flushInterval       1s    (interval)
//	segmentBytes        64mb  (64kb .. 1gb): the unit in which space is given back
//	checkpointInterval  5s
//	concurrentStoreAndDispatchQueues  true: batches committed with CommitCancelable
//	                    may be withdrawn until the writer takes them (false: never)
//
// # Costs the broker should know
//
// Scan and ScanSub pick 128 messages per round under the read lock and read them from
// the log without it (recent data comes from the page cache); fn runs with no lock
// held. The log reads whole log batches (one per writer round, at most 1 MiB unless one
// batch is larger); a scan keeps the records of its last read for its next pages, so a
// queue filled in order costs about one read per log batch. CommitAsync callbacks run, in order, on one goroutine per store; they must not
// block for long and must not call Close. Commit and CommitAsync block while more than
// 64 MiB of batches wait to be appended (backpressure). A batch record is at most
// MaxRecordBytes.
package logstore
