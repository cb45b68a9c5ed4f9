package stompcodec

import "errors"

// Sentinel errors. The Reader returns them wrapped in a *FrameError whose message says what
// exactly was wrong; test with errors.Is. All of them are fatal for the connection: the
// Reader cannot resynchronise after a bad frame.
var (
	// ErrFrameTooLarge means the command line, header lines and body together exceed
	// Limits.MaxFrameSize, or content-length claims a body that would.
	ErrFrameTooLarge = errors.New("stomp: frame too large")

	// ErrTooManyHeaders means a frame has more than Limits.MaxHeaders header lines.
	ErrTooManyHeaders = errors.New("stomp: too many headers")

	// ErrHeaderTooLong means one header line exceeds Limits.MaxHeaderLine bytes.
	ErrHeaderTooLong = errors.New("stomp: header line too long")

	// ErrCommandTooLong means the command line exceeds Limits.MaxCommandLine bytes.
	ErrCommandTooLong = errors.New("stomp: command line too long")

	// ErrMalformedHeader means a header line has no ':' or an empty name.
	ErrMalformedHeader = errors.New("stomp: malformed header")

	// ErrBadContentLength means content-length is negative, not a decimal integer, or too
	// large to represent.
	ErrBadContentLength = errors.New("stomp: invalid content-length")

	// ErrMissingNull means the byte after a content-length body is not the NUL that ends
	// the frame.
	ErrMissingNull = errors.New("stomp: missing NUL after frame body")

	// ErrUndefinedEscape means a header contains a backslash escape that the negotiated
	// version does not define (for example \t, or \r in 1.1). The spec makes this fatal.
	ErrUndefinedEscape = errors.New("stomp: undefined escape sequence")

	// ErrNoCommonVersion means the client's accept-version list shares no version with
	// Supported.
	ErrNoCommonVersion = errors.New("stomp: no common protocol version")
)

// FrameError is a protocol error with the detail a client needs to fix its frame. Its Error
// text is meant for the message header of the ERROR frame sent before closing the connection.
type FrameError struct {
	Err    error  // one of the sentinels above
	Detail string // what exactly was wrong, e.g. "content-length 10 exceeds maxFrameSize 5"
}

// Error returns the sentinel's message followed by the detail.
func (e *FrameError) Error() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Detail
}

// Unwrap returns the sentinel.
func (e *FrameError) Unwrap() error { return e.Err }

func frameErr(sentinel error, detail string) *FrameError {
	return &FrameError{Err: sentinel, Detail: detail}
}
