// Package selector implements JMS message selectors, the SQL92 subset a STOMP client
// puts in the selector header of SUBSCRIBE, with ActiveMQ's semantics for STOMP.
//
// A selector is parsed once, by Parse, into a tree of typed nodes; Selector.Matches and
// Selector.MatchesMessage then evaluate it per message without allocating: values are a
// small tagged struct, strings are compared in place, numbers in header values are
// parsed in place, and LIKE patterns are compiled at parse time.
//
// # Syntax
//
// Lowest precedence first:
//
//	OR
//	AND
//	NOT
//	=  <>  IS [NOT] NULL
//	<  <=  >  >=  [NOT] BETWEEN a AND b  [NOT] IN ('s', ...)  [NOT] LIKE 'pat' [ESCAPE 'c']
//	+  -
//	*  /  %
//	unary +  -
//	literals, identifiers, ( expr )
//
// NOT binds looser than the comparisons, as in SQL and JMS: NOT a = 1 is NOT (a = 1).
// Keywords (NOT AND OR BETWEEN LIKE ESCAPE IN IS TRUE FALSE NULL) are case-insensitive;
// identifiers are case-sensitive and match [A-Za-z_$][A-Za-z0-9_$.]*. A '-' cannot be
// part of an identifier, as a-b is a subtraction: STOMP headers such as correlation-id
// and reply-to are reached through JMSCorrelationID and JMSReplyTo (see Message).
//
// Literals: strings in single quotes, with a quote inside written twice; exact numbers
// in decimal (an L suffix is allowed; beyond int64 a decimal becomes approximate, as
// ActiveMQ turns it into a BigDecimal), hexadecimal 0x1F and octal 017; approximate
// numbers 1.5, .5, 1., 1E10, 1.5e-3; TRUE, FALSE and NULL. Comments -- to the end of the line
// and /* ... */ are skipped. IN lists take string literals only, as in JMS. In LIKE
// patterns % matches any sequence of characters and _ exactly one; ESCAPE names one
// character that makes the next one literal.
//
// A selector that is empty, or only white space and comments, matches every message.
// The whole selector, and each operand of AND, OR and NOT, must be able to yield a
// boolean: 'amount + 1' or 'x AND 5' are syntax errors, as are arithmetic operands
// that are conditions ('(a = 1) + 2'). A syntax error is a *SyntaxError with the
// 1-based column and what was expected:
//
//	selector: syntax error at column 12: expected expression, found ")"
//
// # Semantics
//
// SQL's three-valued logic: a property that is not set is NULL, and a comparison,
// BETWEEN, IN or LIKE with a NULL operand is unknown. NOT unknown is unknown; FALSE AND
// unknown is FALSE; TRUE OR unknown is TRUE; everything else with unknown is unknown.
// IS [NOT] NULL is never unknown. A message is selected only when the selector is
// TRUE. NULL = NULL is unknown too.
//
// Header values are strings. As ActiveMQ does for STOMP (convert_string_expressions),
// a string compared with a number is converted to a number, and a string compared
// with a boolean to a boolean: '10' > 9 is TRUE, while '10' > '9' compares two strings
// and is FALSE. A string is a number when it is [+-]digits (exact, or approximate
// beyond int64) or [+-](digits[.digits]|.digits)[e[+-]digits] (approximate) — no
// spaces, hex, Infinity or NaN; it is a boolean when it is "true" or "false" in any
// case. Arithmetic converts strings to numbers the same way. When a conversion fails,
// or the types cannot be compared (a boolean with a number, a number with IN or LIKE),
// the comparison is FALSE, as JMS says for unlike types, and <> — which is NOT = —
// is TRUE. So 'abc' > 5 is FALSE and NOT ('abc' > 5) is TRUE.
//
// A message's typed properties (persistence.Message.Props, set by a JMS client) are
// their JMS types, with no conversion: byte, short, int and long are exact numbers,
// float (widened, as Java does: 1.1f is not 1.1) and double approximate ones, boolean a
// boolean; a byte array cannot be compared and is NULL.
//
// Numbers compare exactly when both are exact, otherwise as float64. Strings compare
// byte-wise (the UTF-8 order, which is the code point order); ActiveMQ also allows <
// and > on strings. Booleans compare with = and <> only; the ordering operators are
// FALSE for them. Exact arithmetic wraps on overflow like Java's long; an exact
// division or remainder by zero is NULL; approximate arithmetic follows IEEE 754.
// An identifier used as a condition on its own is TRUE or FALSE when its value is a
// boolean or the string "true" or "false", and unknown otherwise.
//
// x NOT BETWEEN a AND b, x NOT IN (...) and x NOT LIKE p are NOT applied to the
// positive form (ActiveMQ expands NOT BETWEEN into x < a OR x > b, which differs only
// when the types mismatch).
//
// # Properties
//
// Matches reads properties through the Properties interface. A Properties that also
// implements TypedProperties hands out typed values (numbers, booleans) instead of
// strings. Message adapts a *persistence.Message and maps the JMS header names onto
// its fields; MatchesMessage evaluates against a *persistence.Message directly, with the
// field of each name resolved at parse time.
package selector
