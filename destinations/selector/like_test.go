package selector

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// likeRef is a slow, obviously correct LIKE over runes: p is a list of pattern items,
// each a rune, or -1 for '%' and -2 for '_'.
func likeRef(p []rune, s []rune) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	switch p[0] {
	case -1:
		for i := 0; i <= len(s); i++ {
			if likeRef(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case -2:
		return len(s) > 0 && likeRef(p[1:], s[1:])
	}
	return len(s) > 0 && s[0] == p[0] && likeRef(p[1:], s[1:])
}

// refItems turns a pattern with escape character esc into likeRef items.
func refItems(pattern string, esc rune) []rune {
	var items []rune
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == esc:
			i++
			items = append(items, rs[i])
		case r == '%':
			items = append(items, -1)
		case r == '_':
			items = append(items, -2)
		default:
			items = append(items, r)
		}
	}
	return items
}

func TestLikeAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'b', 'é', '%', '_', '!'}
	gen := func(n int, pattern bool) string {
		var b strings.Builder
		for range rng.IntN(n) {
			r := alphabet[rng.IntN(len(alphabet))]
			if !pattern && (r == '%' || r == '_') && rng.IntN(2) == 0 {
				r = 'a'
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	for range 20000 {
		pat, s := gen(8, true), gen(10, false)
		esc := rune(-1)
		if rng.IntN(2) == 0 {
			esc = '!'
		}
		lp, msg := compileLike(pat, esc)
		if msg != "" {
			trailing := len(pat) - len(strings.TrimRight(pat, "!"))
			require.True(t, esc == '!' && trailing%2 == 1, "pattern %q: %s", pat, msg)
			continue
		}
		want := likeRef(refItems(pat, esc), []rune(s))
		require.Equal(t, want, lp.match(s), "pattern %q escape %q string %q", pat, esc, s)
	}
}

func TestLikeShapes(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		kind    likeKind
	}{
		{"", likeExact}, {"abc", likeExact}, {"abc%", likePrefix}, {"%abc", likeSuffix},
		{"%abc%", likeContains}, {"%", likeAny}, {"%%", likeAny}, {"a_c", likeGeneral},
		{"a%c", likeGeneral}, {"_", likeGeneral},
	} {
		lp, msg := compileLike(tt.pattern, -1)
		require.Empty(t, msg)
		assert.Equal(t, tt.kind, lp.kind, tt.pattern)
	}
	lp, _ := compileLike(`100\%`, '\\')
	assert.Equal(t, likeExact, lp.kind)
	assert.True(t, lp.match("100%"))
	assert.False(t, lp.match("1000"))

	// '_' is one character, also for invalid UTF-8 bytes.
	lp, _ = compileLike("a_b", -1)
	assert.True(t, lp.match("a\xffb"))
	assert.True(t, lp.match("a€b"))
	assert.True(t, utf8.ValidString("a€b"))
	assert.False(t, lp.match("a€€b"))
}

func TestLikeWorstCase(t *testing.T) {
	lp, _ := compileLike("%a%a%a%a%a%a%b", -1)
	s := strings.Repeat("a", 10000)
	assert.False(t, lp.match(s)) // quadratic at worst, not exponential
}
