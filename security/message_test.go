package security

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestFailureMessage(t *testing.T) {
	tests := map[string]string{
		"":                        "User name [null] or password is invalid.",
		"system":                  "User name [system] or password is invalid.",
		"bad\r\nERROR\x00":        "User name [badERROR] or password is invalid.",
		"\u202egnp.exe":           "User name [gnp.exe] or password is invalid.",
		"héllo wörld":             "User name [héllo wörld] or password is invalid.",
		"a\xffb":                  "User name [a\uFFFDb] or password is invalid.",
		strings.Repeat("é", 64):   "User name [" + strings.Repeat("é", 64) + "] or password is invalid.",
		strings.Repeat("é", 65):   "User name [" + strings.Repeat("é", 64) + "…] or password is invalid.",
		strings.Repeat("x", 1000): "User name [" + strings.Repeat("x", 64) + "…] or password is invalid.",
	}
	for in, want := range tests {
		if got := FailureMessage(in); got != want {
			t.Errorf("FailureMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzFailureMessage checks FailureMessage's invariants for any login: ActiveMQ's
// frame around it, valid UTF-8, printable only, at most 64 runes of the login.
func FuzzFailureMessage(f *testing.F) {
	for _, s := range []string{"", "system", "a\nb", "\xff\xfe", strings.Repeat("ü", 70), "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, login string) {
		m := FailureMessage(login)
		const pre, post = "User name [", "] or password is invalid."
		if !strings.HasPrefix(m, pre) || !strings.HasSuffix(m, post) {
			t.Fatalf("%q: %q", login, m)
		}
		shown := m[len(pre) : len(m)-len(post)]
		if !utf8.ValidString(shown) {
			t.Fatalf("%q: invalid UTF-8 %q", login, shown)
		}
		for _, r := range shown {
			if !unicode.IsPrint(r) {
				t.Fatalf("%q: unprintable %q in %q", login, r, shown)
			}
		}
		if n := utf8.RuneCountInString(strings.TrimSuffix(shown, "…")); n > maxShownRunes {
			t.Fatalf("%q: %d runes shown", login, n)
		}
		if login == "" && shown != "null" {
			t.Fatalf("empty login shown as %q", shown)
		}
	})
}
