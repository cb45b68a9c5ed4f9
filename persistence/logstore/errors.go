package logstore

import "errors"

var (
	// ErrCorrupt marks stored data that cannot be decoded although the log's checksum
	// passed (a record of an unknown format version, a damaged checkpoint file), or a log
	// that does not reach the checkpoint's low-water mark.
	ErrCorrupt = errors.New("logstore: corrupt data")
	// ErrFailed is returned by every write (and by Close) after an I/O error on the write
	// path: the store does not know what reached the disk, so it refuses to write more.
	// Reopening the store recovers what is on disk. The error also wraps the I/O error.
	ErrFailed = errors.New("logstore: store failed after an I/O error; reopen to recover")
	// ErrInvalid is returned by Commit for a batch holding an operation the store cannot
	// apply: an Add without Dest, with Seq 0 or a Seq above math.MaxInt64, an AddSub whose
	// Dest is not a topic. Nothing of such a batch is applied.
	ErrInvalid = errors.New("logstore: invalid operation")
	// ErrTooLarge is returned by Commit for a batch whose record exceeds MaxRecordBytes.
	ErrTooLarge = errors.New("logstore: batch too large")
	// ErrOption wraps (inside a *setting.Error) every invalid option of the kafkaLog block,
	// and is returned by Open for out-of-range Options.
	ErrOption = errors.New("logstore: invalid option")
	// ErrLocked is returned by Open when another store has the directory open.
	ErrLocked = errors.New("logstore: directory in use by another store")
)
