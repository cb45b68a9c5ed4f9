package security

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name, in string
		want     []property
	}{
		{"equals", "a=b\n", []property{{"a", "b", 1}}},
		{"colon", "a:b", []property{{"a", "b", 1}}},
		{"space", "a b", []property{{"a", "b", 1}}},
		{"spaces around", "  a  =  b c  \n", []property{{"a", "b c", 1}}},
		{"comments and blanks", "# c\n! c\n\n   \n  # indented\na=b\n", []property{{"a", "b", 6}}},
		{"empty value", "a=\nb", []property{{"a", "", 1}, {"b", "", 2}}},
		{"value with separators", "a==b:c", []property{{"a", "=b:c", 1}}},
		{"escaped separator in key", `a\=b\:c=d`, []property{{"a=b:c", "d", 1}}},
		{"escaped space in key", `a\ b=c`, []property{{"a b", "c", 1}}},
		{"continuation", "a=b\\\n    c\\\n  d\ne=f", []property{{"a", "bcd", 1}, {"e", "f", 4}}},
		{"escaped backslash is no continuation", "a=b\\\\\nc=d", []property{{"a", `b\`, 1}, {"c", "d", 2}}},
		{"continuation at EOF", "a=b\\", []property{{"a", "b", 1}}},
		{"comment is not continued", "# x\\\na=b", []property{{"a", "b", 2}}},
		{"CRLF and CR", "a=b\r\nc=d\re=f", []property{{"a", "b", 1}, {"c", "d", 2}, {"e", "f", 3}}},
		{"escapes", `a=\t\n\r\f\x\\`, []property{{"a", "\t\n\r\fx\\", 1}}},
		{"unicode escape", `a=caf\u00e9 \u20AC`, []property{{"a", "café €", 1}}},
		{"surrogate pair", `a=\ud83d\ude00`, []property{{"a", "😀", 1}}},
		{"lone surrogate", `a=\ud83dx`, []property{{"a", "\uFFFDx", 1}}},
		{"trailing escaped space kept", `a=b\ `, []property{{"a", "b ", 1}}},
		{"UTF-8", "ü=pässword", []property{{"ü", "pässword", 1}}},
		{"ISO-8859-1", "a=p\xe4ss", []property{{"a", "päss", 1}}},
		{"BOM", "\uFEFFa=b", []property{{"a", "b", 1}}},
		{"duplicates kept in order", "a=1\na=2", []property{{"a", "1", 1}, {"a", "2", 2}}},
	}
	for _, tt := range tests {
		got, err := parseProperties([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
				break
			}
		}
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, in := range []string{"a=\\u12", "a=b\nc=\\uZZZZsecret", "\\u00=x"} {
		_, err := parseProperties([]byte(in))
		if err == nil {
			t.Errorf("%q: no error", in)
			continue
		}
		if !strings.Contains(err.Error(), "line ") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: error %q should name the line and not quote the value", in, err)
		}
	}
}

// FuzzProperties checks that any input parses without panicking, into valid UTF-8
// keys and values that are trimmed, with line numbers in order, and that a file
// written back from the result parses to the same.
func FuzzProperties(f *testing.F) {
	for _, s := range []string{"a=b", "a b\\\n c", "# x\n!y\na:b", `k\u0041=\t\\`, "a=\\u12", "\r\n\r", "ü=\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := parseProperties(data)
		if err != nil {
			return
		}
		last := 0
		for _, p := range props {
			if !utf8.ValidString(p.key) || !utf8.ValidString(p.value) {
				t.Fatalf("invalid UTF-8 in %+v", p)
			}
			if p.line < last || p.line < 1 {
				t.Fatalf("line numbers out of order: %v", props)
			}
			last = p.line
		}
		// Write back with every character escaped that could be read otherwise.
		var b strings.Builder
		for _, p := range props {
			b.WriteString(escapeProperty(p.key, true))
			b.WriteByte('=')
			b.WriteString(escapeProperty(p.value, false))
			b.WriteByte('\n')
		}
		again, err := parseProperties([]byte(b.String()))
		if err != nil || len(again) != len(props) {
			t.Fatalf("re-parse of %q: %v, %d properties, want %d", b.String(), err, len(again), len(props))
		}
		for i := range props {
			if again[i].key != props[i].key || again[i].value != props[i].value {
				t.Fatalf("re-parse: %+v, want %+v", again[i], props[i])
			}
		}
	})
}

// escapeProperty writes s so that parseProperties reads it back.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == ' ' && (key || i == 0 || i == len(s)-1):
			b.WriteString(`\ `)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\uFEFF':
			b.WriteString(`\uFEFF`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
