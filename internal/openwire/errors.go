package openwire

import (
	"errors"
	"fmt"
)

// Sentinel errors. The Reader returns them wrapped with what exactly was wrong; test with
// errors.Is. All of them are fatal for the connection: the Reader cannot resynchronise after
// a bad frame.
var (
	// ErrFrameTooLarge means a frame's size prefix (or, without one, the bytes a frame
	// consumed) exceeds Format.MaxFrameSize. The Reader returns it as a *FrameSizeError
	// before allocating anything for the frame.
	ErrFrameTooLarge = errors.New("openwire: frame too large")

	// ErrMalformed means the bytes do not decode as OpenWire: a length beyond the frame, a
	// negative size, invalid modified UTF-8, an unknown primitive type, a cache index out of
	// range, a nested object of the wrong type.
	ErrMalformed = errors.New("openwire: malformed frame")

	// ErrUnknownType means the frame or a nested object has a data type byte this package
	// does not decode (for example the network-bridge commands, or BlobMessage).
	ErrUnknownType = errors.New("openwire: unsupported data type")

	// ErrVersion means the peer's WireFormatInfo has a bad magic or a version below
	// MinVersion.
	ErrVersion = errors.New("openwire: unsupported wire format")
)

// FrameSizeError is returned (wrapping ErrFrameTooLarge) when a frame is larger than the
// negotiated maximum; the transport can answer it (ActiveMQ closes the connection with a
// MaxFrameSizeExceededException).
type FrameSizeError struct {
	Size int64 // the size the frame claimed (or had reached, without a size prefix)
	Max  int64 // the limit
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("openwire: frame size of %d bytes larger than max allowed %d bytes", e.Size, e.Max)
}

// Unwrap makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameSizeError) Unwrap() error { return ErrFrameTooLarge }
