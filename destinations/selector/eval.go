package selector

import (
	"math"

	"github.com/activemq-go/broker/persistence"
)

// op is the operation of a node.
type op uint8

const (
	opLit     op = iota // val
	opIdent             // name, field, hdr
	opAnd               // kids
	opOr                // kids
	opNot               // l
	opEq                // l = r
	opNe                // l <> r
	opLt                // l < r
	opLe                // l <= r
	opGt                // l > r
	opGe                // l >= r
	opAdd               // l + r
	opSub               // l - r
	opMul               // l * r
	opDiv               // l / r
	opMod               // l % r
	opNeg               // -l
	opPlus              // +l
	opBetween           // l [NOT] BETWEEN r AND x
	opIn                // l [NOT] IN set
	opLike              // l [NOT] LIKE like
	opIsNull            // l IS [NOT] NULL
)

// node is one node of a compiled selector. One concrete type with a switch, rather than
// an interface per operator, keeps evaluation free of dynamic calls, so the evaluation
// state stays on the stack.
type node struct {
	op      op
	neg     bool   // NOT BETWEEN, NOT IN, NOT LIKE, IS NOT NULL
	field   field  // opIdent: the message field the name stands for
	height  uint16 // height of the subtree, bounded by maxHeight
	pos     int    // byte offset of the node's text, for error messages
	end     int
	l, r, x *node
	kids    []*node // opAnd, opOr
	val     Value   // opLit
	name    string  // opIdent: the property name as written
	hdr     string  // opIdent with fieldHeader: the message header to read
	set     *stringSet
	like    *likePattern
}

// static is the kind a node yields, as far as it is known before evaluation: Bool for
// conditions, Int for numbers of either kind, String for string literals and Null when
// only the message can tell (identifiers, NULL).
func (n *node) static() Kind {
	switch n.op {
	case opLit:
		if n.val.isNumber() {
			return Int
		}
		return n.val.kind
	case opIdent:
		return Null
	case opAdd, opSub, opMul, opDiv, opMod, opNeg, opPlus:
		return Int
	}
	return Bool
}

// env is the evaluation state of one Matches call: where property values come from.
type env struct {
	msg   *persistence.Message // set: read fields and headers directly
	dc    uint32               // delivery count for msg
	typed TypedProperties
	props Properties
}

// Matches reports whether the selector selects a message with the properties p: the
// expression must evaluate to TRUE; FALSE and unknown do not match. A nil or empty
// Selector matches everything.
//
// p is an interface, so a p that points to a value the caller builds per call escapes
// to the heap; to stay allocation-free either reuse the *Message (or other Properties)
// across calls, or use MatchesMessage.
func (s *Selector) Matches(p Properties) bool {
	if s == nil || s.root == nil {
		return true
	}
	var e env
	switch q := p.(type) {
	case *Message:
		if q != nil && q.M != nil {
			e.msg, e.dc = q.M, q.DeliveryCount
		}
	case TypedProperties:
		e.typed = q
	case nil:
	default:
		e.props = p
	}
	return s.root.test(&e) == triTrue
}

// MatchesMessage is Matches over a stored message, with the header names mapped as for
// Message. deliveryCount is JMSXDeliveryCount; 0 means m.RedeliveryCount+1. It never
// allocates.
func (s *Selector) MatchesMessage(m *persistence.Message, deliveryCount uint32) bool {
	if s == nil || s.root == nil {
		return true
	}
	e := env{msg: m, dc: deliveryCount}
	return s.root.test(&e) == triTrue
}

// lookup returns the value of the property an identifier node names.
func (e *env) lookup(n *node) Value {
	switch {
	case e.msg != nil:
		return fieldValue(e.msg, e.dc, n.field, n.hdr)
	case e.typed != nil:
		return e.typed.Value(n.name)
	case e.props != nil:
		if v, ok := e.props.Get(n.name); ok {
			return StringValue(v)
		}
	}
	return Value{}
}

// eval evaluates the subtree n to a value; conditions yield Bool or Null (unknown).
// Conditions are evaluated by test; eval and test are kept small, so the frames of
// their recursion stay small.
func (n *node) eval(e *env) Value {
	switch n.op {
	case opLit:
		return n.val
	case opIdent:
		return e.lookup(n)
	case opAdd, opSub, opMul, opDiv, opMod, opNeg, opPlus:
		return n.arith(e)
	}
	return n.test(e).value()
}

// arith evaluates an arithmetic node. It is apart from eval so that the frame of eval,
// which every operand passes through, stays small.
func (n *node) arith(e *env) Value {
	switch n.op {
	case opNeg:
		return negate(n.l.eval(e))
	case opPlus:
		v, _ := toNumber(n.l.eval(e))
		return v
	}
	return arith(n.op, n.l.eval(e), n.r.eval(e))
}

// test evaluates the subtree n as a condition.
func (n *node) test(e *env) tri {
	switch n.op {
	case opAnd:
		res := triTrue
		for _, k := range n.kids {
			switch k.test(e) {
			case triFalse:
				return triFalse
			case triUnknown:
				res = triUnknown
			}
		}
		return res
	case opOr:
		res := triFalse
		for _, k := range n.kids {
			switch k.test(e) {
			case triTrue:
				return triTrue
			case triUnknown:
				res = triUnknown
			}
		}
		return res
	case opNot:
		return n.l.test(e).not()
	case opEq, opNe, opLt, opLe, opGt, opGe:
		return compareOp(n.op, compare(n.l.eval(e), n.r.eval(e)))
	case opBetween:
		return n.between(e)
	case opIn:
		return n.in(e)
	case opLike:
		return n.likes(e)
	case opIsNull:
		return triOf((n.l.eval(e).kind == Null) != n.neg)
	}
	return truth(n.eval(e))
}

// between evaluates l [NOT] BETWEEN r AND x as l >= r AND l <= x, or its negation.
func (n *node) between(e *env) tri {
	v := n.l.eval(e)
	res := compareOp(opGe, compare(v, n.r.eval(e)))
	if res != triFalse { // FALSE AND anything is FALSE
		switch hi := compareOp(opLe, compare(v, n.x.eval(e))); {
		case hi == triFalse:
			res = triFalse
		case hi == triUnknown:
			res = triUnknown
		}
	}
	if n.neg {
		return res.not()
	}
	return res
}

// in evaluates l [NOT] IN (...). Only strings can be in the list.
func (n *node) in(e *env) tri {
	v := n.l.eval(e)
	var res tri
	switch v.kind {
	case Null:
		return triUnknown
	case String:
		res = triOf(n.set.contains(v.s))
	default:
		res = triFalse
	}
	if n.neg {
		return res.not()
	}
	return res
}

// likes evaluates l [NOT] LIKE pattern. Only strings match.
func (n *node) likes(e *env) tri {
	v := n.l.eval(e)
	var res tri
	switch v.kind {
	case Null:
		return triUnknown
	case String:
		res = triOf(n.like.match(v.s))
	default:
		res = triFalse
	}
	if n.neg {
		return res.not()
	}
	return res
}

// negate computes unary minus; a value that is not a number gives NULL.
func negate(v Value) Value {
	v, ok := toNumber(v)
	switch {
	case !ok:
		return Value{}
	case v.kind == Int:
		return IntValue(-v.i)
	}
	return FloatValue(-v.f)
}

// compareOp turns the outcome of compare into the truth value of a comparison operator.
// A type mismatch is FALSE (JMS), so <>, defined as NOT =, is TRUE for it. Booleans are
// only equal or unequal, so every ordering operator is FALSE for them.
func compareOp(o op, r order) tri {
	if r == ordNull {
		return triUnknown
	}
	switch o {
	case opEq:
		return triOf(r == ordEqual || r == ordSame)
	case opNe:
		return triOf(r != ordEqual && r != ordSame)
	case opLt:
		return triOf(r == ordLess)
	case opLe:
		return triOf(r == ordLess || r == ordEqual)
	case opGt:
		return triOf(r == ordGreater)
	case opGe:
		return triOf(r == ordGreater || r == ordEqual)
	}
	return triUnknown
}

// arith computes an arithmetic operator. Strings that look like numbers are numbers
// here; any other operand that is not a number makes the result NULL, and so does an
// exact division or remainder by zero. Exact operands give an exact result (wrapping on
// overflow, as Java's long does); otherwise the result is approximate.
func arith(o op, a, b Value) Value {
	a, ok1 := toNumber(a)
	b, ok2 := toNumber(b)
	if !ok1 || !ok2 {
		return Value{} // NULL, a boolean, or a string that is not a number
	}
	if a.kind == Int && b.kind == Int {
		x, y := a.i, b.i
		switch o {
		case opAdd:
			return IntValue(x + y)
		case opSub:
			return IntValue(x - y)
		case opMul:
			return IntValue(x * y)
		case opDiv:
			if y == 0 {
				return Value{}
			}
			if y == -1 { // MinInt64 / -1 overflows; wrap as Java does
				return IntValue(-x)
			}
			return IntValue(x / y)
		case opMod:
			if y == 0 {
				return Value{}
			}
			if y == -1 {
				return IntValue(0)
			}
			return IntValue(x % y)
		}
	}
	x, y := a.float(), b.float()
	switch o {
	case opAdd:
		return FloatValue(x + y)
	case opSub:
		return FloatValue(x - y)
	case opMul:
		return FloatValue(x * y)
	case opDiv:
		return FloatValue(x / y)
	case opMod:
		return FloatValue(math.Mod(x, y))
	}
	return Value{}
}

// stringSet is the list of an IN expression, with a map once the list is long.
type stringSet struct {
	list []string // as written, for canon
	m    map[string]struct{}
}

func newStringSet(list []string) *stringSet {
	s := &stringSet{list: list}
	if len(list) > 8 {
		s.m = make(map[string]struct{}, len(list))
		for _, v := range list {
			s.m[v] = struct{}{}
		}
	}
	return s
}

func (s *stringSet) contains(v string) bool {
	if s.m != nil {
		_, ok := s.m[v]
		return ok
	}
	for _, w := range s.list {
		if w == v {
			return true
		}
	}
	return false
}
