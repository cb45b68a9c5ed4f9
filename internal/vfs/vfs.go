// Package vfs is the file-system seam of the broker's on-disk stores (the journal and the
// Kafka-style log). Store code opens, writes, syncs and renames files only through an FS,
// so tests can swap the real file system (OS) for an in-memory one (Mem) that can show
// the state a power cut would leave behind (Mem.CrashClone) and fail chosen operations
// (Mem.Inject).
//
// # Semantics every implementation follows
//
//   - Paths are ordinary OS paths; Mem cleans them with filepath.Clean.
//   - A File's Write always appends at the current end of the file (the OS implementation
//     opens writable files with O_APPEND), also after Truncate. There is no seek.
//   - File.Sync makes the file's data (and size) durable. FS.SyncDir(dir) makes the
//     directory entries of dir durable: files created, removed or renamed in dir since the
//     last SyncDir are not, until then. A store must therefore call SyncDir after creating
//     a file whose data it acknowledges, and after every rename it relies on.
//   - Errors are returned unchanged from the OS (*fs.PathError etc.), so errors.Is with
//     fs.ErrNotExist and fs.ErrExist works for both implementations.
package vfs

import (
	"io"
	"os"
)

// FS is a minimal file system.
type FS interface {
	// Create creates the named file, or truncates it if it exists, open for reading and
	// appending.
	Create(name string) (File, error)
	// Open opens an existing file for reading only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and appending.
	OpenReadWrite(name string) (File, error)
	// Remove deletes a file.
	Remove(name string) error
	// Rename renames oldname to newname, replacing newname if it exists (atomically on
	// POSIX file systems).
	Rename(oldname, newname string) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// SyncDir makes the entries of dir durable (fsync of the directory).
	SyncDir(dir string) error
	// Lock takes an exclusive, advisory lock on the named file (created if missing) so
	// that two stores cannot use one directory at once. It fails at once if another
	// holder has it. Closing the returned Closer releases it.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an FS. ReadAt may be called concurrently with itself and with
// Write; the other methods are not safe for concurrent use.
type File interface {
	io.ReaderAt
	// Write appends p at the end of the file.
	io.Writer
	// Sync makes the file's contents durable.
	Sync() error
	// Truncate changes the size of the file; the next Write appends at the new end.
	Truncate(size int64) error
	// Size returns the current size of the file.
	Size() (int64, error)
	// Close closes the file.
	Close() error
}
