package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// The typed part of a message is its Kind and its Props: what JMS carries beyond the
// string headers. AppendTyped and ReadTyped are its one encoding, which every store
// keeps in an optional section of its own record (written only when Message.Typed), so
// that a message without it is stored exactly as before the typed part existed.
//
// # Encoding, version 1
//
// uvarint/varint are encoding/binary's; str is a uvarint length and the bytes.
//
//	u8 version (1)
//	u8 body kind (0 plain, 1 text, 2 bytes, 3 map, 4 stream, 5 object)
//	uvarint property count
//	per property: str name, u8 kind, value:
//	  1 boolean      u8 (0 or 1)
//	  2-5 byte, short, int, long   varint (in the kind's range)
//	  6 float        u32 little-endian, the float32 bits
//	  7 double       u64 little-endian, the float64 bits
//	  8 byte array   str
//
// The section is framed by the store (its length is known), and a reader refuses
// trailing bytes, an unknown version or kind, and a value out of its kind's range.

// TypedVersion is the version of the typed part's encoding (see above).
const TypedVersion = 1

// ErrTyped is what ReadTyped's errors wrap; a store reports them as its ErrCorrupt.
var ErrTyped = errors.New("persistence: malformed typed part")

// minPropLen is the fewest bytes a property takes in the encoding (an empty name, the
// kind, a one-byte value), which bounds the count a reader accepts before allocating.
const minPropLen = 3

// AppendTyped appends the typed part of m to dst.
func AppendTyped(dst []byte, m *Message) []byte {
	dst = append(dst, TypedVersion, byte(m.Kind))
	dst = binary.AppendUvarint(dst, uint64(len(m.Props)))
	for _, p := range m.Props {
		dst = binary.AppendUvarint(dst, uint64(len(p.Name)))
		dst = append(dst, p.Name...)
		dst = append(dst, byte(p.Kind))
		switch {
		case p.Kind == PropBool:
			var c byte
			if p.Bool() {
				c = 1
			}
			dst = append(dst, c)
		case p.Kind == PropFloat:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(p.Float())))
		case p.Kind == PropDouble:
			dst = binary.LittleEndian.AppendUint64(dst, p.Num)
		case p.Kind == PropBytes:
			dst = binary.AppendUvarint(dst, uint64(len(p.Bytes)))
			dst = append(dst, p.Bytes...)
		default: // integers
			dst = binary.AppendVarint(dst, p.Int())
		}
	}
	return dst
}

// TypedLen is the length of AppendTyped's encoding of m.
func TypedLen(m *Message) int {
	n := 2 + uvarintLen(uint64(len(m.Props)))
	for _, p := range m.Props {
		n += uvarintLen(uint64(len(p.Name))) + len(p.Name) + 1
		switch {
		case p.Kind == PropBool:
			n++
		case p.Kind == PropFloat:
			n += 4
		case p.Kind == PropDouble:
			n += 8
		case p.Kind == PropBytes:
			n += uvarintLen(uint64(len(p.Bytes))) + len(p.Bytes)
		default:
			var buf [binary.MaxVarintLen64]byte
			n += binary.PutVarint(buf[:], p.Int())
		}
	}
	return n
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}

// intRange is the range of each integer kind.
var intRange = [...]struct{ lo, hi int64 }{
	PropByte:  {math.MinInt8, math.MaxInt8},
	PropShort: {math.MinInt16, math.MaxInt16},
	PropInt:   {math.MinInt32, math.MaxInt32},
	PropLong:  {math.MinInt64, math.MaxInt64},
}

// ReadTyped decodes b, which must be exactly one encoding of the typed part, into
// m.Kind and m.Props. A byte array aliases b, as a store's decoded Body aliases its
// record; the names share one new string. Counts and lengths are checked against b
// before anything is allocated. On error m is left alone.
func ReadTyped(b []byte, m *Message) error {
	r := typedReader{b: b}
	kind, count, names := r.check()
	if r.err != nil {
		return r.err
	}
	var props Props
	if count > 0 {
		// Second pass: build them; it cannot fail. The builder holds every name (grown
		// once), and each String is a view of it.
		props = make(Props, count)
		var sb strings.Builder
		sb.Grow(names)
		for i := range props {
			name := r.prop(&props[i])
			sb.Write(name)
			all := sb.String()
			props[i].Name = all[len(all)-len(name):]
		}
	}
	m.Kind, m.Props = kind, props
	return nil
}

// CheckTyped reports whether b is exactly one valid encoding of the typed part, as
// ReadTyped would find it, without allocating: what a store's replay checks of a
// message it does not decode.
func CheckTyped(b []byte) error {
	r := typedReader{b: b}
	r.check()
	return r.err
}

// check reads the encoding once, checking everything: it returns the body kind, the
// property count and the length of all names, and leaves r at the first property.
func (r *typedReader) check() (kind BodyKind, count uint64, names int) {
	if v := r.byte(); v != TypedVersion {
		r.errorf("version %d, this build reads %d", v, TypedVersion)
		return
	}
	kind = BodyKind(r.byte())
	count = r.uvarint()
	switch {
	case r.err != nil:
		return
	case kind > maxBodyKind:
		r.errorf("body kind %d", kind)
		return
	case count > uint64(len(r.b)-r.off)/minPropLen:
		r.errorf("%d properties in %d bytes", count, len(r.b)-r.off)
		return
	}
	start := r.off
	for range count {
		names += len(r.prop(nil))
	}
	if r.err == nil && r.off != len(r.b) {
		r.errorf("%d trailing bytes", len(r.b)-r.off)
	}
	r.off = start
	return
}

// typedReader reads the encoding; the first error sticks.
type typedReader struct {
	b   []byte
	off int
	err error
}

func (r *typedReader) errorf(format string, args ...any) error {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrTyped, fmt.Sprintf(format, args...))
	}
	r.off = len(r.b)
	return r.err
}

func (r *typedReader) byte() byte {
	if r.off >= len(r.b) {
		r.errorf("truncated")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *typedReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.errorf("bad number")
		return 0
	}
	r.off += n
	return v
}

func (r *typedReader) take(n uint64) []byte {
	if n > uint64(len(r.b)-r.off) {
		r.errorf("truncated")
		return nil
	}
	p := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return p
}

// prop reads one property and returns its name's bytes; if p is not nil it fills p,
// but for its Name (ReadTyped sets it).
func (r *typedReader) prop(p *Prop) []byte {
	name := r.take(r.uvarint())
	kind := PropKind(r.byte())
	var num uint64
	var bytes []byte
	switch {
	case r.err != nil:
		return nil
	case kind == PropBool:
		c := r.byte()
		if c > 1 {
			r.errorf("boolean %d", c)
		}
		num = uint64(c)
	case kind.IsInteger():
		v, n := binary.Varint(r.b[r.off:])
		if n <= 0 {
			r.errorf("bad number")
			return nil
		}
		r.off += n
		if rg := intRange[kind]; v < rg.lo || v > rg.hi {
			r.errorf("%s property out of range: %d", kind, v)
		}
		num = uint64(v)
	case kind == PropFloat:
		if f := r.take(4); f != nil {
			num = math.Float64bits(float64(math.Float32frombits(binary.LittleEndian.Uint32(f))))
		}
	case kind == PropDouble:
		if f := r.take(8); f != nil {
			num = binary.LittleEndian.Uint64(f)
		}
	case kind == PropBytes:
		bytes = r.take(r.uvarint())
	default:
		r.errorf("property kind %d", kind)
	}
	if p != nil {
		*p = Prop{Kind: kind, Num: num, Bytes: bytes}
	}
	return name
}
