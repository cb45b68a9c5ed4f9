package destinations

import (
	"errors"
	"fmt"
)

// Error is what a client is told about a request that failed. Message is the text for
// the protocol's error (STOMP's ERROR frame message header); Fatal says the connection
// must close after it, as ActiveMQ closes it for protocol-breaking problems but keeps
// it for recoverable ones.
type Error struct {
	Message string
	Fatal   bool
	Err     error // the sentinel or cause, for errors.Is
	// Retry, when set, is closed once the request may succeed: a SEND held by producer
	// flow control. The transport may send it again then instead of reporting the error.
	Retry <-chan struct{}
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

func errorf(sentinel error, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), Err: sentinel}
}

var (
	// ErrClosed is returned once the broker or the connection is shut down.
	ErrClosed = errors.New("broker: closed")
	// ErrStore: the store (or the stream log) failed to make a message or
	// acknowledgement durable.
	ErrStore = errors.New("broker: store write failed")
	// ErrInvalidDestination: the destination cannot be used for this operation.
	ErrInvalidDestination = errors.New("broker: invalid destination")
	// ErrInvalidStreamOffset: a stream subscription's start is none of the accepted
	// forms.
	ErrInvalidStreamOffset = errors.New("broker: invalid x-stream-offset")
	// ErrMemoryFull: a non-persistent message would pass a memory limit.
	ErrMemoryFull = errors.New("broker: memory limit reached")
	// ErrRemoved is what a destination the broker's collector removed answers: the
	// caller looks the name up again.
	ErrRemoved = errors.New("broker: destination removed")
	// ErrStreamBusy: a stream partition's append queue is full; the SEND is held.
	ErrStreamBusy = errors.New("broker: stream append queue full")
	// ErrInUse: an operator's request would take a destination from under its
	// consumers.
	ErrInUse = errors.New("broker: destination in use")
	// ErrNoCursor: a browse page starts after a message that is no longer waiting on
	// the queue (consumed, deleted or moved since the previous page).
	ErrNoCursor = errors.New("broker: browse cursor is no longer on the queue")
)

// StoreError is what a client is told when the store failed to write: err says why.
func StoreError(err error) *Error {
	return &Error{Message: "message not stored: " + err.Error(), Err: ErrStore}
}

// closingError is what a request gets while the broker shuts down.
func closingError() *Error {
	return &Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
}
