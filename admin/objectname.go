package admin

import (
	"errors"
	"regexp"
	"sort"
	"strings"
)

// A JMX ObjectName as the Jolokia reads (jolokia.go) name ActiveMQ's MBeans:
// domain:key=value,key=value, keys in any order, values plain or quoted ("a,b" with
// \" \\ \* \? \n escapes). A pattern has * or ? in its domain or a value, or ends its
// key list with ",*" (any further keys), as javax.management.ObjectName reads it.
type objectName struct {
	domain string
	keys   []nameKey // as written
	// anyKeys: the key list ends with ",*" (or is "*"): further keys match.
	anyKeys bool
}

type nameKey struct {
	key, value string // value as written: quoted values keep their quotes
}

var errBadObjectName = errors.New("bad ObjectName")

// parseObjectName parses s, pattern or not.
func parseObjectName(s string) (objectName, error) {
	domain, rest, ok := strings.Cut(s, ":")
	if !ok || strings.ContainsAny(domain, "\n") {
		return objectName{}, errBadObjectName
	}
	n := objectName{domain: domain}
	seen := map[string]bool{}
	for rest != "" {
		if rest == "*" {
			n.anyKeys = true
			break
		}
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return objectName{}, errBadObjectName
		}
		key := rest[:eq]
		if strings.ContainsAny(key, ",:*?\"\n") || seen[key] {
			return objectName{}, errBadObjectName
		}
		seen[key] = true
		rest = rest[eq+1:]
		var value string
		if strings.HasPrefix(rest, `"`) {
			end := closingQuote(rest)
			if end < 0 {
				return objectName{}, errBadObjectName
			}
			value, rest = rest[:end+1], rest[end+1:]
		} else {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			value, rest = rest[:end], rest[end:]
			if value == "" || strings.ContainsAny(value, ":=\"\n") {
				return objectName{}, errBadObjectName
			}
		}
		n.keys = append(n.keys, nameKey{key, value})
		if rest == "" {
			break
		}
		if rest[0] != ',' || rest == "," {
			return objectName{}, errBadObjectName
		}
		rest = rest[1:]
	}
	if len(n.keys) == 0 && !n.anyKeys {
		return objectName{}, errBadObjectName
	}
	return n, nil
}

// closingQuote is the index of the quote ending the quoted value s starts with; -1 if
// none.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// String is the name with its keys as written.
func (n objectName) String() string { return n.format(n.keys) }

// canonical is the name with its keys sorted, as Jolokia returns names by default
// (ObjectName.getCanonicalName).
func (n objectName) canonical() string {
	ks := append([]nameKey(nil), n.keys...)
	sort.Slice(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	return n.format(ks)
}

func (n objectName) format(ks []nameKey) string {
	var b strings.Builder
	b.WriteString(n.domain + ":")
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.key + "=" + k.value)
	}
	if n.anyKeys {
		if len(ks) > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('*')
	}
	return b.String()
}

// get returns a key's value, unquoted.
func (n objectName) get(key string) (string, bool) {
	for _, k := range n.keys {
		if k.key == key {
			return unquote(k.value), true
		}
	}
	return "", false
}

func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++
			if v[i] == 'n' {
				b.WriteByte('\n')
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// isPattern reports whether n names a set of MBeans rather than one.
func (n objectName) isPattern() bool {
	if n.anyKeys || strings.ContainsAny(n.domain, "*?") {
		return true
	}
	for _, k := range n.keys {
		if valuePattern(k.value) {
			return true
		}
	}
	return false
}

// valuePattern reports whether a value as written holds an unescaped * or ?.
func valuePattern(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		}
	}
	return false
}

// matches reports whether the MBean named name (not a pattern) is one of pattern n's.
// Values compare unquoted: "orders" and orders name the same queue here, as ActiveMQ
// never quotes its names.
func (n objectName) matches(name objectName) bool { return n.matcher()(name) }

// matcher compiles n's globs once, for matching many names.
func (n objectName) matcher() func(objectName) bool {
	domain := globRE(n.domain, false)
	values := make([]*regexp.Regexp, len(n.keys))
	for i, k := range n.keys {
		values[i] = globRE(k.value, true)
	}
	return func(name objectName) bool {
		if !domain.MatchString(name.domain) || (!n.anyKeys && len(n.keys) != len(name.keys)) {
			return false
		}
		for i, k := range n.keys {
			v, ok := name.get(k.key)
			if !ok || !values[i].MatchString(v) {
				return false
			}
		}
		return true
	}
}

// globRE compiles pattern p (* any run, ? one character); a quoted value is unquoted
// first, its \* and \? standing for themselves.
func globRE(p string, value bool) *regexp.Regexp {
	var re strings.Builder
	re.WriteString("^")
	quoted := value && len(p) >= 2 && p[0] == '"'
	if quoted {
		p = p[1 : len(p)-1]
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case quoted && c == '\\' && i+1 < len(p):
			i++
			if p[i] == 'n' {
				re.WriteString(`\n`)
			} else {
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		case c == '*':
			re.WriteString(`(?s:.*)`)
		case c == '?':
			re.WriteString(`(?s:.)`)
		default:
			re.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()) // every part is quoted: it compiles
}

// encodeNamePart is ActiveMQ's JMXSupport.encodeObjectNamePart: how a broker or
// destination name becomes an ObjectName value (':' ',' quotes become '_', '?' "&qe;",
// '=' "&amp;", '*' "&ast;").
func encodeNamePart(s string) string { return namePartEncoder.Replace(s) }

var namePartEncoder = strings.NewReplacer(":", "_", ",", "_", "'", "_", `"`, "_", "?", "&qe;", "=", "&amp;", "*", "&ast;")
