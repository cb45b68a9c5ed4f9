package selector

import (
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is a *SyntaxError with a
// position inside the input, and that a selector that parses keeps its source text,
// has a canonical form that parses to itself and selects the same messages, and
// evaluates without panicking over a message, plain properties and typed properties.
func FuzzParse(f *testing.F) {
	for _, tt := range exprTests {
		f.Add(tt.sel)
	}
	for _, s := range []string{
		"", "(", "'", "/*", "--", "a IN ('x',", "a LIKE 'x' ESCAPE", "0x", "1e", ".5e-3",
		"a NOT BETWEEN -1 AND +2", "NOT NOT NOT a", "- - - 1 = a", "a = 1 OR b = 2 OR c = 3",
		"a IS NOT NULL AND b IS NULL", "'é' LIKE '_'", "$a.b_c = 9223372036854775808",
	} {
		f.Add(s)
	}
	m := sample()
	plain := mapProps{"type": "order", "amount": "150", "flag": "true", "a": "1", "b": "x"}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q) error %v is not a *SyntaxError wrapping ErrSyntax", s, err)
			}
			if se.Pos < 1 || se.Pos > len([]rune(s))+1 {
				t.Fatalf("Parse(%q): position %d outside the input", s, se.Pos)
			}
			return
		}
		if sel.String() != s {
			t.Fatalf("String() = %q, want %q", sel.String(), s)
		}
		again, err := Parse(sel.String())
		if err != nil {
			t.Fatalf("String() of %q does not parse: %v", s, err)
		}
		got := sel.MatchesMessage(m, 2)
		_ = sel.Matches(plain)
		_ = sel.Matches(typedOnly{&Message{M: m}})
		if again.MatchesMessage(m, 2) != got {
			t.Fatalf("%q: reparsed selector selects differently", s)
		}
		if sel.root == nil {
			return
		}
		c := sel.root.canon()
		csel, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", c, s, err)
		}
		if c2 := csel.root.canon(); c2 != c {
			t.Fatalf("canonical form of %q is not stable: %q then %q", s, c, c2)
		}
		if csel.MatchesMessage(m, 2) != got {
			t.Fatalf("%q and its canonical form %q select differently", s, c)
		}
	})
}
