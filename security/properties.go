package security

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// property is one key and value of a properties file, with the line it starts on.
type property struct {
	key, value string
	line       int
}

// parseProperties reads Java's properties format, as ActiveMQ's PropertiesLoginModule
// files are written: "key=value" or "key:value" or "key value" lines; blank lines and
// lines starting with '#' or '!' skipped; whitespace around keys and values trimmed;
// a line ending in an odd number of backslashes continues on the next (whose leading
// whitespace is dropped); escapes \t \n \r \f \uXXXX and \<char> for the char itself
// (so "\=" and "\:" put those in a key). Unlike Java, trailing whitespace of a value
// is dropped too (write "\ " to keep a space), and the file is read as UTF-8 unless
// it is not valid UTF-8, in which case it is read as ISO-8859-1 as Java reads it.
//
// Properties come in file order; a key given twice appears twice (Java keeps the
// last). Errors name the line and never quote a value.
func parseProperties(data []byte) ([]property, error) {
	text := string(data)
	if !utf8.ValidString(text) {
		text = latin1(data)
	}
	text = strings.TrimPrefix(text, "\uFEFF")
	var props []property
	lines := naturalLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := trimLeftSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var logical strings.Builder
		for {
			cont := endsInOddBackslashes(line)
			if !cont {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			i++
			if i >= len(lines) {
				break
			}
			line = trimLeftSpace(lines[i])
		}
		p, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		p.line = start
		props = append(props, p)
	}
	return props, nil
}

// naturalLines splits at "\n", "\r\n" and "\r".
func naturalLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftSpace(s string) string {
	for len(s) > 0 && isPropSpace(s[0]) {
		s = s[1:]
	}
	return s
}

// endsInOddBackslashes tells whether s's last backslash is unescaped.
func endsInOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line (leading whitespace gone) into key and value.
func splitProperty(s string) (property, error) {
	end := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			end = i
			break
		}
	}
	rawKey, rest := s[:end], s[end:]
	rest = trimLeftSpace(rest)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftSpace(rest[1:])
	}
	// Trailing whitespace that is not escaped.
	for len(rest) > 0 && isPropSpace(rest[len(rest)-1]) && !endsInOddBackslashes(rest[:len(rest)-1]) {
		rest = rest[:len(rest)-1]
	}
	key, err := unescapeProperty(rawKey)
	if err != nil {
		return property{}, fmt.Errorf("key: %w", err)
	}
	value, err := unescapeProperty(rest)
	if err != nil {
		return property{}, fmt.Errorf("value: %w", err)
	}
	return property{key: key, value: value}, nil
}

// unescapeProperty resolves Java's escapes.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	var high rune // a pending UTF-16 high surrogate from \uXXXX
	flush := func() {
		if high != 0 {
			b.WriteRune(utf8.RuneError)
			high = 0
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flush()
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			flush()
			b.WriteByte('\t')
		case 'n':
			flush()
			b.WriteByte('\n')
		case 'r':
			flush()
			b.WriteByte('\r')
		case 'f':
			flush()
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				return "", fmt.Errorf(`malformed \uXXXX escape (four hex digits are required)`)
			}
			i += 4
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				flush()
				high = r
			case utf16.IsSurrogate(r) && high != 0:
				b.WriteRune(utf16.DecodeRune(high, r))
				high = 0
			default:
				flush()
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
				b.WriteRune(r)
			}
		default:
			flush()
			b.WriteByte(c)
		}
	}
	flush()
	return b.String(), nil
}

// hex4 decodes the four hex digits s starts with.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// latin1 decodes ISO-8859-1, Java's default for properties files.
func latin1(data []byte) string {
	rs := make([]rune, len(data))
	for i, c := range data {
		rs[i] = rune(c)
	}
	return string(rs)
}

// splitList splits a groups file's "user1,user2" value, trimming and dropping
// empty names.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
