package stompcodec

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"

	"github.com/go-stomp/stomp/v3/frame"
)

const (
	defaultMaxCommandLine = 1024
	defaultMaxHeaderLine  = 10240
	defaultMaxHeaders     = 1000
	defaultMaxFrameSize   = 10 << 20

	// readBufferSize is the size of the Reader's bufio.Reader. It bounds what ReadSlice holds
	// at once, and so the memory an over-long line can make the Reader use.
	readBufferSize = 16 << 10

	// sharedBlockMax is the largest decoded header block whose values share one string. A
	// value kept after the frame is gone keeps its whole block alive, so big blocks get one
	// string per value instead.
	sharedBlockMax = 4 << 10

	// keepScratchMax is the largest scratch buffer kept between frames; one frame with huge
	// headers must not pin its buffers for the life of the connection.
	keepScratchMax = 64 << 10
)

// Limits bounds what a Reader accepts. A zero or negative field means the default.
type Limits struct {
	MaxCommandLine int   // bytes of the command line without its EOL; default 1024
	MaxHeaderLine  int   // bytes of one header line without its EOL; default 10240
	MaxHeaders     int   // header lines per frame; default 1000
	MaxFrameSize   int64 // command and header lines with their EOLs, plus body; default 10 MiB
}

// DefaultLimits returns the limits used for zero fields: ActiveMQ's parser limits, except
// that the frame size is capped at 10 MiB.
func DefaultLimits() Limits {
	return Limits{
		MaxCommandLine: defaultMaxCommandLine,
		MaxHeaderLine:  defaultMaxHeaderLine,
		MaxHeaders:     defaultMaxHeaders,
		MaxFrameSize:   defaultMaxFrameSize,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxCommandLine <= 0 {
		l.MaxCommandLine = d.MaxCommandLine
	}
	if l.MaxHeaderLine <= 0 {
		l.MaxHeaderLine = d.MaxHeaderLine
	}
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = d.MaxHeaders
	}
	if l.MaxFrameSize <= 0 {
		l.MaxFrameSize = d.MaxFrameSize
	}
	return l
}

// Reader decodes frames from a byte stream. It is not safe for concurrent use; a connection
// has one reading goroutine.
type Reader struct {
	br  *bufio.Reader
	lim Limits
	lvl level
	err error // sticky: after any error the stream position is unknown
	// sizeName is the setting errors name for lim.MaxFrameSize.
	sizeName string

	// Scratch space reused from frame to frame.
	line    []byte   // a line longer than the read buffer, assembled
	hdr     []byte   // decoded header names and values of the current frame
	spans   []span   // where each header of the current frame is in hdr
	entries []string // name, value, name, value... for frame.NewHeader
}

// span locates one decoded header in Reader.hdr.
type span struct {
	name             string // interned name; "" if the name is hdr[nameOff:nameEnd]
	nameOff, nameEnd int
	valOff, valEnd   int
}

// NewReader returns a Reader that decodes frames from r within lim, using 1.0 rules until
// SetVersion or a CONNECT frame says otherwise.
func NewReader(r io.Reader, lim Limits) *Reader {
	return newReaderSize(r, lim, readBufferSize)
}

// newReaderSize lets tests use a read buffer smaller than a line limit.
func newReaderSize(r io.Reader, lim Limits, size int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, size), lim: lim.withDefaults(), sizeName: "maxFrameSize"}
}

// SetMaxFrameSize sets the frame size limit of the frames read after it (n <= 0: the
// default), and the setting its errors name (maxFrameSize when ""): a server reads
// with a small limit until the client has logged in, and raises it then.
func (r *Reader) SetMaxFrameSize(n int64, name string) {
	r.lim.MaxFrameSize = Limits{MaxFrameSize: n}.withDefaults().MaxFrameSize
	r.sizeName = cmp.Or(name, "maxFrameSize")
}

// SetVersion sets the header decoding rules for the frames read after it. v is V10, V11 or
// V12; other values are ignored. The session normally does not need to call it: after Read
// returns a CONNECT or STOMP frame, the Reader switches to NegotiateVersion(accept-version)
// by itself, and stays where it was if negotiation fails.
func (r *Reader) SetVersion(v string) {
	if l, ok := parseLevel(v); ok {
		r.lvl = l
	}
}

// Version returns the version whose decoding rules apply to the next frame.
func (r *Reader) Version() string { return r.lvl.String() }

// Read returns the next frame.
//
// A heart-beat (a bare EOL where a frame could start) returns (nil, nil); the caller should
// count it as liveness and read again. Each call consumes at most one such EOL.
//
// Errors: io.EOF when the stream ends cleanly between frames, io.ErrUnexpectedEOF when it
// ends inside a frame, a *FrameError wrapping one of the package's sentinels for a protocol
// violation, and the underlying reader's error unchanged otherwise (a read deadline, say).
// Every error is final: later calls return it again.
//
// The returned frame is the caller's. Its Body is nil when empty. When the decoded headers
// take at most 4 KiB, all its header strings share one allocation, so a single value kept for
// a long time keeps at most 4 KiB alive; strings.Clone it if that matters.
func (r *Reader) Read() (*frame.Frame, error) {
	if r.err != nil {
		return nil, r.err
	}
	f, err := r.read()
	r.releaseScratch()
	if err != nil {
		r.err = err
		return nil, err
	}
	if f != nil && (f.Command == frame.CONNECT || f.Command == frame.STOMP) {
		if v, err := NegotiateVersion(f.Header.Get(frame.AcceptVersion)); err == nil {
			r.lvl, _ = parseLevel(v)
		}
	}
	return f, nil
}

func (r *Reader) read() (*frame.Frame, error) {
	line, n, err := r.readLine(r.lim.MaxCommandLine, ErrCommandTooLong, "command line", "maxCommandLine")
	if err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		return nil, unexpected(err)
	}
	if len(line) == 0 {
		return nil, nil // heart-beat
	}
	command := internCommand(line)
	size := int64(n)

	// Headers of CONNECT, STOMP and CONNECTED are never escaped (spec), and so are read raw.
	unesc := r.lvl >= level11 && !rawCommand(command)
	r.hdr, r.spans = r.hdr[:0], r.spans[:0]
	contentLength := int64(-1)
	for {
		line, n, err = r.readLine(r.lim.MaxHeaderLine, ErrHeaderTooLong, "header line", "maxHeaderLine")
		if err != nil {
			return nil, unexpected(err)
		}
		size += int64(n)
		if size > r.lim.MaxFrameSize {
			return nil, frameErr(ErrFrameTooLarge, fmt.Sprintf(
				"command and headers exceed %s %d", r.sizeName, r.lim.MaxFrameSize))
		}
		if len(line) == 0 {
			break
		}
		if len(r.spans) >= r.lim.MaxHeaders {
			return nil, frameErr(ErrTooManyHeaders, fmt.Sprintf(
				"more than maxHeaders %d header lines", r.lim.MaxHeaders))
		}
		sp, err := r.parseHeader(line, unesc)
		if err != nil {
			return nil, err
		}
		if sp.name == frame.ContentLength && contentLength < 0 {
			if contentLength, err = parseContentLength(r.hdr[sp.valOff:sp.valEnd]); err != nil {
				return nil, err
			}
		}
	}

	var body []byte
	if contentLength >= 0 {
		body, err = r.readBody(contentLength, size)
	} else {
		body, err = r.readToNull(size)
	}
	if err != nil {
		return nil, err
	}
	return &frame.Frame{Command: command, Header: r.header(), Body: body}, nil
}

// readLine returns the next line without its EOL (LF or CRLF), and the number of bytes it
// took on the wire. The line is valid until the next read. A line longer than max bytes
// returns a *FrameError wrapping tooLong after holding at most max+1 bytes plus one read
// buffer. At the end of the stream it returns io.EOF and the number of bytes of the partial
// line.
func (r *Reader) readLine(max int, tooLong error, what, limit string) ([]byte, int, error) {
	chunk, err := r.br.ReadSlice('\n')
	if err == nil {
		return checkLine(chunk, max, tooLong, what, limit)
	}
	if err != bufio.ErrBufferFull {
		return nil, len(chunk), err
	}
	r.line = append(r.line[:0], chunk...)
	for {
		if len(r.line) > max+1 { // +1: the line may end in the CR of a CRLF
			return nil, len(r.line), lineTooLong(r.line, tooLong, what, limit, max)
		}
		chunk, err = r.br.ReadSlice('\n')
		r.line = append(r.line, chunk...)
		if err == nil {
			return checkLine(r.line, max, tooLong, what, limit)
		}
		if err != bufio.ErrBufferFull {
			return nil, len(r.line), err
		}
	}
}

// checkLine strips the EOL from a line that ends in LF and checks its length.
func checkLine(b []byte, max int, tooLong error, what, limit string) ([]byte, int, error) {
	n := len(b)
	b = b[:n-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	if len(b) > max {
		return nil, n, lineTooLong(b, tooLong, what, limit, max)
	}
	return b, n, nil
}

func lineTooLong(b []byte, tooLong error, what, limit string, max int) error {
	return frameErr(tooLong, fmt.Sprintf("%s %s exceeds %s %d bytes", what, quote(b), limit, max))
}

// parseHeader decodes one header line into r.hdr and records where it went.
func (r *Reader) parseHeader(line []byte, unesc bool) (span, error) {
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return span{}, frameErr(ErrMalformedHeader, fmt.Sprintf("header line %s has no ':'", quote(line)))
	}
	name, value := line[:colon], line[colon+1:]
	if r.lvl == level10 {
		name, value = trim10(name), trim10(value)
	}
	if len(name) == 0 {
		return span{}, frameErr(ErrMalformedHeader, fmt.Sprintf("header line %s has an empty name", quote(line)))
	}

	var sp span
	var err error
	off := len(r.hdr)
	if r.hdr, err = r.decode(r.hdr, name, unesc, line); err != nil {
		return span{}, err
	}
	if s, ok := internHeader(r.hdr[off:]); ok {
		sp.name = s
		r.hdr = r.hdr[:off]
	} else {
		sp.nameOff, sp.nameEnd = off, len(r.hdr)
	}
	sp.valOff = len(r.hdr)
	if r.hdr, err = r.decode(r.hdr, value, unesc, line); err != nil {
		return span{}, err
	}
	sp.valEnd = len(r.hdr)
	r.spans = append(r.spans, sp)
	return sp, nil
}

func (r *Reader) decode(dst, src []byte, unesc bool, line []byte) ([]byte, error) {
	if !unesc {
		return append(dst, src...), nil
	}
	return unescape(dst, src, r.lvl, line)
}

// parseContentLength accepts only plain decimal digits: no sign, no spaces, no overflow.
func parseContentLength(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, frameErr(ErrBadContentLength, "content-length is empty")
	}
	const maxInt64 = 1<<63 - 1
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, frameErr(ErrBadContentLength, fmt.Sprintf(
				"content-length %s is not a non-negative decimal integer", quote(b)))
		}
		d := int64(c - '0')
		if n > (maxInt64-d)/10 {
			return 0, frameErr(ErrBadContentLength, fmt.Sprintf("content-length %s overflows", quote(b)))
		}
		n = n*10 + d
	}
	return n, nil
}

// readBody reads a body of exactly n bytes and the NUL after it. size is what the command
// and headers took; the limit is checked before anything is allocated.
func (r *Reader) readBody(n, size int64) ([]byte, error) {
	if max := r.lim.MaxFrameSize; n > max-size {
		if n > max {
			return nil, frameErr(ErrFrameTooLarge, fmt.Sprintf(
				"content-length %d exceeds %s %d", n, r.sizeName, max))
		}
		return nil, frameErr(ErrFrameTooLarge, fmt.Sprintf(
			"content-length %d plus %d bytes of command and headers exceeds %s %d", n, size, r.sizeName, max))
	}
	var body []byte
	if n > 0 {
		body = make([]byte, n)
		if _, err := io.ReadFull(r.br, body); err != nil {
			return nil, unexpected(err)
		}
	}
	c, err := r.br.ReadByte()
	if err != nil {
		return nil, unexpected(err)
	}
	if c != 0 {
		return nil, frameErr(ErrMissingNull, fmt.Sprintf(
			"byte after the %d-byte body given by content-length is %q, not NUL", n, c))
	}
	return body, nil
}

// readToNull reads a body that ends at the first NUL. The buffer grows with the data and the
// read fails as soon as the frame passes the limit, so a stream without NUL cannot make the
// Reader hold more than the limit plus one read buffer.
func (r *Reader) readToNull(size int64) ([]byte, error) {
	budget := r.lim.MaxFrameSize - size
	tooLarge := func() error {
		return frameErr(ErrFrameTooLarge, fmt.Sprintf(
			"frame without content-length exceeds %s %d before its NUL", r.sizeName, r.lim.MaxFrameSize))
	}
	chunk, err := r.br.ReadSlice(0)
	if err == nil { // the common case: the whole body is in the read buffer
		n := len(chunk) - 1
		if int64(n) > budget {
			return nil, tooLarge()
		}
		if n == 0 {
			return nil, nil
		}
		return bytes.Clone(chunk[:n]), nil
	}
	var body []byte
	for {
		switch err {
		case nil:
			chunk = chunk[:len(chunk)-1]
		case bufio.ErrBufferFull:
		default:
			return nil, unexpected(err)
		}
		need := len(body) + len(chunk)
		if int64(need) > budget {
			return nil, tooLarge()
		}
		if need > cap(body) {
			// Double, but never past the budget: append's 1.25x growth for big slices
			// would allocate about five times the final size along the way.
			c := int(min(int64(max(2*cap(body), need, 4<<10)), budget))
			body = append(make([]byte, 0, c), body...)
		}
		body = append(body, chunk...)
		if err == nil {
			return body, nil
		}
		chunk, err = r.br.ReadSlice(0)
	}
}

// header builds the frame.Header of the frame just parsed from r.hdr and r.spans.
func (r *Reader) header() *frame.Header {
	if len(r.spans) == 0 {
		return frame.NewHeader()
	}
	shared := len(r.hdr) <= sharedBlockMax
	var block string
	if shared {
		block = string(r.hdr) // one allocation for every name and value
	}
	str := func(off, end int) string {
		if shared {
			return block[off:end]
		}
		return string(r.hdr[off:end])
	}
	entries := r.entries[:0]
	for _, sp := range r.spans {
		name := sp.name
		if name == "" {
			name = str(sp.nameOff, sp.nameEnd)
		}
		entries = append(entries, name, str(sp.valOff, sp.valEnd))
	}
	h := frame.NewHeader(entries...) // copies entries into a slice of the exact size
	clear(entries)                   // do not keep this frame's strings alive
	r.entries = entries[:0]
	return h
}

// releaseScratch drops scratch buffers that one unusual frame made large.
func (r *Reader) releaseScratch() {
	if cap(r.line) > keepScratchMax {
		r.line = nil
	}
	if cap(r.hdr) > keepScratchMax {
		r.hdr = nil
	}
}

// unexpected turns an end of stream inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
