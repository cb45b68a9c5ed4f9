package openwire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// decoder reads the body of one frame. With a size prefix the whole frame is in buf and
// decoded values such as message bodies are slices of it (no copy). Without one, buf grows
// from src as fields are read, never beyond limit bytes. Errors are sticky: after the first
// one every read returns zero values, and the caller checks err once.
type decoder struct {
	buf   []byte
	pos   int
	src   io.Reader // nil when buf holds the whole frame
	limit int64     // the frame size limit when src != nil

	tight      bool
	stackTrace bool
	version    int
	cache      []DataStructure // nil when the marshalling cache is off

	bits   []byte
	bitPos int
	depth  int // nesting of objects and causes, bounded by maxDepth

	err error
}

// maxDepth bounds the nesting of embedded objects and exception causes, so that a hostile
// frame cannot make the decoder recurse without limit.
const maxDepth = 32

func (d *decoder) enter() bool {
	d.depth++
	if d.depth > maxDepth {
		d.fail("objects nested deeper than %d", maxDepth)
		return false
	}
	return true
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// need makes n more bytes available at pos, or fails. It never allocates more than the
// frame can hold: with a size prefix the bytes are already there, without one the limit
// is checked before reading.
func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 {
		d.fail("negative length %d", n)
		return false
	}
	if len(d.buf)-d.pos >= n {
		return true
	}
	if d.src == nil {
		d.fail("length %d beyond the end of the frame (%d bytes left)", n, len(d.buf)-d.pos)
		return false
	}
	if int64(d.pos)+int64(n) > d.limit {
		d.err = &FrameSizeError{Size: int64(d.pos) + int64(n), Max: d.limit}
		return false
	}
	// Grow in bounded steps, so that a length the peer claims costs no more memory than
	// the bytes that really arrive.
	for len(d.buf) < d.pos+n {
		start := len(d.buf)
		step := min(d.pos+n-start, max(start, readStep))
		d.buf = append(d.buf, make([]byte, step)...)
		if _, err := io.ReadFull(d.src, d.buf[start:]); err != nil {
			if err == io.EOF && start > 0 {
				err = io.ErrUnexpectedEOF // io.EOF only between frames
			}
			d.err = err
			return false
		}
	}
	return true
}

func (d *decoder) take(n int) []byte {
	if !d.need(n) {
		return nil
	}
	b := d.buf[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b
}

func (d *decoder) u8() byte {
	if !d.need(1) {
		return 0
	}
	d.pos++
	return d.buf[d.pos-1]
}

func (d *decoder) i16() int16 {
	b := d.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (d *decoder) i32() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) i64() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// readBits reads the boolean stream that starts a tightly encoded command: a length of
// one byte, or 0xC0 and one byte, or 0x80 and a short, then the bytes.
func (d *decoder) readBits() {
	n := int(d.u8())
	switch n {
	case 0xC0:
		n = int(d.u8())
	case 0x80:
		n = int(uint16(d.i16()))
	}
	d.bits = d.take(n)
	d.bitPos = 0
}

func (d *decoder) bool() bool {
	if !d.tight {
		return d.u8() != 0
	}
	if d.err != nil {
		return false
	}
	if d.bitPos >= 8*len(d.bits) {
		d.fail("boolean stream exhausted")
		return false
	}
	v := d.bits[d.bitPos/8]&(1<<(d.bitPos%8)) != 0
	d.bitPos++
	return v
}

func (d *decoder) long() int64 {
	if !d.tight {
		return d.i64()
	}
	if d.bool() {
		if d.bool() {
			return d.i64()
		}
		return int64(uint32(d.i32()))
	}
	if d.bool() {
		return int64(uint16(d.i16()))
	}
	return 0
}

func (d *decoder) str() string {
	if !d.bool() {
		return ""
	}
	if d.tight && d.bool() {
		n := int(uint16(d.i16()))
		return latin1(d.take(n))
	}
	return d.utf()
}

// utf reads a string written by Java's writeUTF.
func (d *decoder) utf() string {
	n := int(uint16(d.i16()))
	b := d.take(n)
	if b == nil {
		return ""
	}
	s, ok := decodeMUTF8(b)
	if !ok {
		d.fail("invalid modified UTF-8")
	}
	return s
}

// bytes reads a nullable byte array; the result is a slice of the frame when possible.
func (d *decoder) bytes() []byte {
	if !d.bool() {
		return nil
	}
	n := d.i32()
	if d.err == nil && n < 0 {
		d.fail("negative byte array length %d", n)
		return nil
	}
	b := d.take(int(n))
	if b == nil && d.err == nil {
		return []byte{}
	}
	return b
}

// nested reads a nullable embedded object.
func (d *decoder) nested() DataStructure {
	if !d.bool() {
		return nil
	}
	t := d.u8()
	if d.err != nil {
		return nil
	}
	if !d.enter() {
		return nil
	}
	defer func() { d.depth-- }()
	m := newDataStructure(t)
	if m == nil {
		if d.err == nil {
			d.err = fmt.Errorf("%w: %d", ErrUnknownType, t)
		}
		return nil
	}
	if _, aware := m.(*Message); aware && d.tight && d.bool() {
		// A cached marshalled form: a frame of its own, with its own boolean stream.
		d.i32()
		d.u8()
		saved, savedPos := d.bits, d.bitPos
		d.readBits()
		m.unmarshal(d)
		d.bits, d.bitPos = saved, savedPos
		return m
	}
	m.unmarshal(d)
	return m
}

// cached reads an object that may have been replaced by a marshalling cache index.
func (d *decoder) cached() DataStructure {
	if d.cache == nil {
		return d.nested()
	}
	isNew := d.bool()
	idx := int(d.i16())
	if d.err != nil {
		return nil
	}
	if isNew {
		v := d.nested()
		if idx == -1 {
			return v
		}
		if idx < 0 || idx >= len(d.cache) {
			d.fail("cache index %d outside 0..%d", idx, len(d.cache)-1)
			return nil
		}
		d.cache[idx] = v
		return v
	}
	if idx < 0 || idx >= len(d.cache) {
		d.fail("cache index %d outside 0..%d", idx, len(d.cache)-1)
		return nil
	}
	return d.cache[idx]
}

func (d *decoder) throwable() *Throwable {
	if !d.bool() || !d.enter() {
		return nil
	}
	defer func() { d.depth-- }()
	t := &Throwable{Class: d.str(), Message: d.str()}
	if !d.stackTrace {
		return t
	}
	n := int(d.i16())
	if n < 0 || !d.need(n*4) { // every element has at least its line number
		d.fail("stack trace of %d elements", n)
		return nil
	}
	if n > 0 {
		t.StackTrace = make([]StackTraceElement, n)
	}
	for i := range t.StackTrace {
		t.StackTrace[i] = StackTraceElement{Class: d.str(), Method: d.str(), File: d.str(), Line: d.i32()}
	}
	t.Cause = d.throwable()
	return t
}

// arrayLen reads the short length of an object array and checks that the frame can hold
// that many elements (each takes at least one byte, or one bit when tight).
func (d *decoder) arrayLen() int {
	n := int(d.i16())
	if d.err != nil {
		return 0
	}
	if n < 0 {
		d.fail("negative array length %d", n)
		return 0
	}
	if d.src == nil && !d.tight && n > len(d.buf)-d.pos {
		d.fail("array of %d elements beyond the end of the frame", n)
		return 0
	}
	if d.tight && n > 8*len(d.bits)-d.bitPos {
		d.fail("array of %d elements beyond the boolean stream", n)
		return 0
	}
	return n
}

// decodeArray reads a nullable array of ids (BrokerIds, ConsumerIds); null elements,
// which no client sends, are dropped.
func decodeArray[T any, P interface {
	*T
	DataStructure
}](d *decoder) []T {
	if !d.bool() {
		return nil
	}
	n := d.arrayLen()
	ids := make([]T, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		if p := as[P](d, d.nested()); p != nil {
			ids = append(ids, *p)
		}
	}
	return ids
}

// as converts a decoded object to the type a field holds, failing on any other type.
func as[P DataStructure](d *decoder, v DataStructure) P {
	var zero P
	if v == nil {
		return zero
	}
	p, ok := v.(P)
	if !ok {
		d.fail("nested %T where %T belongs", v, zero)
		return zero
	}
	return p
}
