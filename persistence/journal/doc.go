// Package journal is the "kahadb" persistence adapter, the broker's default store: a
// KahaDB-like append-only journal of batch records with an in-memory index that is
// checkpointed to disk. It implements persistence.Store and persistence.AsyncBatch.
//
// # Design
//
//   - Writes: every Batch is encoded, as its operations are recorded, into one framed
//     record. One writer goroutine takes every record queued since its last round,
//     appends them with one write, fsyncs once (per SyncStrategy), applies the batches to
//     the index in order under one lock, and then wakes every committer (group commit;
//     see writer). Never one fsync per message. After a synced group it waits a moment
//     (half an fsync, at most 500µs) for the committers it woke to come back, so groups
//     do not alternate between large and small. A group made only of withdrawable
//     writes (messages dispatched while storing) waits up to one fsync (500µs at most)
//     for their consumers to withdraw them, while such waits see withdrawals
//     (groupcommit.Queue.Hold); Async commits (acknowledgements nobody waits for) ride
//     the next synced group, or journalAsyncSyncDelay when none comes.
//   - Index: per destination, extents: for each run of its messages appended to a
//     segment in seq order (queues and topics are written so), the seq range, a bitmap
//     of the seqs still stored, their lengths run-length coded, and a sparse table (an
//     entry every 4 KiB of the run's messages: first seq, record offset) to seek by.
//     The compactor's copies go to moved extents, one per destination and segment
//     they were copied to (their ranges may overlap the others'). Messages that do not
//     continue a run (scheduled jobs, whose seqs are due times; a batch that reached
//     the writer after a later one; a replaced message) are in the destination's log,
//     a sorted list of blocks of (seq, place) (an insertion shifts one block of at
//     most 512, never the whole log). Before each checkpoint, what a log holds in a
//     sealed segment (at least 1024 messages of a destination there; at Close, in the
//     active segment too) moves to a run file, run-<segment>-<id>.idx: the places
//     sorted by seq, written once; in memory a run keeps a bit per message (stored or
//     not), a fence every 64 entries and a membership filter (8 bits a message), so an
//     Add or Ack of a seq no run holds reads no file and one that a run holds reads one
//     block of 64 entries. Per durable subscription the seqs
//     it still owes: a bitmap from the oldest to the newest, and a sorted slice of
//     those far from it; per segment the count of live messages and bytes. No message
//     body or header is kept in memory: Scan seeks by the sparse table and reads the
//     segment forward, skipping other destinations' records, and merges the runs'
//     files in seq order. A message in an extent costs about a bit and a fraction of
//     a table entry (well under a byte for messages of equal sizes; 12 bytes more for
//     each change of length from the previous message); one in a log about 25 bytes,
//     one in a run about 1.2; plus a bit per subscription that owes it (8 bytes if far
//     from its other pending seqs).
//   - Checkpoints: every CheckpointInterval (if anything changed) and at Close the whole
//     index is written to index-<gen>.ckpt (write temp, fsync, rename, fsync directory),
//     after the journal was fsynced up to the position the index reflects. Open loads the
//     newest intact checkpoint and replays only the records after its position.
//   - Space: a segment below the position of the oldest retained checkpoint that nothing
//     live refers to is deleted after a checkpoint. Every CleanupInterval the compactor
//     copies the live messages of sealed segments whose live bytes are below
//     CompactLiveRatio (25%) to the end of the journal (Move records), so those segments
//     die and are deleted too: a few stuck messages cannot pin gigabytes.
//
// # Why acknowledged messages never come back
//
// KahaDB replays its journal from its index's last update and must keep every ack record
// as long as the message it deletes is in a live file, which chains files together. Here
// a checkpoint is authoritative for everything before its position P: recovery never
// replays a record before P, so an ack (or purge, or RemoveSub) before P needs no record
// at all — its effect is in the checkpoint, and the segment that held it may go. After P,
// acks are replayed in journal order with everything else. A segment is only deleted when
// it lies wholly below P of every retained checkpoint (two are kept, so a damaged newest
// one falls back to the previous one) and neither the newest checkpoint nor the current
// index has a message in it (the newest checkpoint counts because an ack applied after
// its snapshot may not be on disk yet). A message the older checkpoint still lists there
// was deleted or moved after that checkpoint's P, by a record at or after P, which is
// still there and replayed. A Move applies only if the message is still at the place it
// was copied from, during replay as when it was committed, so a copy of an acked message
// stays dead. Recovery without any intact checkpoint replays every segment that is left
// and warns that acknowledged messages may then reappear.
//
// # On-disk format: segments version 1, records version 2, checkpoints version 3, run files version 1
//
// All integers are little-endian; uvarint/varint are encoding/binary's; str is a
// uvarint length and the bytes. The directory holds the segments db-<n>.log (n = 1, 2,
// ..., never reused), the checkpoints index-<gen>.ckpt, the run files
// run-<n>-<id>.idx (id = 1, 2, ..., never reused), and a lock file.
//
// Segment file:
//
//	header (16 bytes): "AMQGOJNL" | u32 format version (1) | u32 segment number n
//	records, each starting at a multiple of 8:
//	  u32 CRC-32C (Castagnoli) of the next 8 header bytes and the payload
//	  u32 payload length
//	  u8  record type (1 = batch; 0 is never valid, so zeroed space is not a record)
//	  u8  record version (1, or 2 when a message in it has a typed part)
//	  u16 reserved (0)
//	  payload
//	  zero padding to the next multiple of 8
//
// Batch payload: u32 operation count, then the operations, each a u8 kind and its
// fields. Kinds 1-6 and the message after the CRC are package batchrec's encoding
// (version 2), shared with logstore; Add's u32 length, the message CRC and Move are the
// journal's own:
//
//	1 Add       u32 length, message
//	2 Ack       str dest, uvarint seq
//	3 AckSub    str clientID, str name, uvarint seq
//	4 AddSub    str clientID, str name, str dest, str selector, varint created
//	5 RemoveSub str clientID, str name
//	6 Purge     str dest
//	7 Move      u32 old segment, u32 old offset, u32 length, message (compactor's copy)
//
// Message (self-contained, so the index can point at it and Scan read it alone; after
// the CRC, batchrec.AppendMessage's encoding):
//
//	u32 CRC-32C of the rest of the message
//	uvarint seq, str dest, u8 flags (bit 0: persistent, bit 1: typed), u8 priority,
//	varint expires, varint timestamp, uvarint redelivery count,
//	str id, uvarint header string count, str × count (key, value, key, value, ...),
//	str body, [str typed part, if flags bit 1], uvarint subscription count,
//	(str clientID, str name) × count
//
// The typed part is persistence.AppendTyped's encoding (the JMS body kind and typed
// properties; version 1, described there). Record version 2 (this build) is version 1
// with it: a record holding a message that has a typed part (an Add, or a Move of one)
// is written as version 2, which a build that does not know the typed part refuses
// rather than dropping it; every other record is written as version 1, byte for byte as
// before, and both are read.
//
// Run file, version 1: the places of one destination's messages in segment n, sorted
// by seq (a position is an entry's index in this order). Written whole before a
// checkpoint refers to it (write temp, fsync, rename, fsync directory), never changed,
// deleted with its segment, at Open if its segment is gone, or after a checkpoint once
// no retained checkpoint refers to it. Which entries are still stored is the
// checkpoint's liveness bitmap, not the file's business.
//
//	header: "AMQGORUN" | u32 version (1) | u32 segment n | u32 entry count |
//	        u32 destination name length | destination name
//	entries (20 bytes each, by seq, distinct): u64 seq | u32 offset of the message in
//	        the segment | u32 its encoded length | u32 its body length
//	trailer: u32 CRC-32C of everything before
//
// Checkpoint file, version 3 (written by this build):
//
//	header (40 bytes): "AMQGOIDX" | u32 checkpoint version (3) | u32 0 | u64 generation |
//	                   u32 segment of P | u32 0 | u64 offset of P
//	uvarint destination count, per destination:
//	  str name, uvarint flags (bit 0: an Add was ever applied), uvarint last seq,
//	  uvarint segment of its last record, uvarint highest seq of its records there,
//	  uvarint lowest seq of its Add records there (none: 2^64-1; 0 blocks moved
//	  extents there), uvarint highest seq of its Move records there,
//	  uvarint extent count, per extent (by seq; seq ranges do not overlap):
//	    uvarint segment, uvarint lo (first seq), uvarint hi - lo,
//	    uvarint end (offset after its last message), uvarint bytes since its last
//	    sparse entry, uvarint base (a multiple of 64), uvarint word count,
//	    u64 × count (bit i of word w: seq base + 64w + i is stored),
//	    its length table: uvarint chunk count c; if c = 0 and it stores something,
//	    its runs (while its lengths changed fewer than 16 times): uvarint count
//	    (1-16), per run: uvarint start seq (first run: the seq, at or below the first
//	    stored seq; then the difference, > 0, from the one before; every start in
//	    [lo, hi]), uvarint length, uvarint body length (of the seqs from there to the
//	    next run); if c > 0: uvarint first (the first seq of the first chunk, a
//	    multiple of 64, at or below the first stored seq), uvarint end - first (end:
//	    the seq after the last one appended, in the last chunk), uvarint byte count
//	    × c, then the chunks' items, chunk i (the seqs from first + 64i) starting
//	    with its cursor at first + 64i and nothing known; each item a uvarint v:
//	      v&1 = 0: the message at the cursor has body length v>>1; cursor + 1
//	      v&3 = 1: the v>>2 messages from the cursor (v>>2 > 0) have the body length
//	               of the message before; cursor + v>>2
//	      v&7 = 3: v>>3 seqs from the cursor (v>>3 > 0) were not appended; cursor + v>>3
//	      v&7 = 7: the overhead of the messages that follow is the zigzag-coded (as
//	               varint) v>>3
//	    a message's length is its body length + the size of that as a uvarint + the
//	    overhead (set in its chunk before it); every stored seq is given one, no
//	    chunk's cursor passes its end, the last one's ends at end, and end <= hi + 1
//	    uvarint sparse entry count, per entry: uvarint seq delta, uvarint record
//	    offset delta (first entry: deltas from lo and from 0)
//	  uvarint moved extent count, per moved extent (the compactor's copies; by lo,
//	    ranges may overlap, a seq is stored in one place): as an extent
//	  uvarint log count, per message of the log (by seq): uvarint seq delta,
//	  uvarint segment, uvarint offset, uvarint length, uvarint body length
//	  uvarint run count, per run: uvarint id, uvarint segment, uvarint entry count,
//	    uvarint CRC-32C of the run file (its trailer), uvarint word count
//	    ((count+63)/64), u64 × words (bit p of word w: the entry at position 64w+p
//	    is stored)
//	  uvarint subscription count, per subscription (topic only, in registration order):
//	  str clientID, str name, str selector, varint created, its pending set:
//	    uvarint base (a multiple of 64), uvarint word count, u64 × count (bit i of
//	    word w: seq base + 64w + i is pending), then the pending seqs kept apart
//	    (far from that range when they were added): uvarint count, uvarint seq
//	    delta × count
//	trailer (12 bytes): u64 length of everything before | u32 CRC-32C of it
//
// Loading it opens and checks each run file whole (header, size, order, CRC); a run file
// missing or damaged while its segment exists makes the checkpoint unusable (Open falls
// back to the older one, or replays every segment); if its segment is gone too, what
// the run held is gone with it.
//
// Checkpoint file, version 2 (read; its extents' runs are converted into length tables
// at load, and a log's messages in sealed segments stay in memory until the next
// checkpoint moves them to run files): as version 3, with version 2 in the header, no
// run count after a destination's log, and in place of each extent's length table
//
//	uvarint run count, per run: uvarint first seq - lo, uvarint length, uvarint body
//	length (the lengths of the seqs from there to the next run)
//
// Checkpoint file, version 1 (read and converted at load: every message goes to its
// destination's log, and a message added later to P's segment with a seq up to the
// destination's last seq goes there too, since version 1 does not say which seqs have
// records in that segment; after replay, the segments holding messages are read once
// and runs of at least 8 messages of a destination in one segment, in seq and offset
// order and each the only record of its seq there, become extents):
//
//	header: as version 3, with version 1
//	uvarint destination count, per destination:
//	  str name, uvarint flags (bit 0: an Add was ever applied), uvarint last seq,
//	  uvarint message count, per message (by seq): uvarint seq delta, uvarint segment,
//	  uvarint offset, uvarint length, uvarint body length
//	  uvarint subscription count, per subscription (topic only, in registration order):
//	  str clientID, str name, str selector, varint created,
//	  uvarint pending count, uvarint seq delta × count
//	trailer: as version 3
//
// Compatibility rule: a reader refuses a segment, record or checkpoint whose version it
// does not know (the data is reported as damaged, never misread). A change to any layout
// above takes a new version number; a build that writes version N+1 keeps reading N.
//
// # Recovery
//
// Open loads the newest intact checkpoint and replays the records after its position.
// In the last segment, a bad record (checksum, short, zeroed) with no good record after
// it is a torn write: the tail is truncated, synced and logged with its byte count.
// Anywhere else a bad range is logged as an error, listed in RecoveryInfo and skipped;
// replay goes on with the next good record, and the store opens with everything else.
// A message whose stored bytes turn out damaged when read is logged and skipped by Scan.
// Index entries whose data is missing are dropped and counted (LostMessages).
//
// # Options (persistenceAdapter.kahaDB)
//
//	directory                default <dataDirectory>/kahadb
//	journalMaxFileLength     32mb   (64kb .. 2gb)
//	journalDiskSyncStrategy  always | periodic | never (see SyncStrategy for loss windows)
//	journalDiskSyncInterval  1s     (periodic)
//	journalAsyncSyncDelay    5ms    (always: the longest an Async commit waits for an fsync)
//	checkpointInterval       5s
//	cleanupInterval          30s
//
// # Costs the broker should know
//
// Scan and ScanSub read from the segment files (128 messages or 1 MiB per round, no
// lock held while fn runs, one allocation per message for its strings): the messages
// of extents by reading the segment forward from the sparse entry before the round's
// first one (256 KiB reads, walking the records by destination and seq, copying the
// messages out; the next round resumes where this one stopped), those of logs with
// one ReadAt per run of adjacent ones, those of runs by reading each run file from its
// fence before the round's start (a block of 64 entries, 1,280 bytes, at a time, under
// the index read lock: one such read per run per round); recently written data comes
// from the page cache. An Add or Ack of a seq a run's filter may hold reads a block of
// its file under the write lock. A checkpoint copies the index under its read lock
// (extents: a bit a message and their tables; logs: 24 bytes a message; runs: a bit a
// message) and writes it outside the lock; before that it writes the run files
// outside any lock.
// CommitAsync callbacks run, in order, on one goroutine per store; they must not
// block for long and must not call Close. Commit and CommitAsync
// block while more than 64 MiB of batches wait to be written (backpressure).
package journal
