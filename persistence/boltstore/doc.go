// Package boltstore is the "bbolt" persistence adapter: the Store contract of package
// persistence kept in one bbolt (go.etcd.io/bbolt) B+tree file.
//
//	persistenceAdapter:
//	  bbolt:
//	    path: ./data/broker.db     # default <dataDirectory>/broker.db
//	    syncStrategy: always       # always | never
//	    initialMmapSize: 1gb       # 0 = none
//	    freelistType: map          # map | array
//	    freelistSync: false
//	    lockTimeout: 10s
//	    asyncCommitDelay: 5ms      # Async commits wait this long for a Sync one to share its transaction (default: none)
//
// A relative path is relative to the working directory, as dataDirectory is. Unknown
// keys and bad values are an *OptionError naming the key, the value and what is allowed.
//
// # File layout, format version 1
//
// All integers are big-endian; sequence numbers and subscription ids are 8-byte keys,
// so bbolt's byte order is numeric order and a cursor walks them in order.
//
//	meta                          format -> uint32 (1); lastsubid -> uint64
//	destmeta/<dest>               -> lastSeq, msgs, bytes (3 x uint64)
//	dests/<dest>/<seq>            -> message record
//	owners/<topic>/<seq>          -> ids of the subscriptions owing an ack (n x uint64)
//	subs/<subkey>                 -> subscription record
//	subids/<id>                   -> subkey
//	pending/<id>/<seq>            -> empty
//
// <dest> is the qualified name ("queue://A", "topic://B") as bytes; dests, owners and
// pending hold one nested bucket per destination or subscription. <subkey> is uvarint
// len(ClientID), ClientID, Name, so fields are compared separately.
//
// destmeta/<dest> exists once an Add was committed to dest and is never deleted, so
// LastSeq survives acks and Purge, and sequence numbers are never handed out twice. Its
// counters are the store's Stats, written in the same transaction as the change they
// count; at open they are read into memory, and Stats never touches the file.
//
// A message record is: version byte (1), flags (bit 0 Persistent), priority,
// RedeliveryCount uint32, Expires int64, Timestamp int64, body length uint32 (at a fixed
// offset, so Ack learns the size it subtracts without decoding), uvarint len(ID) and ID,
// uvarint number of header strings and each as uvarint length and bytes, then the body.
// Dest, Seq and Subs are not in the record. A message with a typed part (its JMS body
// kind and typed properties) has a version 2 record: version 1 with, after the body
// length, a uvarint length and the typed part (persistence.AppendTyped's encoding,
// version 1). A message without one is written as version 1, byte for byte as before,
// and both are read; a build that does not know version 2 refuses such a record
// (ErrCorrupt) rather than dropping the typed part. A subscription record is: version byte (1),
// id uint64, Created int64, uvarint-prefixed Dest and Selector.
//
// A topic message is stored once. Its owners record lists the internal ids of the
// subscriptions that still owe an acknowledgement, and each of them has the seq in its
// pending bucket; the two always agree, and a topic message without owners is deleted.
// So AckSub is three key lookups, ScanSub walks only the subscription's own pending
// bucket, and RemoveSub costs what the subscription holds. Ids are never reused (the
// counter is meta/lastsubid); a subscription moved to another topic gets a new one.
// Purge drops the destination's buckets whole and, for a topic, walks the subs bucket
// to drop its subscriptions' pending buckets.
//
// A file without a meta bucket is initialised if it holds no bucket at all and
// refused (ErrFormat) otherwise, as is a newer format version.
//
// # Writes: group commit
//
// Batch operations are recorded in memory; Add encodes the message right away (the copy
// the contract asks for, done on the producer's goroutine). Commit queues the batch for
// the store's single writer goroutine, which takes everything queued (up to 4096
// batches or 16 MiB) and applies it in ONE bbolt Update, that is one commit with its
// syncs, however many producers' batches share it. It then wakes the waiting Commits
// and hands the CommitAsync callbacks to a completer goroutine that runs them one at a
// time in commit order; a callback may therefore commit on the store itself. While the
// writer is inside an Update the next group accumulates, so batching adds no latency
// when the store is idle and grows with the load.
//
// Async returns at the same point as Sync. A committed batch must be visible to Scan
// and Stats, and a bbolt transaction becomes visible only by committing, which is also
// what syncs it: there is no cheaper point to return at that is still safe. Producers
// that should not wait use CommitAsync and pipeline instead. (syncStrategy never makes
// every commit cheap, and unsafe; see below.) What Async can buy is company: with
// asyncCommitDelay set, while only Async batches are queued (acknowledgements nobody
// waits for, dispatch marks) the writer waits up to that long from the first for a Sync
// batch and takes them all into that one's transaction, so they ride its syncs instead
// of costing a commit of their own; with none coming they are committed when the delay
// is up. Off by default: see Options.AsyncCommitDelay for when it pays.
//
// A Commit whose ctx ends while its batch is still queued withdraws it and returns
// ctx.Err(); once the writer has taken the batch Commit waits for the outcome.
//
// Failures. A batch whose operations fail to apply (a corrupt record they touch, a
// bbolt error on a Put) fails alone: bbolt rolls the Update back and the writer retries
// the rest of the group without it. (Invalid operations never get that far: they fail
// their batch with ErrInvalid before it reaches a transaction.) A failed commit fails
// every batch of its group. bbolt rolls its memory back cleanly, and whether later
// writes may proceed depends on how far the commit got: if the new meta page never
// took effect (a failed page write, a full disk while growing the file), the pages
// written belong to no committed tree and the store goes on. If the meta page was
// written and only its fdatasync failed, bbolt already serves the new state from the
// mapped file while nobody knows whether it is on disk (after a failed fsync Linux may
// have dropped the dirty pages and cleared the error). The writer tells the two apart
// by the transaction id a new read transaction sees; in the second case it refuses every
// further write with ErrFailed until the store is reopened, which reads what really is
// on disk.
//
// # Reads
//
// Scan and ScanSub read pages of at most 256 messages (or 4 MiB of bodies) per read
// transaction, from a cursor Seek to afterSeq+1, copy them out and close the
// transaction before calling fn. A slow fn thus never pins bbolt's freelist (which
// would make the file grow) or holds up a remap, and fn may call the store. A scan is
// not one snapshot: commits between pages show in later pages. The Message handed to fn
// and its Body are reused for the next page; strings are not.
//
// # bbolt options and why
//
//   - NoSync only for syncStrategy never. bbolt's commit writes the dirty pages,
//     fdatasyncs, writes the meta page and fdatasyncs again; that is its crash
//     consistency. With NoSync the meta page may reach the disk before the pages it
//     points to, so a power cut or kernel crash can corrupt the file, not just lose the
//     last commits. That is why there is no "periodic" strategy: a periodic fsync would
//     not make the unsynced commits in between any safer. never is for tests and
//     throwaway data; Close still syncs.
//   - FreelistType map. A queue frees pages at the head as fast as it fills them at the
//     tail; a drained backlog leaves a large, fragmented freelist, where the array
//     freelist's allocation is a linear scan and the hashmap one is not.
//   - NoFreelistSync (freelistSync: false). Otherwise every commit writes the whole
//     freelist, which after a drained backlog is megabytes per commit. The price: Open
//     rebuilds the freelist by walking the live pages, which for a broker (mostly
//     consumed queues) is small, and so does a rolled back Update (bbolt's rule), which
//     the adapter only causes when a batch fails to apply.
//   - InitialMmapSize 1 GiB on 64-bit non-Windows systems. That is address space, not
//     disk; the file still grows with its data. bbolt remaps as the file outgrows the
//     mapping and a remap waits for every open read transaction, so a large initial
//     mapping keeps scans and commits apart. On Windows bbolt would grow the file to the
//     mapping's size and 32-bit processes lack the address space: there, none.
//   - NoGrowSync false (bbolt's default). With the mapping larger than 16 MiB bbolt
//     grows the file in 16 MiB steps, each a truncate plus an fsync, so the new size is
//     durable before a meta page refers to pages beyond the old end. Once per 16 MiB of
//     growth, it costs nothing measurable.
//   - FillPercent 0.9 on the buckets keyed by seq (dests, owners, pending): keys arrive
//     at the tail, so pages split there stay 90% full instead of half. Sequence numbers
//     that arrive a little out of order cost a split, not correctness.
//   - Timeout (lockTimeout, 10 s): bbolt holds an exclusive flock on the file; a second
//     broker on the same file gets ErrLocked instead of waiting forever.
//   - Default page size, no Mlock, no MaxSize, bbolt's logger off (the adapter logs
//     with log/slog).
//
// # Costs
//
// n = messages of the destination, k = messages visited, s = subscriptions: Add and
// Ack O(log n); AckSub O(log n); Scan and ScanSub O(log n + k); RemoveSub O((messages
// it holds) log n); Purge O(pages of the destination + s); Stats O(1); Recover
// O(destinations + s). Open reads the counters and, with NoFreelistSync, walks the live
// pages.
//
// # What the broker must know
//
//   - The file never shrinks: space freed by acks is reused, but to give it back to the
//     file system stop the broker and run `bbolt compact` (or copy the store into a new
//     file).
//   - Only one process may open the file (flock); a second one fails after lockTimeout.
//   - After ErrFailed, stop accepting persistent messages and restart (or reopen) the
//     store.
//   - CommitAsync callbacks run on the store's completer goroutine, one at a time, in
//     commit order; they may commit (also synchronously) on the store, but a slow one
//     delays the callbacks after it.
//   - Long-running fn callbacks of Scan do not hurt the store; holding a message past fn
//     without Clone does (its Body is reused).
package boltstore
