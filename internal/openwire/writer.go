package openwire

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Writer encodes commands onto a connection. It is not safe for concurrent use; one
// goroutine writes. Each Write issues one Write call on the underlying writer (wrap it in
// a bufio.Writer to batch, and flush it).
type Writer struct {
	w     io.Writer
	f     Format
	cache *marshalCache
	enc   encoder
	out   []byte
}

// NewWriter writes commands in format f (Initial until WireFormatInfo is exchanged; then
// SetFormat with the negotiated one).
func NewWriter(w io.Writer, f Format) *Writer {
	wr := &Writer{w: w}
	wr.SetFormat(f)
	return wr
}

// SetFormat switches to format f for the frames that follow, with an empty cache.
func (w *Writer) SetFormat(f Format) {
	w.f = f
	w.cache = nil
	if f.Cache {
		w.cache = newMarshalCache(f.cacheSlots())
	}
}

// Format returns the format in use.
func (w *Writer) Format() Format { return w.f }

// Write encodes c as one frame and writes it. A frame larger than MaxFrameSize is not
// written: the error is a *FrameSizeError.
func (w *Writer) Write(c Command) error {
	frame, err := w.Encode(c)
	if err != nil {
		return err
	}
	_, err = w.w.Write(frame)
	return err
}

// Encode returns the frame for c without writing it; the slice is valid until the next
// Encode or Write.
func (w *Writer) Encode(c Command) ([]byte, error) {
	if w.cache != nil {
		w.cache.sweep()
	}
	e := &w.enc
	e.reset(&w.f, w.cache)
	c.marshal(e)
	if e.err != nil {
		return nil, e.err
	}
	out := w.out[:0]
	if !w.f.SizePrefixDisabled {
		out = append(out, 0, 0, 0, 0)
	}
	out = append(out, c.DataType())
	if w.f.TightEncoding {
		n := len(e.bits)
		if n > math.MaxInt16 {
			return nil, fmt.Errorf("openwire: %T has %d bytes of booleans, more than a frame can hold", c, n)
		}
		switch {
		case n < 64:
			out = append(out, byte(n))
		case n < 256:
			out = append(out, 0xC0, byte(n))
		default:
			out = append(out, 0x80)
			out = binary.BigEndian.AppendUint16(out, uint16(n))
		}
		out = append(out, e.bits...)
	}
	out = append(out, e.data...)
	w.out = out
	if !w.f.SizePrefixDisabled {
		size := int64(len(out) - 4)
		if w.f.MaxFrameSize > 0 && size > w.f.MaxFrameSize {
			return nil, &FrameSizeError{Size: size, Max: w.f.MaxFrameSize}
		}
		binary.BigEndian.PutUint32(out, uint32(size))
	}
	return out, nil
}
