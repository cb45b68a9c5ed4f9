package boltstore

import (
	"errors"
	"strconv"
	"strings"
)

var (
	// ErrInvalid is returned by Commit for a batch holding an operation the store cannot
	// apply: an Add without Dest or with Seq 0, an AddSub whose Dest is not a topic, a
	// destination name or subscription key longer than bbolt's key limit (32 KiB), a
	// message whose record exceeds bbolt's value limit (2 GiB). Nothing of such a batch
	// is applied.
	ErrInvalid = errors.New("boltstore: invalid operation")
	// ErrCorrupt marks data in the file that cannot be decoded.
	ErrCorrupt = errors.New("boltstore: corrupt data")
	// ErrFormat is returned by Open for a file that is not a boltstore database or was
	// written in a newer format version.
	ErrFormat = errors.New("boltstore: unsupported file")
	// ErrFailed is returned by every Commit after a bbolt commit failed in a way that
	// left the file's state unknown (the new meta page may or may not be on disk; see the
	// package comment). The error also wraps the I/O error that caused it. Reopening the
	// store recovers what is on disk.
	ErrFailed = errors.New("boltstore: store failed after an I/O error; reopen to recover")
	// ErrLocked is returned by Open when another process holds the database file and
	// does not release it within the lock timeout.
	ErrLocked = errors.New("boltstore: database file in use by another process")
	// ErrOption is wrapped by every *OptionError.
	ErrOption = errors.New("boltstore: invalid option")
)

// keyPath is the configuration path of the adapter's block, for error messages.
const keyPath = "persistenceAdapter.bbolt"

// OptionError is the error ParseOptions returns for an unknown key or a bad value of
// the bbolt block. It wraps ErrOption.
type OptionError struct {
	Key     string // the path of the key as written: "persistenceAdapter.bbolt.syncStrategy"
	Value   string // the offending value, empty for an unknown key
	Problem string // what is wrong
	Allowed string // what would have been accepted
}

// Error formats the error as
//
//	boltstore: <key>: <problem> (value "<value>"; allowed: <allowed>)
func (e *OptionError) Error() string {
	var b strings.Builder
	b.WriteString("boltstore: ")
	b.WriteString(e.Key)
	b.WriteString(": ")
	b.WriteString(e.Problem)
	var extra []string
	if e.Value != "" {
		extra = append(extra, "value "+strconv.Quote(e.Value))
	}
	if e.Allowed != "" {
		extra = append(extra, "allowed: "+e.Allowed)
	}
	if len(extra) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(extra, "; "))
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns ErrOption.
func (e *OptionError) Unwrap() error { return ErrOption }
