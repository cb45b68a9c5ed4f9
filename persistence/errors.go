package persistence

import "errors"

var (
	// ErrUnknownAdapter is returned by Open for a name no adapter registered.
	ErrUnknownAdapter = errors.New("persistence: unknown adapter")
	// ErrClosed is returned by operations on a closed store.
	ErrClosed = errors.New("persistence: store closed")
	// ErrBatchDone is returned by Commit on a batch already committed or rolled back.
	ErrBatchDone = errors.New("persistence: batch already committed or rolled back")
	// ErrCanceled is what done receives for a batch withdrawn by CancelableBatch's cancel.
	ErrCanceled = errors.New("persistence: batch withdrawn before it was written")
	// ErrUnknownSub is returned for an operation on a durable subscription the store
	// does not hold.
	ErrUnknownSub = errors.New("persistence: unknown durable subscription")
)
