package openwire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// encoder builds the body of one frame. Tight encoding keeps every boolean (including the
// "present" and "ASCII" flags of strings and the size class of longs) in a separate bit
// stream that precedes the data; loose encoding writes each boolean as a byte where it
// occurs. The order of bits in the stream is the order in which the fields are visited, so
// one pass over a command fills both the bits and the data, for either encoding.
type encoder struct {
	tight      bool
	stackTrace bool
	version    int
	cache      *marshalCache // nil when the marshalling cache is off
	bits       []byte
	nbits      int
	data       []byte
	err        error
}

func (e *encoder) reset(f *Format, cache *marshalCache) {
	e.tight = f.TightEncoding
	e.stackTrace = f.StackTrace
	e.version = f.Version
	e.cache = cache
	e.bits = e.bits[:0]
	e.nbits = 0
	e.data = e.data[:0]
	e.err = nil
}

func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("openwire: "+format, args...)
	}
}

func (e *encoder) bool(v bool) {
	if !e.tight {
		e.u8(boolByte(v))
		return
	}
	if e.nbits%8 == 0 {
		e.bits = append(e.bits, 0)
	}
	if v {
		e.bits[len(e.bits)-1] |= 1 << (e.nbits % 8)
	}
	e.nbits++
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func (e *encoder) u8(v byte)    { e.data = append(e.data, v) }
func (e *encoder) i16(v int16)  { e.data = binary.BigEndian.AppendUint16(e.data, uint16(v)) }
func (e *encoder) i32(v int32)  { e.data = binary.BigEndian.AppendUint32(e.data, uint32(v)) }
func (e *encoder) i64(v int64)  { e.data = binary.BigEndian.AppendUint64(e.data, uint64(v)) }
func (e *encoder) raw(b []byte) { e.data = append(e.data, b...) }

// long writes an int64: 8 bytes in loose encoding; in tight encoding two bits say whether
// it is 0, fits 16 or 32 unsigned bits, or needs all 64.
func (e *encoder) long(v int64) {
	if !e.tight {
		e.i64(v)
		return
	}
	switch u := uint64(v); {
	case u == 0:
		e.bool(false)
		e.bool(false)
	case u&^0xFFFF == 0:
		e.bool(false)
		e.bool(true)
		e.i16(int16(u))
	case u&^0xFFFFFFFF == 0:
		e.bool(true)
		e.bool(false)
		e.i32(int32(u))
	default:
		e.bool(true)
		e.bool(true)
		e.i64(v)
	}
}

// str writes a nullable string; "" is written as null. Loose encoding and non-ASCII tight
// strings use Java's writeUTF (a 16-bit length and modified UTF-8); tight encoding writes
// strings of the characters 1..127 as a length and the bytes.
func (e *encoder) str(s string) {
	e.bool(s != "")
	if s == "" {
		return
	}
	if e.tight {
		ascii := isASCII(s)
		e.bool(ascii)
		if ascii {
			if len(s) >= math.MaxInt16 {
				e.fail("string of %d bytes too long to encode", len(s))
				return
			}
			e.i16(int16(len(s)))
			e.data = append(e.data, s...)
			return
		}
		if mutf8Len(s) >= math.MaxInt16 {
			e.fail("string of %d bytes too long to encode", mutf8Len(s))
			return
		}
	}
	e.utf(s)
}

// utf writes s as Java's DataOutput.writeUTF does.
func (e *encoder) utf(s string) {
	n := mutf8Len(s)
	if n > math.MaxUint16 {
		e.fail("string of %d bytes too long to encode", n)
		return
	}
	e.i16(int16(uint16(n)))
	e.data = appendMUTF8(e.data, s)
}

// bytes writes a nullable byte array with a 32-bit length; nil is null.
func (e *encoder) bytes(b []byte) {
	e.bool(b != nil)
	if b != nil {
		e.i32(int32(len(b)))
		e.raw(b)
	}
}

// nested writes a nullable embedded object: its type byte and fields.
func (e *encoder) nested(m marshaler) {
	e.bool(m != nil)
	if m == nil {
		return
	}
	if e.tight {
		if _, ok := m.(*Message); ok {
			// Messages are "marshal aware": a second bit says whether a cached
			// marshalled form follows. ActiveMQ always writes false.
			e.bool(false)
		}
	}
	e.u8(m.DataType())
	m.marshal(e)
}

// cached writes an object that the marshalling cache may replace by an index.
func (e *encoder) cached(m marshaler) {
	if e.cache == nil {
		e.nested(m)
		return
	}
	idx, hit := e.cache.lookup(m)
	e.bool(!hit)
	e.i16(idx)
	if !hit {
		e.nested(m)
	}
}

// throwable writes an exception: class name, message and, when stack traces are enabled,
// the stack and the cause chain.
func (e *encoder) throwable(t *Throwable) {
	e.bool(t != nil)
	if t == nil {
		return
	}
	e.str(t.Class)
	e.str(t.Message)
	if !e.stackTrace {
		return
	}
	if len(t.StackTrace) > math.MaxInt16 {
		e.fail("stack trace of %d elements too long", len(t.StackTrace))
		return
	}
	e.i16(int16(len(t.StackTrace)))
	for _, el := range t.StackTrace {
		e.str(el.Class)
		e.str(el.Method)
		e.str(el.File)
		e.i32(el.Line)
	}
	e.throwable(t.Cause)
}

// arrayLen writes the 16-bit length of an object array.
func (e *encoder) arrayLen(n int) {
	if n > math.MaxInt16 {
		e.fail("array of %d elements too long to encode", n)
	}
	e.i16(int16(n))
}

// encodeArray writes a nullable array of ids (BrokerIds, ConsumerIds) as nested objects.
func encodeArray[T any, P interface {
	*T
	marshaler
}](e *encoder, ids []T) {
	e.bool(ids != nil)
	if ids == nil {
		return
	}
	e.arrayLen(len(ids))
	for i := range ids {
		e.nested(P(&ids[i]))
	}
}

// opt turns a typed nil pointer into a nil marshaler, so that nested and cached see null.
func opt[T any, P interface {
	*T
	marshaler
}](p P) marshaler {
	if p == nil {
		return nil
	}
	return p
}
