package openwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Typed values of message properties, MapMessage and StreamMessage bodies and
// WireFormatInfo options (ActiveMQ's MarshallingSupport). In Go they are: nil, bool, int8
// (Java byte), Char, int16, int32, int64, float32, float64, []byte, string,
// map[string]any and []any.

// Char is a Java char (a UTF-16 code unit).
type Char uint16

const (
	primNull      = 0
	primBool      = 1
	primByte      = 2
	primChar      = 3
	primShort     = 4
	primInt       = 5
	primLong      = 6
	primDouble    = 7
	primFloat     = 8
	primString    = 9
	primBytes     = 10
	primMap       = 11
	primList      = 12
	primBigString = 13
)

// maxNesting bounds maps and lists inside maps and lists.
const maxNesting = 16

// appendPrimitiveMap encodes m (keys in sorted order, so that equal maps encode equally);
// a nil map is written as size -1.
func appendPrimitiveMap(b []byte, m map[string]any) ([]byte, error) {
	return appendMap(b, m, 0)
}

func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return binary.BigEndian.AppendUint32(b, math.MaxUint32), nil
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var err error
	for _, k := range keys {
		if mutf8Len(k) > math.MaxUint16 {
			return nil, fmt.Errorf("openwire: map key of %d bytes too long", len(k))
		}
		b = binary.BigEndian.AppendUint16(b, uint16(mutf8Len(k)))
		b = appendMUTF8(b, k)
		if b, err = appendPrimitive(b, m[k], depth); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendPrimitive encodes one typed value.
func appendPrimitive(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("openwire: maps and lists nested deeper than %d", maxNesting)
	}
	be := binary.BigEndian
	switch v := v.(type) {
	case nil:
		return append(b, primNull), nil
	case bool:
		return append(b, primBool, boolByte(v)), nil
	case int8:
		return append(b, primByte, byte(v)), nil
	case Char:
		return be.AppendUint16(append(b, primChar), uint16(v)), nil
	case int16:
		return be.AppendUint16(append(b, primShort), uint16(v)), nil
	case int32:
		return be.AppendUint32(append(b, primInt), uint32(v)), nil
	case int64:
		return be.AppendUint64(append(b, primLong), uint64(v)), nil
	case float32:
		return be.AppendUint32(append(b, primFloat), math.Float32bits(v)), nil
	case float64:
		return be.AppendUint64(append(b, primDouble), math.Float64bits(v)), nil
	case []byte:
		return append(be.AppendUint32(append(b, primBytes), uint32(len(v))), v...), nil
	case string:
		return appendPrimString(b, v), nil
	case map[string]any:
		return appendMap(append(b, primMap), v, depth+1)
	case []any:
		b = be.AppendUint32(append(b, primList), uint32(len(v)))
		var err error
		for _, x := range v {
			if b, err = appendPrimitive(b, x, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("openwire: %T is not a primitive type", v)
}

// appendPrimString encodes a string value as MarshallingSupport.marshalString does:
// writeUTF below Short.MAX_VALUE/4 Java chars, else a 32-bit length.
func appendPrimString(b []byte, v string) []byte {
	if utf16Len(v) < math.MaxInt16/4 {
		b = binary.BigEndian.AppendUint16(append(b, primString), uint16(mutf8Len(v)))
	} else {
		b = binary.BigEndian.AppendUint32(append(b, primBigString), uint32(mutf8Len(v)))
	}
	return appendMUTF8(b, v)
}

// primReader decodes typed values from a byte slice; strings and byte arrays are checked
// against the bytes left before anything is allocated.
type primReader struct {
	b   []byte
	err error
}

func (r *primReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: length %d beyond the %d bytes left", ErrMalformed, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *primReader) u16() int {
	if b := r.take(2); b != nil {
		return int(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *primReader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *primReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *primReader) str(n int) string {
	b := r.take(n)
	if r.err != nil {
		return ""
	}
	s, ok := decodeMUTF8(b)
	if !ok {
		r.err = fmt.Errorf("%w: invalid modified UTF-8", ErrMalformed)
	}
	return s
}

// count reads a 32-bit element count and checks that each element's minimum size fits
// in what is left.
func (r *primReader) count(minSize int) (int, bool) {
	n := r.i32()
	if r.err != nil || n < 0 {
		return int(n), false
	}
	if int64(n)*int64(minSize) > int64(len(r.b)) {
		r.err = fmt.Errorf("%w: %d elements cannot fit in %d bytes", ErrMalformed, n, len(r.b))
		return 0, false
	}
	return int(n), true
}

func (r *primReader) mapValue(limit, depth int) map[string]any {
	n, ok := r.count(3) // a key length and a type byte at least
	if !ok {
		return nil
	}
	if n > limit {
		r.err = fmt.Errorf("%w: map of %d entries above %d", ErrMalformed, n, limit)
		return nil
	}
	m := make(map[string]any, n)
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str(r.u16())
		m[k] = r.value(depth)
	}
	return m
}

func (r *primReader) value(depth int) any {
	if depth > maxNesting {
		r.err = fmt.Errorf("%w: maps and lists nested deeper than %d", ErrMalformed, maxNesting)
		return nil
	}
	if len(r.b) == 0 || (r.b[0] != primMap && r.b[0] != primList) {
		return r.propValue().Any()
	}
	if r.take(1)[0] == primMap {
		m := r.mapValue(math.MaxInt32, depth+1)
		if m == nil {
			return map[string]any(nil)
		}
		return m
	}
	n, ok := r.count(1)
	if !ok {
		return []any(nil)
	}
	l := make([]any, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		l = append(l, r.value(depth+1))
	}
	return l
}

// decodePrimitiveMap decodes a map of at most limit entries; size -1 is a nil map.
// Byte-array values are slices of b.
func decodePrimitiveMap(b []byte, limit int) (map[string]any, error) {
	r := primReader{b: b}
	m := r.mapValue(limit, 0)
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

// decodePrimitiveList decodes the values of a StreamMessage body, one after another.
func decodePrimitiveList(b []byte) ([]any, error) {
	r := primReader{b: b}
	var l []any
	for len(r.b) > 0 && r.err == nil {
		l = append(l, r.value(0))
	}
	return l, r.err
}
