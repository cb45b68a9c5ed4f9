package selector

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tString // 'text' with '' for a quote
	tNumber // exact or approximate numeric literal

	// Keywords, matched case-insensitively.
	tNot
	tAnd
	tOr
	tBetween
	tLike
	tEscape
	tIn
	tIs
	tTrue
	tFalse
	tNull

	// Punctuation and operators.
	tLParen
	tRParen
	tComma
	tEq
	tNe
	tLt
	tLe
	tGt
	tGe
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
)

// keywords maps upper-case keyword spellings to their token kinds.
var keywords = map[string]tokKind{
	"NOT": tNot, "AND": tAnd, "OR": tOr, "BETWEEN": tBetween, "LIKE": tLike,
	"ESCAPE": tEscape, "IN": tIn, "IS": tIs, "TRUE": tTrue, "FALSE": tFalse, "NULL": tNull,
}

// token is one lexical token. pos and end are byte offsets into the source.
type token struct {
	kind tokKind
	pos  int
	end  int
	str  string // tIdent: the name; tString: the unescaped text
	num  Value  // tNumber: the value, Int or Float
}

// lexer splits a selector into tokens. It reports errors by panicking with a
// *SyntaxError, which Parse recovers.
type lexer struct {
	src string
	off int
}

// fail panics with a syntax error at byte offset off.
func (lx *lexer) fail(off int, format string, args ...any) {
	panic(newSyntaxError(lx.src, off, fmt.Sprintf(format, args...)))
}

// newSyntaxError converts byte offset off of src into a 1-based character column.
func newSyntaxError(src string, off int, msg string) *SyntaxError {
	if off > len(src) {
		off = len(src)
	}
	return &SyntaxError{Pos: utf8.RuneCountInString(src[:off]) + 1, Msg: msg}
}

// next returns the next token, skipping white space and comments.
func (lx *lexer) next() token {
	lx.skipSpace()
	src, i := lx.src, lx.off
	if i >= len(src) {
		return token{kind: tEOF, pos: i, end: i}
	}
	c := src[i]
	switch {
	case isIdentStart(c):
		j := i + 1
		for j < len(src) && isIdentPart(src[j]) {
			j++
		}
		lx.off = j
		word := src[i:j]
		if len(word) <= len("BETWEEN") {
			if k, ok := keywords[strings.ToUpper(word)]; ok {
				return token{kind: k, pos: i, end: j}
			}
		}
		return token{kind: tIdent, pos: i, end: j, str: word}
	case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
		return lx.number()
	case c == '\'':
		return lx.string()
	}
	kind, n := tEOF, 1
	switch c {
	case '(':
		kind = tLParen
	case ')':
		kind = tRParen
	case ',':
		kind = tComma
	case '=':
		kind = tEq
	case '+':
		kind = tPlus
	case '-':
		kind = tMinus
	case '*':
		kind = tStar
	case '/':
		kind = tSlash
	case '%':
		kind = tPercent
	case '<':
		kind = tLt
		if i+1 < len(src) {
			switch src[i+1] {
			case '=':
				kind, n = tLe, 2
			case '>':
				kind, n = tNe, 2
			}
		}
	case '>':
		kind = tGt
		if i+1 < len(src) && src[i+1] == '=' {
			kind, n = tGe, 2
		}
	default:
		r, _ := utf8.DecodeRuneInString(src[i:])
		lx.fail(i, "unexpected character %q", r)
	}
	lx.off = i + n
	return token{kind: kind, pos: i, end: i + n}
}

// skipSpace skips white space, "-- ..." line comments and "/* ... */" block comments.
func (lx *lexer) skipSpace() {
	src := lx.src
	for lx.off < len(src) {
		switch c := src[lx.off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			lx.off++
		case strings.HasPrefix(src[lx.off:], "--"):
			j := strings.IndexAny(src[lx.off:], "\n\r")
			if j < 0 {
				lx.off = len(src)
			} else {
				lx.off += j + 1
			}
		case strings.HasPrefix(src[lx.off:], "/*"):
			j := strings.Index(src[lx.off+2:], "*/")
			if j < 0 {
				lx.fail(lx.off, "unterminated comment")
			}
			lx.off += 2 + j + 2
		default:
			return
		}
	}
}

// string scans a string literal. A quote inside it is written twice.
func (lx *lexer) string() token {
	src, start := lx.src, lx.off
	i := start + 1
	var b *strings.Builder // only when the literal contains ''
	for {
		j := strings.IndexByte(src[i:], '\'')
		if j < 0 {
			lx.fail(start, "unterminated string literal")
		}
		j += i
		if j+1 < len(src) && src[j+1] == '\'' { // escaped quote
			if b == nil {
				b = new(strings.Builder)
			}
			b.WriteString(src[i : j+1])
			i = j + 2
			continue
		}
		lx.off = j + 1
		text := src[start+1 : j]
		if b != nil {
			b.WriteString(src[i:j])
			text = b.String()
		}
		return token{kind: tString, pos: start, end: j + 1, str: text}
	}
}

// number scans a numeric literal: decimal (with an optional L suffix), hexadecimal
// 0x.., octal 0.., or approximate 1.5, .5, 1., 1E10, 1.5e-3.
func (lx *lexer) number() token {
	src, start := lx.src, lx.off
	i := start
	digits := func() int {
		s := i
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		return i - s
	}
	var v Value
	switch {
	case src[i] == '0' && i+1 < len(src) && (src[i+1] == 'x' || src[i+1] == 'X'):
		i += 2
		s := i
		for i < len(src) && isHex(src[i]) {
			i++
		}
		if i == s {
			lx.fail(start, "malformed number %s: no hexadecimal digits", quoteSource(src[start:i]))
		}
		u, err := strconv.ParseUint(src[s:i], 16, 64)
		if err != nil || u > math.MaxInt64 {
			lx.fail(start, "number %s out of range", quoteSource(src[start:i]))
		}
		v = IntValue(int64(u))
		i = lx.longSuffix(i)
	default:
		digits()
		exact := true
		if i < len(src) && src[i] == '.' {
			exact = false
			i++
			digits()
		}
		if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
			j := i + 1
			if j < len(src) && (src[j] == '+' || src[j] == '-') {
				j++
			}
			if j < len(src) && isDigit(src[j]) {
				exact = false
				i = j
				digits()
			}
		}
		text := src[start:i]
		switch {
		case !exact:
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				lx.fail(start, "number %s out of range", quoteSource(text))
			}
			v = FloatValue(f)
		case len(text) > 1 && text[0] == '0': // octal
			u, err := strconv.ParseUint(text[1:], 8, 64)
			if err != nil || u > math.MaxInt64 {
				if strings.Trim(text, "01234567") != "" {
					lx.fail(start, "malformed octal number %s", quoteSource(text))
				}
				lx.fail(start, "number %s out of range", quoteSource(text))
			}
			v = IntValue(int64(u))
			i = lx.longSuffix(i)
		default:
			if n, ok := parseDecimal(text); ok {
				v = IntValue(n)
			} else { // beyond int64: approximate, as ActiveMQ falls back to BigDecimal
				f, err := strconv.ParseFloat(text, 64)
				if err != nil {
					lx.fail(start, "number %s out of range", quoteSource(text))
				}
				v = FloatValue(f)
			}
			i = lx.longSuffix(i)
		}
	}
	if i < len(src) && (isIdentPart(src[i])) {
		j := i
		for j < len(src) && isIdentPart(src[j]) {
			j++
		}
		lx.fail(start, "malformed number %s", quoteSource(src[start:j]))
	}
	lx.off = i
	return token{kind: tNumber, pos: start, end: i, num: v}
}

// longSuffix skips an L or l after an exact number.
func (lx *lexer) longSuffix(i int) int {
	if i < len(lx.src) && (lx.src[i] == 'L' || lx.src[i] == 'l') {
		return i + 1
	}
	return i
}

// isIdentStart reports whether c may begin an identifier: [A-Za-z_$].
func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

// isIdentPart reports whether c may continue an identifier: [A-Za-z0-9_$.].
func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '.' }

func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
