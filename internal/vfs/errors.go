package vfs

import "errors"

var (
	// ErrLocked is returned, wrapped in an *fs.PathError, by Lock when another holder has
	// the lock.
	ErrLocked = errors.New("vfs: file is locked by another holder")
	// ErrInjected is a convenient error for Mem.Inject hooks to return; Mem itself never
	// fails an operation on its own with it.
	ErrInjected = errors.New("vfs: injected error")
	// ErrClosedFile is returned by operations on a Mem file that was closed.
	ErrClosedFile = errors.New("vfs: file already closed")
	// ErrReadOnly is returned by Write and Truncate on a Mem file opened with Open.
	ErrReadOnly = errors.New("vfs: file opened read-only")
)
