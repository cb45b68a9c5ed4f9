package selector

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// sample is the fixed message the expression table is evaluated over.
func sample() *persistence.Message {
	return &persistence.Message{
		Dest: "queue://ORDERS",
		Seq:  42,
		ID:   "ID:1",
		Headers: persistence.Headers{
			"type", "order",
			"amount", "150",
			"price", "9.99",
			"region", "EU",
			"name", "abcdef",
			"count", "10",
			"nine", "9",
			"flag", "true",
			"flagF", "FALSE",
			"word", "abc",
			"pct", "50%",
			"under", "a_b",
			"empty", "",
			"neg", "-5",
			"big", "9223372036854775808",
			"sci", "1e3",
			"hex", "0x10",
			"spaced", " 5",
			"quote", "it's",
			"unicode", "héllo",
			"correlation-id", "corr-1",
			"reply-to", "/queue/reply",
			"JMSXGroupID", "g1",
			"JMSXGroupSeq", "3",
			"a.b", "dotted",
			"$x", "dollar",
			"Case", "upper",
			"case", "lower",
			"dup", "first",
			"dup", "second",
		},
		Persistent: true,
		Priority:   7,
		Timestamp:  1700000000000,
	}
}

const sampleDeliveryCount = 2

var exprTests = []struct {
	sel  string
	want bool
}{
	// Comparison of strings and numbers.
	{"type = 'order'", true},
	{"type = 'ORDER'", false},
	{"type <> 'order'", false},
	{"type <> 'x'", true},
	{"amount > 100", true},
	{"amount >= 150", true},
	{"amount < 150", false},
	{"amount <= 150", true},
	{"amount = 150", true},
	{"amount = 150.0", true},
	{"amount = '150'", true},
	{"amount = '150.0'", false}, // two strings compare as strings
	{"price > 9.9", true},
	{"price < 10", true},
	{"price = 9.99", true},
	{"type > 'a' AND type < 'p'", true}, // strings order byte-wise

	// Numeric-looking headers: numeric against numbers, string against strings.
	{"count > 9", true},
	{"count > nine", false}, // '10' > '9' as strings
	{"count < '9'", true},
	{"'10' > 9", true},
	{"'10' > '9'", false},
	{"word > 5", false}, // 'abc' is no number: FALSE
	{"NOT (word > 5)", true},
	{"word = 5", false},
	{"word <> 5", true}, // <> is NOT =
	{"neg < 0", true},
	{"neg = -5", true},
	{"big > 1000", true}, // beyond int64: approximate
	{"sci = 1000", true},
	{"hex = 16", false}, // only decimal strings are numbers
	{"spaced = 5", false},
	{"empty = ''", true},
	{"empty = 0", false},
	{"empty IS NULL", false},
	{"flag = TRUE", true},
	{"flag = 'true'", true},
	{"flagF = FALSE", true},
	{"flag = 1", false},
	{"word = TRUE", false},

	// Exact and approximate literals.
	{"1 = 1.0", true},
	{"0.1 + 0.2 = 0.3", false},
	{"1 / 2 = 0", true},
	{"1.0 / 2 = 0.5", true},
	{"7 % 3 = 1", true},
	{"-7 % 3 = -1", true},
	{"7.5 % 2 = 1.5", true},
	{"1E2 = 100", true},
	{"1e-2 = 0.01", true},
	{".5 = 0.5", true},
	{"1. = 1", true},
	{"0x1F = 31", true},
	{"0XfF = 255", true},
	{"017 = 15", true},
	{"0 = 00", true},
	{"10L = 10", true},
	{"0x10L = 16", true},
	{"9223372036854775807 > 0", true},
	{"9223372036854775808 > 1", true},
	{"-9223372036854775807 < 0", true},

	// Arithmetic and precedence.
	{"1 + 2 * 3 = 7", true},
	{"(1 + 2) * 3 = 9", true},
	{"10 - 2 - 3 = 5", true},
	{"100 / 10 / 2 = 5", true},
	{"2 * 3 + 4 * 5 = 26", true},
	{"-amount = -150", true},
	{"- -5 = 5", true},
	{"-(2 + 3) = -5", true},
	{"+5 = 5", true},
	{"+count = 10", true},
	{"amount + 1 = 151", true},
	{"amount * 2 > 299.5", true},
	{"amount - 50 BETWEEN 99 AND 101", true},
	{"amount / 0 IS NULL", true},
	{"amount % 0 IS NULL", true},
	{"amount / 0.0 > 1000000", true},
	{"word + 1 IS NULL", true},
	{"missing + 1 IS NULL", true},
	{"missing + 1 > 0", false},
	{"1 + 1 = 2 AND 2 * 2 = 4", true},
	{"1 < 2 = TRUE", true}, // (1 < 2) = TRUE: relations bind tighter than =
	{"TRUE = 1 < 2", true},

	// NULL and unknown, for every operator.
	{"missing = 1", false},
	{"NOT (missing = 1)", false},
	{"missing <> 1", false},
	{"NOT (missing <> 1)", false},
	{"missing < 1", false},
	{"NOT missing < 1", false},
	{"NOT missing >= 1", false},
	{"NOT missing = 1", false},
	{"missing = 1 AND FALSE", false},
	{"NOT (missing = 1 AND FALSE)", true}, // FALSE AND unknown is FALSE
	{"NOT (missing = 1 AND TRUE)", false}, // TRUE AND unknown is unknown
	{"missing = 1 OR TRUE", true},         // TRUE OR unknown is TRUE
	{"missing = 1 OR FALSE", false},
	{"NOT (missing = 1 OR FALSE)", false}, // FALSE OR unknown is unknown
	{"missing > 1 OR type = 'order'", true},
	{"missing IS NULL", true},
	{"missing IS NOT NULL", false},
	{"type IS NOT NULL", true},
	{"type IS NULL", false},
	{"NULL IS NULL", true},
	{"NULL = NULL", false},
	{"NOT (NULL = NULL)", false},
	{"missing BETWEEN 1 AND 2", false},
	{"missing NOT BETWEEN 1 AND 2", false},
	{"amount BETWEEN missing AND 200", false},
	{"NOT (amount BETWEEN missing AND 200)", false},
	{"NOT (amount BETWEEN 200 AND missing)", true}, // FALSE AND unknown
	{"amount NOT BETWEEN 200 AND missing", true},
	{"missing IN ('a')", false},
	{"missing NOT IN ('a')", false},
	{"missing LIKE 'a%'", false},
	{"missing NOT LIKE 'a%'", false},
	{"(missing + 1) IS NULL AND NOT (missing IS NOT NULL)", true},
	{"TRUE", true},
	{"FALSE", false},
	{"NULL", false},
	{"NOT NULL", false},
	{"missing", false},
	{"NOT missing", false},

	// Booleans and logical operators.
	{"flag", true},
	{"flagF", false},
	{"NOT flagF", true},
	{"word", false},
	{"NOT word", false},
	{"TRUE = TRUE", true},
	{"TRUE <> FALSE", true},
	{"TRUE > FALSE", false},
	{"TRUE >= TRUE", false},
	{"TRUE AND FALSE OR TRUE", true},
	{"FALSE AND (FALSE OR TRUE)", false},
	{"TRUE OR TRUE AND FALSE", true},
	{"NOT TRUE OR TRUE", true}, // (NOT TRUE) OR TRUE
	{"NOT FALSE AND FALSE", false},
	{"NOT amount = 100", true}, // NOT (amount = 100)
	{"NOT NOT TRUE", true},

	// BETWEEN.
	{"amount BETWEEN 100 AND 200", true},
	{"amount BETWEEN 150 AND 150", true},
	{"amount NOT BETWEEN 100 AND 200", false},
	{"amount BETWEEN 200 AND 100", false},
	{"price BETWEEN 9 AND 10", true},
	{"count BETWEEN 5 AND 20", true},
	{"word BETWEEN 1 AND 5", false},
	{"word NOT BETWEEN 1 AND 5", true},
	{"type BETWEEN 'a' AND 'p'", true},
	{"amount BETWEEN 100 AND 200 AND type = 'order'", true},
	{"amount BETWEEN 100 + 40 AND 2 * 80", true},

	// IN.
	{"region IN ('EU', 'US')", true},
	{"region IN ('US')", false},
	{"region NOT IN ('US', 'APAC')", true},
	{"region NOT IN ('EU')", false},
	{"region IN ('eu')", false},
	{"nine IN ('9')", true},
	{"JMSPriority IN ('7')", false}, // a number is not a string
	{"JMSPriority NOT IN ('7')", true},
	{"region IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'EU')", true},
	{"region IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'US')", false},
	{"quote IN ('it''s')", true},

	// LIKE.
	{"name LIKE 'abc%'", true},
	{"name LIKE 'abc'", false},
	{"name LIKE 'abcdef'", true},
	{"name LIKE '%def'", true},
	{"name LIKE '%cd%'", true},
	{"name LIKE '%xy%'", false},
	{"name LIKE 'a_c%'", true},
	{"name LIKE '______'", true},
	{"name LIKE '_____'", false},
	{"name LIKE 'a%d%f'", true},
	{"name LIKE 'a%c%e_'", true},
	{"name LIKE 'a%x%'", false},
	{"name LIKE '%%%'", true},
	{"name NOT LIKE 'x%'", true},
	{"name NOT LIKE 'a%'", false},
	{`pct LIKE '50\%' ESCAPE '\'`, true},
	{`pct LIKE '5_\%' ESCAPE '\'`, true},
	{`name LIKE '\a%' ESCAPE '\'`, true},
	{`under LIKE 'a\_b' ESCAPE '\'`, true},
	{`name LIKE 'a\_c%' ESCAPE '\'`, false},
	{"pct LIKE '50!%' ESCAPE '!'", true},
	{"pct LIKE '50%%' ESCAPE '%'", true},
	{"unicode LIKE 'h_llo'", true},
	{"unicode LIKE 'h__llo'", false},
	{"amount LIKE '1%'", true},
	{"JMSPriority LIKE '7'", false}, // LIKE applies to strings only
	{"empty LIKE '%'", true},
	{"empty LIKE ''", true},
	{"empty LIKE '_'", false},
	{"word LIKE 'a%c'", true},
	{"word LIKE 'a%b'", false},

	// Keywords are case-insensitive, identifiers case-sensitive.
	{"type = 'order' and amount > 100", true},
	{"Type = 'order'", false},
	{"region In ('EU') AnD NoT (amount BeTwEeN 1 aNd 2)", true},
	{"missing iS nUlL", true},
	{"name not like 'x%' or false", true},
	{"TrUe", true},
	{"Case = 'upper' AND case = 'lower'", true},

	// JMS header names and the STOMP names of fields.
	{"JMSPriority = 7", true},
	{"JMSPriority > 5", true},
	{"priority >= 5", true},
	{"JMSPriority = '7'", true},
	{"JMSTimestamp = 1700000000000", true},
	{"timestamp > 0", true},
	{"JMSExpiration = 0", true},
	{"expires = 0", true},
	{"JMSDeliveryMode = 'PERSISTENT'", true},
	{"persistent = TRUE", true},
	{"persistent = 'true'", true},
	{"persistent", true},
	{"JMSMessageID = 'ID:1'", true},
	{"JMSDestination = 'queue://ORDERS'", true},
	{"JMSType = 'order'", true},
	{"JMSCorrelationID = 'corr-1'", true},
	{"JMSReplyTo = '/queue/reply'", true},
	{"JMSXDeliveryCount = 2", true},
	{"JMSRedelivered", true},
	{"redelivered = TRUE", true},
	{"JMSXGroupID = 'g1'", true},
	{"JMSXGroupSeq = 3", true},
	{"a.b = 'dotted'", true},
	{"$x = 'dollar'", true},
	{"dup = 'first'", true},
	{"correlation-id = 'corr-1'", false}, // correlation minus id: NULL
	{"jmspriority = 7", false},

	// Literals, white space and comments.
	{"'it''s' = 'it''s'", true},
	{"quote = 'it''s'", true},
	{"'' = ''", true},
	{"type\n=\t'order'\r\n", true},
	{"type = 'order' -- trailing comment", true},
	{"/* c */ type /* c2 */ = 'order'", true},
	{"type = 'order' --\nAND amount > 100", true},
	{"amount>100 AND(type='order')", true},
}

func TestMatches(t *testing.T) {
	require.GreaterOrEqual(t, len(exprTests), 100)
	m := sample()
	adapter := &Message{M: m, DeliveryCount: sampleDeliveryCount}
	for _, tt := range exprTests {
		t.Run(tt.sel, func(t *testing.T) {
			sel, err := Parse(tt.sel)
			require.NoError(t, err)
			assert.Equal(t, tt.want, sel.MatchesMessage(m, sampleDeliveryCount), "MatchesMessage")
			assert.Equal(t, tt.want, sel.Matches(adapter), "Matches(*Message)")
			assert.Equal(t, tt.want, sel.Matches(typedOnly{adapter}), "Matches(TypedProperties)")
			// The canonical form parses to itself and selects the same.
			c := sel.root.canon()
			sel2, err := Parse(c)
			require.NoError(t, err, "canon %q", c)
			assert.Equal(t, c, sel2.root.canon())
			assert.Equal(t, tt.want, sel2.MatchesMessage(m, sampleDeliveryCount), "canon %q", c)
		})
	}
}

// typedOnly hides the *Message type, so Matches takes the TypedProperties path.
type typedOnly struct{ *Message }

// mapProps is a plain Properties: every value a string.
type mapProps map[string]string

func (m mapProps) Get(name string) (string, bool) { v, ok := m[name]; return v, ok }

func TestMatchesPlainProperties(t *testing.T) {
	p := mapProps{"JMSPriority": "7", "amount": "150", "flag": "true", "region": "EU"}
	for _, tt := range []struct {
		sel  string
		want bool
	}{
		{"JMSPriority = 7", true},
		{"JMSPriority IN ('7')", true}, // a string here, unlike a message's field
		{"amount > 100 AND region = 'EU'", true},
		{"flag", true},
		{"flag AND missing IS NULL", true},
		{"missing = 1", false},
		{"JMSType IS NULL", true}, // no mapping outside Message
	} {
		sel, err := Parse(tt.sel)
		require.NoError(t, err)
		assert.Equal(t, tt.want, sel.Matches(p), tt.sel)
	}
	sel, err := Parse("a = 1")
	require.NoError(t, err)
	assert.False(t, sel.Matches(nil), "nil Properties: every property NULL")
	assert.False(t, sel.Matches(&Message{}), "Message without M: every property NULL")
	assert.False(t, sel.Matches((*Message)(nil)))
	assert.False(t, sel.MatchesMessage(nil, 0), "nil message: every property NULL")
	isNull, err := Parse("a IS NULL AND JMSPriority IS NULL")
	require.NoError(t, err)
	assert.True(t, isNull.MatchesMessage(nil, 0))
}

func TestEmptySelector(t *testing.T) {
	for _, s := range []string{"", "   ", "\t\n", "-- nothing", "/* nothing */", " /**/ -- x\n "} {
		sel, err := Parse(s)
		require.NoError(t, err, "%q", s)
		require.NotNil(t, sel)
		assert.Equal(t, s, sel.String())
		assert.True(t, sel.Matches(mapProps{}), "%q", s)
		assert.True(t, sel.MatchesMessage(sample(), 1), "%q", s)
	}
	var nilSel *Selector
	assert.True(t, nilSel.Matches(mapProps{}))
	assert.True(t, nilSel.MatchesMessage(sample(), 1))
	assert.Equal(t, "", nilSel.String())
}

func TestString(t *testing.T) {
	const src = "  type = 'order' /* keep me */ "
	sel, err := Parse(src)
	require.NoError(t, err)
	assert.Equal(t, src, sel.String())
}

func TestPrecedence(t *testing.T) {
	for _, tt := range []struct{ sel, canon string }{
		{"a OR b AND c", "(a OR (b AND c))"},
		{"a AND b OR c AND d", "((a AND b) OR (c AND d))"},
		{"a OR b OR c", "(a OR b OR c)"},
		{"NOT a AND b", "((NOT a) AND b)"},
		{"NOT a = 1", "(NOT (a = 1))"},
		{"NOT a = 1 OR b", "((NOT (a = 1)) OR b)"},
		{"a = 1 + 2 * 3", "(a = (1 + (2 * 3)))"},
		{"a - b - c > 0", "(((a - b) - c) > 0)"},
		{"a / b * c % d = 0", "((((a / b) * c) % d) = 0)"},
		{"-a * b < 0", "(((-a) * b) < 0)"},
		{"- - a > 0", "((-(-a)) > 0)"},
		{"-5 = a", "(-5 = a)"},
		{"a - -5 = 0", "((a - -5) = 0)"},
		{"+a = 1", "((+a) = 1)"},
		{"a < b = c > d", "((a < b) = (c > d))"},
		{"a = b IS NULL", "((a = b) IS NULL)"},
		{"a + 1 IS NOT NULL", "((a + 1) IS NOT NULL)"},
		{"a BETWEEN 1 AND 2 AND b", "((a BETWEEN 1 AND 2) AND b)"},
		{"a NOT BETWEEN b + 1 AND c * 2", "(a NOT BETWEEN (b + 1) AND (c * 2))"},
		{"a NOT IN ('x', 'y''z') OR b LIKE 'p%' ESCAPE '!'", "((a NOT IN ('x', 'y''z')) OR (b LIKE 'p%' ESCAPE '!'))"},
		{"a = 1.5e3", "(a = 1500.0)"},
		{"a = 0x10", "(a = 16)"},
		{"a = .5", "(a = 0.5)"},
		{"a = 1E21", "(a = 1e+21)"},
		{"((a))", "a"},
		{"a = NULL", "(a = NULL)"},
	} {
		sel, err := Parse(tt.sel)
		require.NoError(t, err, tt.sel)
		assert.Equal(t, tt.canon, sel.root.canon(), tt.sel)
	}
}

func TestSyntaxErrors(t *testing.T) {
	deep := strings.Repeat("(", maxNesting+1) + "a" + strings.Repeat(")", maxNesting+1)
	long := "a = 1" + strings.Repeat(" + 1", maxHeight)
	for _, tt := range []struct {
		sel string
		pos int
		msg string
	}{
		{"type = ", 8, "expected expression, found end of input"},
		{"amount > 5 AND )", 16, `expected expression, found ")"`},
		{"(a = 1))", 8, `expected operator or end of input, found ")"`},
		{"a = (1 + 2", 11, `expected ")", found end of input`},
		{"a = 1 b", 7, `expected operator or end of input, found "b"`},
		{"AND a", 1, `expected expression, found "AND"`},
		{"NOT", 4, "expected expression, found end of input"},
		{"a = 'x' ESCAPE '!'", 9, `expected operator or end of input, found "ESCAPE"`},
		{"'abc", 1, "unterminated string literal"},
		{"a = 'it''s", 5, "unterminated string literal"},
		{"a = 1 /* x", 7, "unterminated comment"},
		{"a # 1", 3, `unexpected character '#'`},
		{"a != 1", 3, `unexpected character '!'`},
		{"a = \"x\"", 5, `unexpected character '"'`},
		{"correlation-id = 'x' AND a = ?", 30, `unexpected character '?'`},
		{"a IN (1, 2)", 7, `expected string literal in IN list, found "1"`},
		{"a IN 'x'", 6, `expected "(" after IN, found "'x'"`},
		{"a IN ('x' 'y')", 11, `expected "," or ")" in IN list, found "'y'"`},
		{"a IN ()", 7, `expected string literal in IN list, found ")"`},
		{"a IN ('x',)", 11, `expected string literal in IN list, found ")"`},
		{"a LIKE b", 8, `expected string literal after LIKE, found "b"`},
		{"a LIKE 'x' ESCAPE 1", 19, `expected string literal after ESCAPE, found "1"`},
		{"a LIKE 'x' ESCAPE 'ab'", 19, `ESCAPE must be a single character, found "'ab'"`},
		{"a LIKE 'x' ESCAPE ''", 19, `ESCAPE must be a single character, found "''"`},
		{`a LIKE 'x\' ESCAPE '\'`, 8, "LIKE pattern ends with the ESCAPE character"},
		{"a BETWEEN 1 OR 2", 13, `expected AND in BETWEEN, found "OR"`},
		{"a BETWEEN 1", 12, "expected AND in BETWEEN, found end of input"},
		{"a NOT 5", 7, `expected LIKE, BETWEEN or IN after NOT, found "5"`},
		{"a NOT NULL", 7, `expected LIKE, BETWEEN or IN after NOT, found "NULL"`},
		{"a IS 5", 6, `expected NULL or NOT NULL after IS, found "5"`},
		{"a IS NOT 5", 10, `expected NULL after IS NOT, found "5"`},
		{"amount + 1", 1, `expected boolean expression, found "amount + 1"`},
		{"5", 1, `expected boolean expression, found "5"`},
		{"'abc'", 1, `expected boolean expression, found "'abc'"`},
		{"a = 1 AND 5", 11, `expected boolean expression, found "5"`},
		{"2 > 1 OR (a + 1)", 10, `expected boolean expression, found "(a + 1)"`},
		{"NOT 'x'", 5, `expected boolean expression, found "'x'"`},
		{"(a = 1) + 2 > 0", 1, `expected numeric expression, found "(a = 1)"`},
		{"-TRUE = 1", 2, `expected numeric expression, found "TRUE"`},
		{"08 = 8", 1, `malformed octal number "08"`},
		{"0x = 1", 1, `malformed number "0x": no hexadecimal digits`},
		{"1abc = 1", 1, `malformed number "1abc"`},
		{"1e = 1", 1, `malformed number "1e"`},
		{"1.5.3 = 1", 1, `malformed number "1.5.3"`},
		{"0x8000000000000000 = 1", 1, `number "0x8000000000000000" out of range`},
		{"1e999 = 1", 1, `number "1e999" out of range`},
		{"'é' = x )", 9, `expected operator or end of input, found ")"`},
		{"a = '" + strings.Repeat("x", 60) + "' )", 68, `expected operator or end of input, found ")"`},
		{"a IN (" + strings.Repeat("x", 60) + ")", 7, `expected string literal in IN list, found "` + strings.Repeat("x", 40) + `..."`},
		{deep, maxNesting + 1, fmt.Sprintf("expression nested too deeply (more than %d levels)", maxNesting)},
		{long, 5, fmt.Sprintf("expression too complex (more than %d levels of operators)", maxHeight)},
		{strings.Repeat("NOT ", maxNesting+1) + "a", 4*maxNesting + 1, fmt.Sprintf("expression nested too deeply (more than %d levels)", maxNesting)},
		{"a = " + strings.Repeat("- ", maxNesting+1) + "1", 2*maxNesting + 5, fmt.Sprintf("expression nested too deeply (more than %d levels)", maxNesting)},
	} {
		name := tt.sel
		if len(name) > 50 {
			name = name[:50]
		}
		t.Run(name, func(t *testing.T) {
			sel, err := Parse(tt.sel)
			require.Error(t, err)
			assert.Nil(t, sel)
			assert.ErrorIs(t, err, ErrSyntax)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.pos, se.Pos, "position")
			assert.Equal(t, tt.msg, se.Msg)
			assert.Equal(t, fmt.Sprintf("selector: syntax error at column %d: %s", tt.pos, tt.msg), err.Error())
			wrapped := fmt.Errorf("subscribe: %w", err)
			assert.True(t, errors.Is(wrapped, ErrSyntax))
			require.ErrorAs(t, wrapped, &se)
		})
	}
}

func TestMessageGet(t *testing.T) {
	m := &Message{M: sample(), DeliveryCount: 3}
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"JMSPriority", "7", true},
		{"JMSTimestamp", "1700000000000", true},
		{"JMSRedelivered", "true", true},
		{"JMSXDeliveryCount", "3", true},
		{"JMSDeliveryMode", "PERSISTENT", true},
		{"JMSType", "order", true},
		{"dup", "first", true},
		{"missing", "", false},
	} {
		v, ok := m.Get(tt.name)
		assert.Equal(t, tt.ok, ok, tt.name)
		assert.Equal(t, tt.want, v, tt.name)
	}
	assert.Equal(t, Int, m.Value("JMSPriority").Kind())
	assert.Equal(t, Null, (&Message{}).Value("JMSPriority").Kind())

	// DeliveryCount 0 falls back to RedeliveryCount+1.
	pm := sample()
	pm.RedeliveryCount = 4
	pm.Persistent = false
	pm.ID = ""
	sel, err := Parse("JMSXDeliveryCount = 5 AND JMSRedelivered AND JMSDeliveryMode = 'NON_PERSISTENT' " +
		"AND JMSMessageID IS NULL AND NOT persistent")
	require.NoError(t, err)
	assert.True(t, sel.MatchesMessage(pm, 0))
	assert.True(t, sel.Matches(&Message{M: pm}))
	first, err := Parse("JMSRedelivered")
	require.NoError(t, err)
	assert.False(t, first.MatchesMessage(&persistence.Message{}, 0))
	assert.False(t, first.MatchesMessage(&persistence.Message{}, 1))
}

func TestValueString(t *testing.T) {
	for _, tt := range []struct {
		v    Value
		want string
	}{
		{NullValue(), "NULL"},
		{BoolValue(true), "TRUE"},
		{BoolValue(false), "FALSE"},
		{IntValue(-3), "-3"},
		{FloatValue(2), "2.0"},
		{FloatValue(0.25), "0.25"},
		{StringValue("it's"), "'it''s'"},
	} {
		assert.Equal(t, tt.want, tt.v.String())
	}
}

func TestParseNumber(t *testing.T) {
	for _, tt := range []struct {
		s    string
		ok   bool
		kind Kind
	}{
		{"0", true, Int}, {"-12", true, Int}, {"+7", true, Int}, {"007", true, Int},
		{"9223372036854775807", true, Int}, {"-9223372036854775808", true, Int},
		{"9223372036854775808", true, Float}, {"1.5", true, Float}, {".5", true, Float},
		{"5.", true, Float}, {"1e3", true, Float}, {"1E-3", true, Float}, {"-1.5e+3", true, Float},
		{"1e999", true, Float},
		{"", false, Null}, {"-", false, Null}, {".", false, Null}, {"1e", false, Null},
		{"e3", false, Null}, {" 1", false, Null}, {"1 ", false, Null}, {"0x10", false, Null},
		{"NaN", false, Null}, {"Infinity", false, Null}, {"1_000", false, Null}, {"1.2.3", false, Null},
	} {
		v, ok := parseNumber(tt.s)
		assert.Equal(t, tt.ok, ok, "%q", tt.s)
		assert.Equal(t, tt.kind, v.Kind(), "%q", tt.s)
	}
	v, _ := parseNumber("-9223372036854775808")
	assert.Equal(t, int64(-9223372036854775808), v.i)
}
