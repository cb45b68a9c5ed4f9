package openwire

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Java's "modified UTF-8" (DataOutput.writeUTF): U+0000 is written as the two bytes C0 80,
// and a character outside the Basic Multilingual Plane as its two UTF-16 surrogates, three
// bytes each. Decoding also accepts standard four-byte UTF-8, which hawtbuf's UTF8Buffer
// (used for property strings) may carry.

// isASCII reports whether every byte of s is in 1..127: the strings tight encoding writes
// without the UTF length.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}

// mutf8Len is the number of bytes appendMUTF8 writes for s.
func mutf8Len(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r >= 1 && r <= 0x7F:
			n++
		case r <= 0x7FF:
			n += 2
		case r <= 0xFFFF:
			n += 3
		default:
			n += 6
		}
	}
	return n
}

// utf16Len is the length of s as a Java String (UTF-16 code units).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xFFFF {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func appendMUTF8(b []byte, s string) []byte {
	for _, r := range s {
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			b = appendMUTF8Char(b, hi)
			b = appendMUTF8Char(b, lo)
			continue
		}
		b = appendMUTF8Char(b, r)
	}
	return b
}

func appendMUTF8Char(b []byte, c rune) []byte {
	switch {
	case c >= 1 && c <= 0x7F:
		return append(b, byte(c))
	case c <= 0x7FF:
		return append(b, 0xC0|byte(c>>6), 0x80|byte(c&0x3F))
	default:
		return append(b, 0xE0|byte(c>>12), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F))
	}
}

// decodeMUTF8 converts modified UTF-8 to a Go string; ok is false on a malformed sequence.
func decodeMUTF8(b []byte) (string, bool) {
	if plainASCII(b) {
		return string(b), true
	}
	out := make([]byte, 0, len(b))
	var pendingHi rune = -1
	flush := func() {
		if pendingHi >= 0 {
			out = utf8.AppendRune(out, utf8.RuneError)
			pendingHi = -1
		}
	}
	for i := 0; i < len(b); {
		c := b[i]
		var r rune
		switch {
		case c < 0x80:
			r = rune(c)
			i++
		case c&0xE0 == 0xC0:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return "", false
			}
			r = rune(c&0x1F)<<6 | rune(b[i+1]&0x3F)
			i += 2
		case c&0xF0 == 0xE0:
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return "", false
			}
			r = rune(c&0x0F)<<12 | rune(b[i+1]&0x3F)<<6 | rune(b[i+2]&0x3F)
			i += 3
		case c&0xF8 == 0xF0:
			if i+3 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 || b[i+3]&0xC0 != 0x80 {
				return "", false
			}
			r = rune(c&0x07)<<18 | rune(b[i+1]&0x3F)<<12 | rune(b[i+2]&0x3F)<<6 | rune(b[i+3]&0x3F)
			i += 4
		default:
			return "", false
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00:
			flush()
			pendingHi = r
			continue
		case utf16.IsSurrogate(r):
			if pendingHi >= 0 {
				r = utf16.DecodeRune(pendingHi, r)
				pendingHi = -1
			}
		default:
			flush()
		}
		out = utf8.AppendRune(out, r)
	}
	flush()
	return string(out), true
}

// latin1 converts bytes to a string one character per byte, as Java's
// new String(bytes, 0) does for the ASCII form of tight strings.
func latin1(b []byte) string {
	for _, c := range b {
		if c >= 0x80 {
			out := make([]byte, 0, 2*len(b))
			for _, c := range b {
				out = utf8.AppendRune(out, rune(c))
			}
			return string(out)
		}
	}
	return string(b)
}
