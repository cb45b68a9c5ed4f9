package stompcodec

import (
	"bufio"
	"io"
	"strconv"

	"github.com/go-stomp/stomp/v3/frame"
)

const defaultWriteBufferSize = 32 << 10

// Writer encodes frames into a buffer that reaches the underlying writer only when it fills
// up or Flush is called, so a connection can send many frames in one write. It is not safe
// for concurrent use; a connection has one writing goroutine.
//
// Frames are written either whole with WriteFrame, or streamed with StartFrame, Header and
// EndFrame, which produce identical bytes without building a frame.Frame. The Writer does
// not check the order of those calls, nor the frame it is given: the command must not
// contain an EOL, and a body containing NUL needs a content-length header, which the caller
// adds.
//
// Write errors come from the underlying writer and are sticky, as with bufio.Writer.
type Writer struct {
	bw    *bufio.Writer
	lvl   level
	mode  encMode // escaping of the frame being written
	noEOL bool    // end frames at their NUL, without the LF after it
}

// NewWriter returns a Writer with a buffer of bufSize bytes (32 KiB if bufSize <= 0) that
// encodes with 1.0 rules until SetVersion.
func NewWriter(w io.Writer, bufSize int) *Writer {
	if bufSize <= 0 {
		bufSize = defaultWriteBufferSize
	}
	return &Writer{bw: bufio.NewWriterSize(w, bufSize)}
}

// SetVersion sets the header encoding rules for the frames written after it. v is V10, V11
// or V12; other values are ignored. CONNECT, STOMP and CONNECTED frames are never escaped,
// so it does not matter whether the session calls this before or after writing CONNECTED.
func (w *Writer) SetVersion(v string) {
	if l, ok := parseLevel(v); ok {
		w.lvl = l
	}
}

// Version returns the version whose encoding rules apply to the next frame.
func (w *Writer) Version() string { return w.lvl.String() }

// SetFrameEOL sets whether an LF follows the NUL that ends each frame. It does by
// default, as ActiveMQ writes frames on a stream: every STOMP version allows EOLs after
// the NUL, and some clients (PHP's PECL stomp) take the byte after the NUL for that EOL,
// so without it they swallow the first byte of the next frame. ActiveMQ sends the frames
// of a WebSocket connection one per message, ending at the NUL: such a connection turns
// the LF off.
func (w *Writer) SetFrameEOL(on bool) { w.noEOL = !on }

// WriteFrame encodes f into the buffer without flushing. Headers are written in order,
// escaped for the current version unless f is a CONNECT, STOMP or CONNECTED frame.
// content-length is written only if f.Header has it.
func (w *Writer) WriteFrame(f *frame.Frame) error {
	if err := w.StartFrame(f.Command); err != nil {
		return err
	}
	if f.Header != nil {
		for i := range f.Header.Len() {
			k, v := f.Header.GetAt(i)
			if err := w.Header(k, v); err != nil {
				return err
			}
		}
	}
	return w.EndFrame(f.Body)
}

// StartFrame begins a frame by writing its command line. Header calls and one EndFrame
// complete it.
func (w *Writer) StartFrame(command string) error {
	switch {
	case rawCommand(command):
		w.mode = encRaw
	case w.lvl == level12:
		w.mode = enc12
	case w.lvl == level11:
		w.mode = enc11
	default:
		w.mode = encRaw
	}
	if _, err := w.bw.WriteString(command); err != nil {
		return err
	}
	return w.bw.WriteByte('\n')
}

// Header writes one header line of the frame begun by StartFrame, escaping name and value
// for the frame. It does not allocate.
func (w *Writer) Header(key, value string) error {
	// The common case, a line with nothing to escape that fits in the buffer, is
	// assembled in place.
	if n := len(key) + len(value) + 2; n <= w.bw.Available() &&
		!needsEscape(key, w.mode, false) && !needsEscape(value, w.mode, true) {
		b := w.bw.AvailableBuffer()
		b = append(b, key...)
		b = append(b, ':')
		b = append(b, value...)
		b = append(b, '\n')
		_, err := w.bw.Write(b)
		return err
	}
	if err := writeEscaped(w.bw, key, w.mode, false); err != nil {
		return err
	}
	if err := w.bw.WriteByte(':'); err != nil {
		return err
	}
	if err := writeEscaped(w.bw, value, w.mode, true); err != nil {
		return err
	}
	return w.bw.WriteByte('\n')
}

// HeaderInt writes a header whose value is v in decimal, as Header(key,
// strconv.FormatInt(v, 10)) does, without allocating.
func (w *Writer) HeaderInt(key string, v int64) error {
	if err := writeEscaped(w.bw, key, w.mode, false); err != nil {
		return err
	}
	if err := w.bw.WriteByte(':'); err != nil {
		return err
	}
	// Digits and '-' need no escaping in any version.
	if w.bw.Available() >= maxInt64Digits {
		if _, err := w.bw.Write(strconv.AppendInt(w.bw.AvailableBuffer(), v, 10)); err != nil {
			return err
		}
	} else if _, err := w.bw.WriteString(strconv.FormatInt(v, 10)); err != nil {
		return err
	}
	return w.bw.WriteByte('\n')
}

// maxInt64Digits is the longest decimal int64: a sign and 19 digits.
const maxInt64Digits = 20

// EndFrame ends the headers with a blank line and writes body, the closing NUL and,
// unless SetFrameEOL turned it off, an LF.
func (w *Writer) EndFrame(body []byte) error {
	if err := w.bw.WriteByte('\n'); err != nil {
		return err
	}
	if _, err := w.bw.Write(body); err != nil {
		return err
	}
	if err := w.bw.WriteByte(0); err != nil {
		return err
	}
	if w.noEOL {
		return nil
	}
	return w.bw.WriteByte('\n')
}

// WriteHeartBeat writes a heart-beat: a single LF, between frames.
func (w *Writer) WriteHeartBeat() error {
	return w.bw.WriteByte('\n')
}

// Flush writes the buffered frames to the underlying writer.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Buffered returns the number of bytes written into the buffer and not yet flushed.
func (w *Writer) Buffered() int { return w.bw.Buffered() }
