// Package kafkalog is a partitioned, replayable log in the style of Kafka: a Log holds
// topics, a topic a fixed number of partitions, a partition an append-only sequence of
// records with dense offsets 0, 1, 2, ... kept by time or size, not by consumption.
// Consumer groups share a topic's partitions (sticky rebalance on join and leave) and
// commit their offsets durably. The package imports only the standard library and the
// internal/vfs file-system seam, through which it does all file I/O.
//
//	l, err := kafkalog.Open(kafkalog.Options{Dir: dir, Flush: kafkalog.FlushBatch})
//	err = l.CreateTopic("orders", 4)
//	off, err := l.Append("orders", 2, []kafkalog.Record{{Key: k, Value: v}})
//	recs, err := l.Read("orders", 2, off, 1<<20)
//	a, err := l.Group("billing").Join("consumer-1", "orders")
//	err = l.Commit("billing", "orders", 2, off+1)
//
// # Layout on disk (format version 1)
//
//	<Dir>/.lock                        advisory lock: one Log per directory
//	<Dir>/consumer-offsets.dat         committed offsets of every group
//	<Dir>/<topic>-<partition>/         one directory per partition
//	    00000000000000000000.log       segment: batches, base offset in 20 digits
//	    00000000000000000000.index     sparse offset index
//	    00000000000000000000.timeindex sparse time index
//	    recovery-checkpoint            recovery point and clean-shutdown flag
//	    topic-config                   partition 0 only: the topic's TopicConfig, if set
//
// Files ending in .tmp are unfinished atomic rewrites; Open deletes them. All integers
// are big-endian.
//
// # Batch frame (.log)
//
// A segment is a sequence of batch frames; a batch is the unit of append, checksum and
// indexing (as Kafka's record batch v2, simplified):
//
//	offset size field
//	0      8    baseOffset      int64, offset of the first record
//	8      4    length          int32, bytes after this field (frame size - 12)
//	12     1    magic           format version, 1
//	13     4    crc             CRC-32C (Castagnoli) of bytes 17..end
//	17     2    attributes      int16, 0 (reserved: compression, ...)
//	19     4    lastOffsetDelta int32, count - 1
//	23     8    firstTimestamp  int64 ms, timestamp of the first record
//	31     8    maxTimestamp    int64 ms, largest timestamp in the batch
//	39     4    count           int32 records, ≥ 1
//	43     ...  records
//
// The base offset lies outside the CRC so a batch can be encoded before its offset is
// known. Each record is a uvarint body length followed by the body:
//
//	varint  timestampDelta (from firstTimestamp)
//	uvarint offsetDelta (its index in the batch)
//	varint  keyLength (-1: nil key), key bytes
//	varint  valueLength (-1: nil value), value bytes
//	uvarint headerCount, then per header: uvarint nameLength, name, uvarint valueLength, value
//
// (varint is zig-zag, as encoding/binary.) The batches of a segment have dense offsets
// starting at the segment's base offset, which is the file name.
//
// # Indexes
//
// .index holds 8-byte entries: uint32 offset relative to the segment base, uint32 byte
// position of the batch starting at that offset. An entry is added for a batch once more
// than IndexIntervalBytes (default 4 KiB) were appended since the last one, so lookup is a
// binary search for the greatest entry ≤ the target and a forward scan of at most about
// 4 KiB plus one batch. .timeindex holds 12-byte entries: int64 timestamp, uint32 relative
// offset, meaning "the largest timestamp up to that offset", with strictly increasing
// timestamps; one is added with each index entry (when the maximum grew) and when the
// segment is sealed. Indexes have no checksum: they are sanity-checked (whole entries,
// increasing, in range) on open and rebuilt from the log when missing or wrong. New
// entries reach the index files in runs and at the latest when the segment is sealed
// (roll, clean close); recovery trusts only the indexes of sealed segments.
//
// # Recovery checkpoint
//
// recovery-checkpoint: "KLRP", uint8 version, uint8 flags (bit 0: clean shutdown), int64
// recovery point, uint32 CRC-32C of the previous bytes; replaced atomically (temp file,
// fsync, rename, directory fsync). Every segment before the one holding the recovery
// point is durable: segments are fsynced when they roll, and the point then moves to the
// new segment. Close writes the clean flag with the next offset; the first append after
// Open clears it.
//
// Open recovers each partition: with the clean flag, the indexes are trusted and only the
// last segment's tail (from its last index entry) is checked. Otherwise the segment
// holding the recovery point and all later ones are re-read batch by batch (framing, CRC,
// dense offsets), their indexes rebuilt, and the log truncated after the last good batch
// (a torn tail); if a segment other than the last loses bytes, the segments after it are
// deleted. Offsets then continue densely from the last good record. The cost is
// proportional to the data written since the last roll.
//
// # Topic config
//
// topic-config: "KLTC", uint8 version, int64 retention (ns; 0: the Log's, negative:
// unlimited), int64 retention bytes (same), uint32 CRC-32C of the previous bytes;
// replaced atomically by CreateTopicWith. A topic without it has the Log's settings.
//
// # Offsets file
//
// consumer-offsets.dat: "KLOF", uint8 version, uint32 count, then per entry a group and a
// topic (uint16 length + bytes each), uint32 partition, int64 offset; then the CRC-32C of
// everything before. It is rewritten atomically on every commit (concurrent commits share
// a rewrite), so it is always whole.
//
// # Durability
//
// See FlushPolicy for the loss window of each policy. Whatever the policy, a process
// crash loses nothing that Append accepted (the data is in the page cache); a power cut
// loses at most what the policy allows, and recovery cuts the log at a batch boundary:
// a batch is all there or absent. With FlushBatch, readers never see a record that is not
// fsynced, so an offset handed to a consumer is never reused after a crash.
//
// # Not done
//
// No compaction (cleanup.policy=compact), compression, transactions, idempotent
// producers or replication; partition counts cannot grow; group membership is not
// persisted and has no session timeouts (the caller calls Leave).
package kafkalog
