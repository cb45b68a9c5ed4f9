package stompcodec

import (
	"bufio"
	"bytes"
	"fmt"
)

// rawCommand reports whether frames with this command are never escaped: the spec exempts
// CONNECT (and its alias STOMP) and CONNECTED, which are exchanged before a version is agreed.
func rawCommand(command string) bool {
	return command == "CONNECT" || command == "STOMP" || command == "CONNECTED"
}

// Decoding

// unescape appends src to dst with the escapes of level l decoded (l must be 1.1 or 1.2).
// An escape the level does not define, including a backslash at the end of src, returns a
// *FrameError wrapping ErrUndefinedEscape; line is the whole header line, for the message.
func unescape(dst, src []byte, l level, line []byte) ([]byte, error) {
	for {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...), nil
		}
		dst = append(dst, src[:i]...)
		if i+1 == len(src) {
			return dst, frameErr(ErrUndefinedEscape,
				fmt.Sprintf("lone backslash at end of name or value in header line %s", quote(line)))
		}
		switch c := src[i+1]; {
		case c == 'n':
			dst = append(dst, '\n')
		case c == 'c':
			dst = append(dst, ':')
		case c == '\\':
			dst = append(dst, '\\')
		case c == 'r' && l >= level12:
			dst = append(dst, '\r')
		default:
			return dst, frameErr(ErrUndefinedEscape,
				fmt.Sprintf("%q is not defined in STOMP %s, in header line %s", src[i:i+2], l, quote(line)))
		}
		src = src[i+2:]
	}
}

// trim10 removes leading and trailing bytes <= ' ' (spaces, tabs, CR and other controls),
// like Java's String.trim that ActiveMQ applies to 1.0 header names and values.
func trim10(b []byte) []byte {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// quote renders client bytes for an error message: quoted, and cut short so that an error
// about a 10 KiB header line does not produce a 10 KiB ERROR frame.
func quote(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

// Encoding

// encMode selects the escape table of the Writer.
type encMode uint8

const (
	encRaw encMode = iota // 1.0, and CONNECT/STOMP/CONNECTED in every version
	enc11
	enc12
)

// escapes[mode][c] is what byte c is written as, or "" if it is written unchanged.
var escapes = func() (t [3][256]string) {
	t[encRaw]['\n'] = " "
	t[encRaw]['\r'] = " "
	for _, m := range []encMode{enc11, enc12} {
		t[m]['\\'] = `\\`
		t[m]['\n'] = `\n`
		t[m][':'] = `\c`
	}
	t[enc12]['\r'] = `\r`
	return t
}()

// special[mode][c] says whether byte c is written escaped (escapes[mode][c] not empty): a
// byte table makes the scan of a string that needs no escaping cheap.
var special = func() (t [3][256]bool) {
	for m := range escapes {
		for c, rep := range escapes[m] {
			t[m][c] = rep != ""
		}
	}
	return t
}()

// needsEscape reports whether s has a byte that mode m writes escaped, or is a 1.1 value
// ending in CR (see writeEscaped).
func needsEscape(s string, m encMode, value bool) bool {
	tbl := &special[m]
	for i := 0; i < len(s); i++ {
		if tbl[s[i]] {
			return true
		}
	}
	return m == enc11 && value && len(s) > 0 && s[len(s)-1] == '\r'
}

// writeEscaped writes s with the escapes of mode m. Strings that need no escaping, the
// common case, go out in a single WriteString; nothing allocates either way. In 1.1 a CR at
// the end of a value cannot be escaped and would be read back as part of the EOL, so it is
// written as a space.
func writeEscaped(w *bufio.Writer, s string, m encMode, value bool) error {
	if !needsEscape(s, m, value) {
		_, err := w.WriteString(s)
		return err
	}
	tbl := &escapes[m]
	start := 0
	for i := 0; i < len(s); i++ {
		rep := tbl[s[i]]
		if rep == "" {
			continue
		}
		if _, err := w.WriteString(s[start:i]); err != nil {
			return err
		}
		if _, err := w.WriteString(rep); err != nil {
			return err
		}
		start = i + 1
	}
	if m == enc11 && value && len(s) > start && s[len(s)-1] == '\r' {
		if _, err := w.WriteString(s[start : len(s)-1]); err != nil {
			return err
		}
		_, err := w.WriteString(" ")
		return err
	}
	_, err := w.WriteString(s[start:])
	return err
}
