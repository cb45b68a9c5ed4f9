package journal

import "errors"

var (
	// ErrCorrupt marks data on disk that fails its checksum or cannot be decoded: a record
	// of a segment, a stored message, a checkpoint.
	ErrCorrupt = errors.New("journal: corrupt record")
	// ErrFailed is returned by every write (and by Close) after an I/O error on the write
	// path: the store does not know what reached the disk, so it refuses to write more.
	// Reopening the store recovers what is on disk. The error also wraps the I/O error
	// that caused it.
	ErrFailed = errors.New("journal: store failed after an I/O error; reopen to recover")
	// ErrInvalid is returned by Commit for a batch holding an operation the store cannot
	// apply: an Add without Dest, with Seq 0 or a Seq above math.MaxInt64, an AddSub whose
	// Dest is not a topic. Nothing of such a batch is applied.
	ErrInvalid = errors.New("journal: invalid operation")
	// ErrTooLarge is returned by Commit for a batch whose record would exceed the largest
	// record the format allows (MaxRecordSize).
	ErrTooLarge = errors.New("journal: batch too large")
	// ErrOption wraps (inside a *setting.Error) every invalid option of the kahaDB block.
	ErrOption = errors.New("journal: invalid option")
	// ErrLocked is returned by Open when another store has the directory open.
	ErrLocked = errors.New("journal: directory in use by another store")
)
