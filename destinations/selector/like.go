package selector

import (
	"strings"
	"unicode/utf8"
)

// likeKind selects the matcher of a LIKE pattern. The common shapes get a direct
// strings function; everything else runs the general matcher.
type likeKind uint8

const (
	likeExact    likeKind = iota // 'abc'
	likePrefix                   // 'abc%'
	likeSuffix                   // '%abc'
	likeContains                 // '%abc%'
	likeAny                      // '%' (matches every string)
	likeGeneral                  // anything with '_' or '%' inside
)

// likeElem is one element of a general pattern: a literal run, '_' or '%'.
type likeElem struct {
	kind byte // 'l' literal, '_' one character, '%' any sequence
	lit  string
}

// likePattern is a LIKE pattern compiled once, at parse time.
type likePattern struct {
	src     string // the pattern as written (unescaped from its string literal)
	escText string // the ESCAPE character as written, "" for none
	kind    likeKind
	lit     string // the literal of the simple kinds
	elems   []likeElem
}

// compileLike compiles pattern with the escape character esc (-1 for none). '%' matches
// any sequence of characters, '_' exactly one character (a UTF-8 encoded rune, or a
// single byte that is not valid UTF-8); esc makes the character after it literal. It
// returns a message instead of an error for a pattern that ends with esc.
func compileLike(pattern string, esc rune) (*likePattern, string) {
	lp := &likePattern{src: pattern}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			lp.elems = append(lp.elems, likeElem{kind: 'l', lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRuneInString(pattern[i:])
		switch {
		case esc >= 0 && r == esc && size == utf8.RuneLen(esc):
			i += size
			if i >= len(pattern) {
				return nil, "LIKE pattern ends with the ESCAPE character"
			}
			_, size = utf8.DecodeRuneInString(pattern[i:])
			lit.WriteString(pattern[i : i+size])
		case r == '%':
			flush()
			if n := len(lp.elems); n == 0 || lp.elems[n-1].kind != '%' { // %% is %
				lp.elems = append(lp.elems, likeElem{kind: '%'})
			}
		case r == '_':
			flush()
			lp.elems = append(lp.elems, likeElem{kind: '_'})
		default:
			lit.WriteString(pattern[i : i+size])
		}
		i += size
	}
	flush()
	lp.classify()
	return lp, ""
}

// classify picks a direct matcher for the common pattern shapes.
func (lp *likePattern) classify() {
	e := lp.elems
	is := func(i int, kind byte) bool { return i < len(e) && e[i].kind == kind }
	lp.kind = likeGeneral
	switch {
	case len(e) == 0:
		lp.kind = likeExact // '' matches only ''
	case len(e) == 1 && is(0, 'l'):
		lp.kind, lp.lit = likeExact, e[0].lit
	case len(e) == 1 && is(0, '%'):
		lp.kind = likeAny
	case len(e) == 2 && is(0, 'l') && is(1, '%'):
		lp.kind, lp.lit = likePrefix, e[0].lit
	case len(e) == 2 && is(0, '%') && is(1, 'l'):
		lp.kind, lp.lit = likeSuffix, e[1].lit
	case len(e) == 3 && is(0, '%') && is(1, 'l') && is(2, '%'):
		lp.kind, lp.lit = likeContains, e[1].lit
	}
}

// match reports whether s matches the pattern. It does not allocate.
func (lp *likePattern) match(s string) bool {
	switch lp.kind {
	case likeExact:
		return s == lp.lit
	case likePrefix:
		return strings.HasPrefix(s, lp.lit)
	case likeSuffix:
		return strings.HasSuffix(s, lp.lit)
	case likeContains:
		return strings.Contains(s, lp.lit)
	case likeAny:
		return true
	}
	return lp.matchGeneral(s)
}

// matchGeneral is the classic wildcard matcher: elements are matched left to right and
// on a mismatch the most recent '%' takes one more character. Backing up to the most
// recent '%' only is enough, so the time is O(len(s) * len(pattern)) at worst.
func (lp *likePattern) matchGeneral(s string) bool {
	e := lp.elems
	pi, si := 0, 0
	starPi, starSi := -1, 0
	for {
		if pi < len(e) {
			switch el := e[pi]; el.kind {
			case '%':
				starPi, starSi = pi, si
				pi++
				continue
			case '_':
				if si < len(s) {
					_, n := utf8.DecodeRuneInString(s[si:])
					si += n
					pi++
					continue
				}
			default:
				if strings.HasPrefix(s[si:], el.lit) {
					si += len(el.lit)
					pi++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		if starPi < 0 || starSi >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starSi:])
		starSi += n
		pi, si = starPi+1, starSi
	}
}
