package config

import (
	"strconv"
	"strings"
)

// placeholderAllowed describes the placeholder syntax for error messages.
const placeholderAllowed = `${NAME} or ${NAME:-default}, NAME of letters, digits, "_" and "."; ` +
	`"$${" for a literal "${"`

// environ is the process environment as Parse was given it.
type environ struct {
	vars map[string]string // first definition wins, as with os.Getenv
	list []envVar          // in the order given, without repeats
}

type envVar struct{ name, value string }

func newEnviron(entries []string) environ {
	e := environ{vars: make(map[string]string, len(entries))}
	for _, kv := range entries {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, dup := e.vars[name]; dup {
			continue
		}
		e.vars[name] = value
		e.list = append(e.list, envVar{name, value})
	}
	return e
}

// placeholderError is a bad or unresolvable placeholder found by expand.
type placeholderError struct {
	text    string // the placeholder as written, "${X}"
	problem string
}

// expand replaces the placeholders in s: ${NAME} by the variable NAME, which must
// be set (it may be set to ""); ${NAME:-default} by NAME when set and not empty,
// else by default (which may be empty and cannot contain "}"); "$${" by a literal
// "${". Any other "$" is left alone. Expansions are not expanded again. used
// collects the names looked up.
func expand(s string, env environ, used map[string]bool) (string, bool, *placeholderError) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", false, &placeholderError{text: s[i:], problem: "unterminated placeholder: no closing \"}\""}
			}
			text := s[i : i+2+end+1]
			inner := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(inner, ":-")
			if !validPlaceholderName(name) {
				return "", false, &placeholderError{text: text, problem: "malformed placeholder"}
			}
			used[name] = true
			val, set := env.vars[name]
			switch {
			case hasDef && val == "":
				val = def
			case !set:
				return "", false, &placeholderError{text: text, problem: "environment variable " + name + " is not set and the placeholder has no default"}
			}
			b.WriteString(val)
			i += len(text)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), true, nil
}

func validPlaceholderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case (c >= '0' && c <= '9' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

// toError places a placeholder error at a key and line of the file.
func (p *placeholderError) toError(key string, line int) *Error {
	problem := p.problem
	if line > 0 {
		problem += " (line " + strconv.Itoa(line) + ")"
	}
	allowed := placeholderAllowed
	if strings.HasSuffix(p.problem, "has no default") {
		allowed = "set the variable, or give a default: ${NAME:-default}"
	}
	return &Error{Key: key, Value: p.text, Problem: problem, Allowed: allowed}
}
