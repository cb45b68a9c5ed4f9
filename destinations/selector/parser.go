package selector

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits that keep hostile selectors from exhausting the stack.
const (
	maxNesting = 200  // parentheses, NOT and unary signs inside each other
	maxHeight  = 2000 // height of the expression tree (long chains of + - * / and comparisons)
)

// Selector is a parsed JMS message selector. It is immutable and safe for concurrent use.
// The nil *Selector, like the one for an empty selector, matches every message.
type Selector struct {
	src  string
	root *node // nil: the selector is empty and matches everything
}

// Parse parses a JMS selector. A selector that is empty or holds only white space and
// comments returns a Selector that matches every message (not nil, so String still
// returns the text). A selector that does not parse returns an error that is a
// *SyntaxError and wraps ErrSyntax.
func Parse(s string) (sel *Selector, err error) {
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*SyntaxError)
			if !ok {
				panic(r)
			}
			sel, err = nil, se
		}
	}()
	p := &parser{lx: lexer{src: s}}
	p.advance()
	if p.tok.kind == tEOF {
		return &Selector{src: s}, nil
	}
	root := p.expr()
	if p.tok.kind != tEOF {
		p.expected("operator or end of input")
	}
	p.wantBool(root)
	return &Selector{src: s, root: root}, nil
}

// String returns the selector's source text.
func (s *Selector) String() string {
	if s == nil {
		return ""
	}
	return s.src
}

// parser is a recursive-descent parser with one token of look-ahead. Each precedence
// level, lowest first, has its own method:
//
//	expr     = and { OR and }
//	and      = not { AND not }
//	not      = NOT not | equality
//	equality = relation { ("=" | "<>") relation | IS [NOT] NULL }
//	relation = sum { ("<" | "<=" | ">" | ">=") sum
//	               | [NOT] BETWEEN sum AND sum
//	               | [NOT] IN "(" string { "," string } ")"
//	               | [NOT] LIKE string [ESCAPE string] }
//	sum      = product { ("+" | "-") product }
//	product  = unary { ("*" | "/" | "%") unary }
//	unary    = ("+" | "-") unary | primary
//	primary  = literal | identifier | "(" expr ")"
type parser struct {
	lx      lexer
	tok     token // the current, not yet consumed token
	prevEnd int   // end offset of the last consumed token
	depth   int
}

func (p *parser) advance() {
	p.prevEnd = p.tok.end
	p.tok = p.lx.next()
}

// fail panics with a syntax error at byte offset off.
func (p *parser) fail(off int, format string, args ...any) {
	panic(newSyntaxError(p.lx.src, off, fmt.Sprintf(format, args...)))
}

// expected fails at the current token: "expected what, found <token>".
func (p *parser) expected(what string) {
	p.fail(p.tok.pos, "expected %s, found %s", what, p.describe(p.tok))
}

// describe renders a token for an error message: its source text, quoted and shortened.
func (p *parser) describe(t token) string {
	if t.kind == tEOF {
		return "end of input"
	}
	return quoteSource(p.lx.src[t.pos:t.end])
}

// quoteSource quotes a piece of the selector for an error message, shortened to 40
// characters.
func quoteSource(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		i, n := 0, 0
		for i = range s {
			if n == max {
				break
			}
			n++
		}
		s = s[:i] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// nest guards the recursion of the parser at the token that opens a level (at byte
// offset pos); the caller decrements p.depth when the level is done.
func (p *parser) nest(pos int) {
	p.depth++
	if p.depth > maxNesting {
		p.fail(pos, "expression nested too deeply (more than %d levels)", maxNesting)
	}
}

// mk finishes a node: its end offset and height, checked against maxHeight.
func (p *parser) mk(n *node, kids ...*node) *node {
	n.end = p.prevEnd
	h := 0
	for _, k := range kids {
		if k != nil && int(k.height) > h {
			h = int(k.height)
		}
	}
	if h+1 > maxHeight {
		p.fail(n.pos, "expression too complex (more than %d levels of operators)", maxHeight)
	}
	n.height = uint16(h + 1)
	return n
}

// wantBool fails unless n can yield a boolean: a condition, an identifier, TRUE, FALSE
// or NULL — not a number, an arithmetic expression or a string literal.
func (p *parser) wantBool(n *node) {
	if k := n.static(); k == Int || k == String {
		p.fail(n.pos, "expected boolean expression, found %s", quoteSource(p.lx.src[n.pos:n.end]))
	}
}

// wantValue fails when n is a condition used as an arithmetic operand.
func (p *parser) wantValue(n *node) {
	if n.static() == Bool {
		p.fail(n.pos, "expected numeric expression, found %s", quoteSource(p.lx.src[n.pos:n.end]))
	}
}

func (p *parser) expr() *node {
	first := p.and()
	if p.tok.kind != tOr {
		return first
	}
	n := &node{op: opOr, pos: first.pos, kids: []*node{first}}
	p.wantBool(first)
	for p.tok.kind == tOr {
		p.advance()
		k := p.and()
		p.wantBool(k)
		n.kids = append(n.kids, k)
	}
	return p.mk(n, n.kids...)
}

func (p *parser) and() *node {
	first := p.not()
	if p.tok.kind != tAnd {
		return first
	}
	n := &node{op: opAnd, pos: first.pos, kids: []*node{first}}
	p.wantBool(first)
	for p.tok.kind == tAnd {
		p.advance()
		k := p.not()
		p.wantBool(k)
		n.kids = append(n.kids, k)
	}
	return p.mk(n, n.kids...)
}

func (p *parser) not() *node {
	if p.tok.kind != tNot {
		return p.equality()
	}
	pos := p.tok.pos
	p.nest(pos)
	p.advance()
	x := p.not()
	p.depth--
	p.wantBool(x)
	return p.mk(&node{op: opNot, pos: pos, l: x}, x)
}

func (p *parser) equality() *node {
	l := p.relation()
	for {
		switch p.tok.kind {
		case tEq, tNe:
			o := opEq
			if p.tok.kind == tNe {
				o = opNe
			}
			p.advance()
			r := p.relation()
			l = p.mk(&node{op: o, pos: l.pos, l: l, r: r}, l, r)
		case tIs:
			p.advance()
			neg := false
			if p.tok.kind == tNot {
				neg = true
				p.advance()
			}
			if p.tok.kind != tNull {
				if neg {
					p.expected("NULL after IS NOT")
				}
				p.expected("NULL or NOT NULL after IS")
			}
			p.advance()
			l = p.mk(&node{op: opIsNull, neg: neg, pos: l.pos, l: l}, l)
		default:
			return l
		}
	}
}

func (p *parser) relation() *node {
	l := p.sum()
	for {
		var o op
		switch p.tok.kind {
		case tLt:
			o = opLt
		case tLe:
			o = opLe
		case tGt:
			o = opGt
		case tGe:
			o = opGe
		case tNot, tBetween, tIn, tLike:
			l = p.special(l)
			continue
		default:
			return l
		}
		p.advance()
		r := p.sum()
		l = p.mk(&node{op: o, pos: l.pos, l: l, r: r}, l, r)
	}
}

// special parses [NOT] BETWEEN, IN or LIKE after the operand l.
func (p *parser) special(l *node) *node {
	neg := false
	if p.tok.kind == tNot {
		neg = true
		p.advance()
	}
	switch p.tok.kind {
	case tBetween:
		p.advance()
		lo := p.sum()
		if p.tok.kind != tAnd {
			p.expected("AND in BETWEEN")
		}
		p.advance()
		hi := p.sum()
		return p.mk(&node{op: opBetween, neg: neg, pos: l.pos, l: l, r: lo, x: hi}, l, lo, hi)
	case tIn:
		p.advance()
		if p.tok.kind != tLParen {
			p.expected(`"(" after IN`)
		}
		p.advance()
		var list []string
		for {
			if p.tok.kind != tString {
				p.expected("string literal in IN list")
			}
			list = append(list, p.tok.str)
			p.advance()
			if p.tok.kind == tRParen {
				break
			}
			if p.tok.kind != tComma {
				p.expected(`"," or ")" in IN list`)
			}
			p.advance()
		}
		p.advance()
		return p.mk(&node{op: opIn, neg: neg, pos: l.pos, l: l, set: newStringSet(list)}, l)
	case tLike:
		p.advance()
		if p.tok.kind != tString {
			p.expected("string literal after LIKE")
		}
		pat, patPos := p.tok.str, p.tok.pos
		p.advance()
		esc, escText := rune(-1), ""
		if p.tok.kind == tEscape {
			p.advance()
			if p.tok.kind != tString {
				p.expected("string literal after ESCAPE")
			}
			escText = p.tok.str
			r, size := utf8.DecodeRuneInString(escText)
			if escText == "" || size != len(escText) {
				p.fail(p.tok.pos, "ESCAPE must be a single character, found %s", p.describe(p.tok))
			}
			esc = r
			p.advance()
		}
		lp, err := compileLike(pat, esc)
		if err != "" {
			p.fail(patPos, "%s", err)
		}
		lp.escText = escText
		return p.mk(&node{op: opLike, neg: neg, pos: l.pos, l: l, like: lp}, l)
	}
	p.expected("LIKE, BETWEEN or IN after NOT")
	return nil
}

func (p *parser) sum() *node {
	l := p.product()
	for p.tok.kind == tPlus || p.tok.kind == tMinus {
		o := opAdd
		if p.tok.kind == tMinus {
			o = opSub
		}
		p.advance()
		r := p.product()
		p.wantValue(l)
		p.wantValue(r)
		l = p.mk(&node{op: o, pos: l.pos, l: l, r: r}, l, r)
	}
	return l
}

func (p *parser) product() *node {
	l := p.unary()
	for p.tok.kind == tStar || p.tok.kind == tSlash || p.tok.kind == tPercent {
		var o op
		switch p.tok.kind {
		case tStar:
			o = opMul
		case tSlash:
			o = opDiv
		default:
			o = opMod
		}
		p.advance()
		r := p.unary()
		p.wantValue(l)
		p.wantValue(r)
		l = p.mk(&node{op: o, pos: l.pos, l: l, r: r}, l, r)
	}
	return l
}

func (p *parser) unary() *node {
	if p.tok.kind != tPlus && p.tok.kind != tMinus {
		return p.primary()
	}
	minus, pos := p.tok.kind == tMinus, p.tok.pos
	p.nest(pos)
	p.advance()
	x := p.unary()
	p.depth--
	p.wantValue(x)
	if !minus {
		return p.mk(&node{op: opPlus, pos: pos, l: x}, x)
	}
	if x.op == opLit && x.val.isNumber() { // fold -5 into a literal
		if x.val.kind == Int {
			x.val.i = -x.val.i
		} else {
			x.val.f = -x.val.f
		}
		x.pos = pos
		return p.mk(x)
	}
	return p.mk(&node{op: opNeg, pos: pos, l: x}, x)
}

func (p *parser) primary() *node {
	t := p.tok
	switch t.kind {
	case tNumber:
		p.advance()
		return p.mk(&node{op: opLit, pos: t.pos, val: t.num})
	case tString:
		p.advance()
		return p.mk(&node{op: opLit, pos: t.pos, val: StringValue(t.str)})
	case tTrue, tFalse:
		p.advance()
		return p.mk(&node{op: opLit, pos: t.pos, val: BoolValue(t.kind == tTrue)})
	case tNull:
		p.advance()
		return p.mk(&node{op: opLit, pos: t.pos})
	case tIdent:
		p.advance()
		f, hdr := resolveField(t.str)
		return p.mk(&node{op: opIdent, pos: t.pos, name: t.str, field: f, hdr: hdr})
	case tLParen:
		p.nest(t.pos)
		p.advance()
		x := p.expr()
		p.depth--
		if p.tok.kind != tRParen {
			p.expected(`")"`)
		}
		p.advance()
		x.pos, x.end = t.pos, p.prevEnd // the parenthesised text, for error messages
		return x
	}
	p.expected("expression")
	return nil
}

// canon renders the parsed tree fully parenthesised, for tests of precedence and for
// round trips: Parse(canon) yields the same canon.
func (n *node) canon() string {
	var b strings.Builder
	n.writeCanon(&b)
	return b.String()
}

func (n *node) writeCanon(b *strings.Builder) {
	not := func() {
		if n.neg {
			b.WriteString(" NOT")
		}
	}
	switch n.op {
	case opLit:
		b.WriteString(n.val.String())
	case opIdent:
		b.WriteString(n.name)
	case opAnd, opOr:
		sep := " AND "
		if n.op == opOr {
			sep = " OR "
		}
		b.WriteByte('(')
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			k.writeCanon(b)
		}
		b.WriteByte(')')
	case opNot, opNeg, opPlus:
		b.WriteString(map[op]string{opNot: "(NOT ", opNeg: "(-", opPlus: "(+"}[n.op])
		n.l.writeCanon(b)
		b.WriteByte(')')
	case opIsNull:
		b.WriteByte('(')
		n.l.writeCanon(b)
		b.WriteString(" IS")
		not()
		b.WriteString(" NULL)")
	case opBetween:
		b.WriteByte('(')
		n.l.writeCanon(b)
		not()
		b.WriteString(" BETWEEN ")
		n.r.writeCanon(b)
		b.WriteString(" AND ")
		n.x.writeCanon(b)
		b.WriteByte(')')
	case opIn:
		b.WriteByte('(')
		n.l.writeCanon(b)
		not()
		b.WriteString(" IN (")
		for i, s := range n.set.list {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(StringValue(s).String())
		}
		b.WriteString("))")
	case opLike:
		b.WriteByte('(')
		n.l.writeCanon(b)
		not()
		b.WriteString(" LIKE ")
		b.WriteString(StringValue(n.like.src).String())
		if n.like.escText != "" {
			b.WriteString(" ESCAPE ")
			b.WriteString(StringValue(n.like.escText).String())
		}
		b.WriteByte(')')
	default: // binary operators
		b.WriteByte('(')
		n.l.writeCanon(b)
		b.WriteString(opText[n.op])
		n.r.writeCanon(b)
		b.WriteByte(')')
	}
}

var opText = map[op]string{
	opEq: " = ", opNe: " <> ", opLt: " < ", opLe: " <= ", opGt: " > ", opGe: " >= ",
	opAdd: " + ", opSub: " - ", opMul: " * ", opDiv: " / ", opMod: " % ",
}
