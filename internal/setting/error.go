package setting

import (
	"regexp"
	"strconv"
	"strings"
)

// Error describes a configuration value a user got wrong: config's Load and Parse
// return it for anything wrong in the file or the environment (as config.Error), and
// the persistence adapters for a bad option of their block. Test for it with
// errors.As; every field but Problem may be empty.
//
// Secrets never reach an Error: the value of a key whose path names a password,
// passcode or secret is replaced by "xxxxx", and so is the password of any URL
// (scheme://user:password@host) or password=... query parameter found in Value
// or Problem.
type Error struct {
	// Key is the path of the offending key as written in YAML, with list elements
	// by index: "transportConnectors[0].uri", "persistenceAdapter.kahaDB". For a
	// bad environment variable it is the variable's name.
	Key string
	// Value is the offending value, redacted as described above.
	Value string
	// Problem says what is wrong: "unknown key", "not an integer", ...
	Problem string
	// Allowed says what would have been accepted: a list of keys or names, or a
	// range.
	Allowed string
	// Err is the underlying cause where there is one (a file-system error from
	// Load, an adapter's ErrOption), for errors.Is; nil otherwise.
	Err error
}

// Error formats the error as
//
//	config: <key>: <problem> (value "<value>"; allowed: <allowed>)
//
// leaving out the parts that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	problem := e.Problem
	if problem == "" {
		problem = "invalid value"
	}
	b.WriteString(Redact(problem))
	var extra []string
	if e.Value != "" {
		v := e.Value
		if isSecretKey(e.Key) {
			v = Redacted
		}
		extra = append(extra, "value "+strconv.Quote(Redact(v)))
	}
	if e.Allowed != "" {
		extra = append(extra, "allowed: "+e.Allowed)
	}
	if len(extra) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(extra, "; "))
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// NewError builds an *Error, redacting value if key names a secret.
func NewError(key, value, problem, allowed string) *Error {
	if isSecretKey(key) {
		value = Redacted
	} else {
		value = Redact(value)
	}
	return &Error{Key: key, Value: value, Problem: problem, Allowed: allowed}
}

// Redacted replaces secrets in error values.
const Redacted = "xxxxx"

// secretWords are the key-name fragments whose values are never shown.
var secretWords = []string{"password", "passcode", "passwd", "secret"}

// isSecretKey reports whether any segment of a key path (dotted YAML path or
// environment variable name) names a secret.
func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

var (
	// scheme://user:password@ -> scheme://user:xxxxx@
	// (greedy up to the last "@" of the authority, as URL parsers read it)
	urlPasswordRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s:]*):[^\s/?#]*@`)
	// password=... in a query string or a key=value list
	paramPasswordRE = regexp.MustCompile(`(?i)((?:password|passcode|passwd|secret)[a-z_]*=)[^&;\s]*`)
)

// Redact removes URL user-info passwords and password=... parameters from s.
func Redact(s string) string {
	if !strings.Contains(s, "@") && !strings.Contains(s, "=") {
		return s
	}
	s = urlPasswordRE.ReplaceAllString(s, "${1}:"+Redacted+"@")
	return paramPasswordRE.ReplaceAllString(s, "${1}"+Redacted)
}
