package openwire

import (
	"encoding/binary"
	"fmt"
)

// A TextMessage's text as UTF-8 bytes, for a broker that keeps bodies as bytes: ASCII text
// without NUL (most text) is the same bytes in UTF-8 and modified UTF-8, so it is sliced
// or appended as it is, without a string in between.

// plainASCII reports whether b is ASCII without NUL.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == 0 {
			return false
		}
	}
	return true
}

// TextBytes decodes a TextMessage's body as Text does, into UTF-8 bytes: plain ASCII text
// is a slice of the body itself. ok is false for a null text.
func (m *Message) TextBytes() (text []byte, ok bool, err error) {
	b, err := m.Body()
	if err != nil || b == nil {
		return nil, false, err
	}
	r := primReader{b: b}
	n := r.i32()
	if r.err == nil && n == -1 {
		return nil, false, nil
	}
	t := r.take(int(n))
	if r.err != nil {
		return nil, false, r.err
	}
	if plainASCII(t) {
		return t, true, nil
	}
	s, valid := decodeMUTF8(t)
	if !valid {
		return nil, false, fmt.Errorf("%w: invalid modified UTF-8", ErrMalformed)
	}
	return []byte(s), true, nil
}

// AppendText appends the TextMessage body of UTF-8 text (SetText's encoding) to dst.
func AppendText(dst, text []byte) []byte {
	if plainASCII(text) {
		return append(binary.BigEndian.AppendUint32(dst, uint32(len(text))), text...)
	}
	s := string(text)
	return appendMUTF8(binary.BigEndian.AppendUint32(dst, uint32(mutf8Len(s))), s)
}
