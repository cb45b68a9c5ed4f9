package selector

import (
	"math"
	"strconv"
	"strings"
)

// Kind is the type of a Value.
type Kind uint8

const (
	// Null is the kind of the zero Value: a property that is not set, the NULL literal,
	// or an arithmetic result that cannot be computed. It reads as "unknown".
	Null Kind = iota
	// Bool is TRUE or FALSE.
	Bool
	// Int is an exact number (int64).
	Int
	// Float is an approximate number (float64).
	Float
	// String is a character string.
	String
)

// Value is one operand of a selector expression: a small tagged struct that is passed
// by value and never boxed, so evaluating a selector does not allocate. The zero Value
// is Null. TypedProperties implementations build Values with NullValue, BoolValue,
// IntValue, FloatValue and StringValue.
type Value struct {
	kind Kind
	b    bool
	i    int64
	f    float64
	s    string
}

// NullValue returns the Null value: the property is not set.
func NullValue() Value { return Value{} }

// BoolValue returns a boolean value.
func BoolValue(b bool) Value { return Value{kind: Bool, b: b} }

// IntValue returns an exact numeric value.
func IntValue(i int64) Value { return Value{kind: Int, i: i} }

// FloatValue returns an approximate numeric value.
func FloatValue(f float64) Value { return Value{kind: Float, f: f} }

// StringValue returns a string value. Strings that look like numbers are compared
// numerically against numbers (see the package documentation).
func StringValue(s string) Value { return Value{kind: String, s: s} }

// Kind reports the type of v.
func (v Value) Kind() Kind { return v.kind }

// String renders v as selector source text: a literal that parses back to v.
func (v Value) String() string {
	switch v.kind {
	case Bool:
		if v.b {
			return "TRUE"
		}
		return "FALSE"
	case Int:
		return strconv.FormatInt(v.i, 10)
	case Float:
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") { // "1" would read back as an exact number
			s += ".0"
		}
		return s
	case String:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	}
	return "NULL"
}

// isNumber reports whether v is Int or Float.
func (v Value) isNumber() bool { return v.kind == Int || v.kind == Float }

// float returns a numeric v as float64.
func (v Value) float() float64 {
	if v.kind == Int {
		return float64(v.i)
	}
	return v.f
}

// tri is a truth value of SQL's three-valued logic.
type tri uint8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

func (t tri) not() tri {
	switch t {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triUnknown
}

func (t tri) value() Value {
	if t == triUnknown {
		return Value{}
	}
	return BoolValue(t == triTrue)
}

// truth reads v as a condition: booleans as themselves, the strings "true" and "false"
// (any case, as a STOMP header carries a boolean) as booleans, everything else —
// Null, numbers, other strings — as unknown.
func truth(v Value) tri {
	switch v.kind {
	case Bool:
		return triOf(v.b)
	case String:
		if b, ok := parseBool(v.s); ok {
			return triOf(b)
		}
	}
	return triUnknown
}

// parseBool accepts "true" and "false" in any case.
func parseBool(s string) (b, ok bool) {
	switch {
	case strings.EqualFold(s, "true"):
		return true, true
	case strings.EqualFold(s, "false"):
		return false, true
	}
	return false, false
}

// toNumber converts v for arithmetic and numeric comparison: numbers stay as they are,
// a string that parses as a number becomes that number; anything else fails.
func toNumber(v Value) (Value, bool) {
	switch v.kind {
	case Int, Float:
		return v, true
	case String:
		return parseNumber(v.s)
	}
	return Value{}, false
}

// parseNumber parses a property string as a number without allocating:
// [+-]digits → Int (Float when it does not fit in int64), and
// [+-](digits[.digits]|.digits)[(e|E)[+-]digits] → Float. Nothing else is a number —
// no surrounding spaces, no hex, no "Infinity" or "NaN".
func parseNumber(s string) (Value, bool) {
	i, n := 0, len(s)
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < n && isDigit(s[i]) {
		i++
	}
	digits := i - start
	exact := true
	if i < n && s[i] == '.' {
		exact = false
		i++
		fs := i
		for i < n && isDigit(s[i]) {
			i++
		}
		digits += i - fs
	}
	if digits == 0 {
		return Value{}, false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		exact = false
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		es := i
		for i < n && isDigit(s[i]) {
			i++
		}
		if i == es {
			return Value{}, false
		}
	}
	if i != n {
		return Value{}, false
	}
	if exact {
		if v, ok := parseDecimal(s); ok {
			return IntValue(v), true
		}
	}
	// The syntax is checked, so the only error left is ErrRange, for which ParseFloat
	// returns ±Inf or 0 as Java's Double.valueOf does.
	f, _ := strconv.ParseFloat(s, 64)
	return FloatValue(f), true
}

// parseDecimal parses [+-]digits into an int64; ok is false on overflow.
func parseDecimal(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// order is the outcome of comparing two values.
type order uint8

const (
	ordLess     order = iota
	ordEqual          // equal numbers, strings or booleans
	ordGreater        // greater
	ordSame           // equal booleans: equal, but neither <= nor >= applies
	ordUnequal        // not equal and not ordered: different booleans, NaN
	ordMismatch       // the types cannot be compared, even after conversion
	ordNull           // an operand is Null: the result is unknown
)

// compare compares a with b. Numbers compare numerically (exactly when both are Int),
// strings byte-wise, booleans only for equality. A string compared with a number is
// converted to a number, and with a boolean to a boolean ("true"/"false"); when the
// conversion fails, or the types differ otherwise, the result is ordMismatch.
func compare(a, b Value) order {
	if a.kind == Null || b.kind == Null {
		return ordNull
	}
	if a.kind != b.kind {
		var ok bool
		switch {
		case a.kind == String && b.isNumber():
			a, ok = parseNumber(a.s)
		case b.kind == String && a.isNumber():
			b, ok = parseNumber(b.s)
		case a.kind == String && b.kind == Bool:
			a.b, ok = parseBool(a.s)
			a.kind = Bool
		case b.kind == String && a.kind == Bool:
			b.b, ok = parseBool(b.s)
			b.kind = Bool
		case a.isNumber() && b.isNumber():
			ok = true
		}
		if !ok {
			return ordMismatch
		}
	}
	switch a.kind {
	case Bool:
		if b.kind != Bool {
			return ordMismatch
		}
		if a.b == b.b {
			return ordSame
		}
		return ordUnequal
	case String:
		switch {
		case a.s < b.s:
			return ordLess
		case a.s > b.s:
			return ordGreater
		}
		return ordEqual
	}
	if !b.isNumber() {
		return ordMismatch
	}
	if a.kind == Int && b.kind == Int {
		switch {
		case a.i < b.i:
			return ordLess
		case a.i > b.i:
			return ordGreater
		}
		return ordEqual
	}
	x, y := a.float(), b.float()
	switch {
	case x < y:
		return ordLess
	case x > y:
		return ordGreater
	case x == y:
		return ordEqual
	}
	return ordUnequal // NaN
}
