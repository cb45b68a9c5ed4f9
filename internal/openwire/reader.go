package openwire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Reader decodes commands from a connection. It is not safe for concurrent use; one
// goroutine reads.
type Reader struct {
	r     *bufio.Reader
	f     Format
	cache []DataStructure
	hdr   [4]byte
	dec   decoder // the decoder of the command being read
}

// NewReader reads commands in format f (Initial until WireFormatInfo is exchanged; then
// SetFormat with the negotiated one).
func NewReader(r io.Reader, f Format) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	rd := &Reader{r: br}
	rd.SetFormat(f)
	return rd
}

// SetFormat switches to format f for the frames that follow, with an empty cache.
func (r *Reader) SetFormat(f Format) {
	r.f = f
	r.cache = nil
	if f.Cache {
		r.cache = make([]DataStructure, f.cacheSlots())
	}
}

// SetMaxFrameSize changes only the frame size limit of the frames read after it (0: no
// limit), keeping the marshalling cache: a server reads with a small limit until the
// client has logged in, and raises it then.
func (r *Reader) SetMaxFrameSize(n int64) { r.f.MaxFrameSize = n }

// Format returns the format in use.
func (r *Reader) Format() Format { return r.f }

// Read decodes the next command. Decoded ids and destinations may be shared with earlier
// commands through the marshalling cache: treat them as immutable. Message contents are
// slices of the frame's buffer, which is never reused.
func (r *Reader) Read() (Command, error) {
	c, err := r.read()
	r.dec = decoder{} // the frame is the command's now
	return c, err
}

func (r *Reader) read() (Command, error) {
	r.dec = decoder{tight: r.f.TightEncoding, stackTrace: r.f.StackTrace, version: r.f.Version, cache: r.cache}
	d := &r.dec // the Reader's own: a decoder on the stack would escape through unmarshal
	if r.f.SizePrefixDisabled {
		d.src = r.r
		d.limit = r.f.MaxFrameSize
		if d.limit <= 0 {
			d.limit = 1<<63 - 1
		}
	} else {
		if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
			return nil, err
		}
		size := int64(int32(binary.BigEndian.Uint32(r.hdr[:])))
		if r.f.MaxFrameSize > 0 && size > r.f.MaxFrameSize {
			return nil, &FrameSizeError{Size: size, Max: r.f.MaxFrameSize}
		}
		if size < 1 {
			return nil, fmt.Errorf("%w: frame size %d", ErrMalformed, size)
		}
		// A size the peer claims is read in bounded steps, so that a frame that never
		// arrives costs no more memory than the bytes that did.
		buf, err := readFull(r.r, int(size))
		if err != nil {
			return nil, err
		}
		d.buf = buf
	}
	t := d.u8()
	if d.err != nil {
		return nil, d.err // io.EOF when the connection ended between frames
	}
	c := newDataStructure(t)
	if c == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownType, t)
	}
	if d.tight {
		d.readBits()
	}
	c.unmarshal(d)
	if d.err != nil {
		return nil, fmt.Errorf("decoding %T: %w", c, d.err)
	}
	// Bytes after the last field are ignored, as ActiveMQ does.
	return c.(Command), nil
}

// readStep bounds each allocation while a large frame is read.
const readStep = 1 << 20

func readFull(r io.Reader, n int) ([]byte, error) {
	if n <= readStep {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, unexpected(err)
		}
		return buf, nil
	}
	buf := make([]byte, 0, readStep)
	for len(buf) < n {
		step := min(n-len(buf), max(len(buf), readStep))
		buf = append(buf, make([]byte, step)...)
		if _, err := io.ReadFull(r, buf[len(buf)-step:]); err != nil {
			return nil, unexpected(err)
		}
	}
	return buf, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
