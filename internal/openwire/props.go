package openwire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Message properties one by one, for the broker's hot path: RangeProperties reads them
// without building a map or boxing their values, and PropertyEncoder writes them
// straight from the broker's headers and typed properties. Properties and SetProperties
// (a map) remain for everything else; the bytes are the same format.

// PropType is the type of a property value, as OpenWire's typed map marks it.
type PropType byte

const (
	PropNull   PropType = primNull
	PropBool   PropType = primBool
	PropByte   PropType = primByte
	PropChar   PropType = primChar
	PropShort  PropType = primShort
	PropInt    PropType = primInt
	PropLong   PropType = primLong
	PropDouble PropType = primDouble
	PropFloat  PropType = primFloat
	PropString PropType = primString // a big string too
	PropBytes  PropType = primBytes
	PropOther  PropType = primMap // a map or a list: Other holds it
)

// PropValue is one property's value; Type says which accessor applies.
type PropValue struct {
	Type  PropType
	num   uint64
	str   string
	bytes []byte
	other any
}

func (v PropValue) Bool() bool       { return v.num != 0 }
func (v PropValue) Int() int64       { return int64(v.num) } // byte, short, int, long
func (v PropValue) Char() Char       { return Char(v.num) }
func (v PropValue) Float32() float32 { return math.Float32frombits(uint32(v.num)) }
func (v PropValue) Float64() float64 { return math.Float64frombits(v.num) }
func (v PropValue) Str() string      { return v.str }
func (v PropValue) Bytes() []byte    { return v.bytes } // a slice of the message's properties
func (v PropValue) Other() any       { return v.other } // a map[string]any or []any

// Any is the value as Properties gives it (boxed: for what is not the hot path).
func (v PropValue) Any() any {
	switch v.Type {
	case PropBool:
		return v.Bool()
	case PropByte:
		return int8(v.Int())
	case PropChar:
		return v.Char()
	case PropShort:
		return int16(v.Int())
	case PropInt:
		return int32(v.Int())
	case PropLong:
		return v.Int()
	case PropFloat:
		return v.Float32()
	case PropDouble:
		return v.Float64()
	case PropString:
		return v.str
	case PropBytes:
		return v.bytes
	}
	return v.other // nil for a null
}

// PropIter reads a message's properties one by one, in the order they were encoded; a
// name the encoder repeated comes as often (the Java client never repeats one):
//
//	for it := m.PropIter(); it.Next(); { use(it.Name(), it.Value()) }; check it.Err()
type PropIter struct {
	r    primReader
	left int
	name string
	v    PropValue
}

// PropIter returns an iterator over the message's properties.
func (m *Message) PropIter() PropIter {
	it := PropIter{r: primReader{b: m.MarshalledProperties}}
	if m.MarshalledProperties != nil {
		n, ok := it.r.count(3) // a key length and a type byte at least
		if ok {
			it.left = n
		}
	}
	return it
}

// Next reads the next property; false at the end or on an error (see Err).
func (it *PropIter) Next() bool {
	if it.left <= 0 || it.r.err != nil {
		return false
	}
	it.left--
	it.name = it.r.str(it.r.u16())
	it.v = it.r.propValue()
	return it.r.err == nil
}

func (it *PropIter) Name() string     { return it.name }
func (it *PropIter) Value() PropValue { return it.v }
func (it *PropIter) Err() error       { return it.r.err }

// RangeProperties calls fn for each property, in the order of PropIter. It stops at fn's
// first error and returns it.
func (m *Message) RangeProperties(fn func(name string, v PropValue) error) error {
	for it := m.PropIter(); ; {
		if !it.Next() {
			return it.Err()
		}
		if err := fn(it.Name(), it.Value()); err != nil {
			return err
		}
	}
}

// propValue reads one value into a PropValue (value boxes it; a map or a list is value's).
func (r *primReader) propValue() PropValue {
	if len(r.b) > 0 && (r.b[0] == primMap || r.b[0] == primList) {
		return PropValue{Type: PropOther, other: r.value(1)}
	}
	t := r.take(1)
	if t == nil {
		return PropValue{}
	}
	v := PropValue{Type: PropType(t[0])}
	switch t[0] {
	case primNull:
	case primBool:
		if b := r.take(1); b != nil && b[0] != 0 {
			v.num = 1
		}
	case primByte:
		if b := r.take(1); b != nil {
			v.num = uint64(int64(int8(b[0])))
		}
	case primChar:
		v.num = uint64(r.u16())
	case primShort:
		v.num = uint64(int64(int16(r.u16())))
	case primInt:
		v.num = uint64(int64(r.i32()))
	case primLong, primDouble:
		v.num = r.u64()
	case primFloat:
		v.num = uint64(uint32(r.i32()))
	case primBytes:
		v.bytes = r.take(int(r.i32()))
	case primString:
		v.str = r.str(r.u16())
	case primBigString:
		v.Type, v.str = PropString, r.str(int(r.i32()))
	default:
		r.err = fmt.Errorf("%w: unknown primitive type %d", ErrMalformed, t[0])
	}
	return v
}

// PropertyEncoder writes a message's properties one at a time. The zero value is ready;
// Finish returns the encoded map.
type PropertyEncoder struct {
	b   []byte
	n   uint32
	err error
}

// Reset starts a new map, in the storage of the last unless that grew large.
func (e *PropertyEncoder) Reset() {
	b := e.b[:0]
	if cap(b) > 64<<10 {
		b = nil
	}
	*e = PropertyEncoder{b: b}
}

// key starts an entry: its name, then the caller appends the typed value.
func (e *PropertyEncoder) key(name string) {
	if len(e.b) == 0 {
		e.b = append(e.b, 0, 0, 0, 0) // the count, set by Finish
	}
	n := mutf8Len(name)
	if n > math.MaxUint16 {
		if e.err == nil {
			e.err = fmt.Errorf("openwire: map key of %d bytes too long", len(name))
		}
		n = 0
		name = ""
	}
	e.b = appendMUTF8(binary.BigEndian.AppendUint16(e.b, uint16(n)), name)
	e.n++
}

func (e *PropertyEncoder) String(name, v string) {
	e.key(name)
	e.b = appendPrimString(e.b, v)
}

func (e *PropertyEncoder) Bool(name string, v bool) {
	e.key(name)
	e.b = append(append(e.b, primBool), boolByte(v))
}

func (e *PropertyEncoder) Byte(name string, v int8) {
	e.key(name)
	e.b = append(append(e.b, primByte), byte(v))
}

func (e *PropertyEncoder) Short(name string, v int16) {
	e.key(name)
	e.b = binary.BigEndian.AppendUint16(append(e.b, primShort), uint16(v))
}

func (e *PropertyEncoder) Int(name string, v int32) {
	e.key(name)
	e.b = binary.BigEndian.AppendUint32(append(e.b, primInt), uint32(v))
}

func (e *PropertyEncoder) Long(name string, v int64) {
	e.key(name)
	e.b = binary.BigEndian.AppendUint64(append(e.b, primLong), uint64(v))
}

func (e *PropertyEncoder) Float(name string, v float32) {
	e.key(name)
	e.b = binary.BigEndian.AppendUint32(append(e.b, primFloat), math.Float32bits(v))
}

func (e *PropertyEncoder) Double(name string, v float64) {
	e.key(name)
	e.b = binary.BigEndian.AppendUint64(append(e.b, primDouble), math.Float64bits(v))
}

func (e *PropertyEncoder) Bytes(name string, v []byte) {
	e.key(name)
	e.b = append(binary.BigEndian.AppendUint32(append(e.b, primBytes), uint32(len(v))), v...)
}

// Len is the number of properties written since the last Reset.
func (e *PropertyEncoder) Len() int { return int(e.n) }

// Finish returns the encoded map, nil if nothing was written; the slice is the encoder's
// buffer, valid until the next Reset.
func (e *PropertyEncoder) Finish() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	if e.n == 0 {
		return nil, nil
	}
	binary.BigEndian.PutUint32(e.b, e.n)
	return e.b, nil
}
