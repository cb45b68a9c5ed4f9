package security

import "strings"

// ActiveMQ's destination wildcards: names are elements separated by '.', a pattern's
// '*' element matches exactly one element and its '>' element matches the rest of
// the name, zero or more elements (so "USERS.>" matches "USERS" too, as ActiveMQ
// 5.17's DestinationMap does). '>' ends a pattern. A '*' or '>' inside an element
// ("FOO*") is an ordinary character.
const (
	separator = "."
	anyOne    = "*"
	anyRest   = ">"
)

// patternNode is a node of the tree of one kind's patterns, one level per element.
type patternNode struct {
	children map[string]*patternNode // literal elements
	star     *patternNode            // '*'
	rest     []*Entry                // patterns ending in '>' here
	here     []*Entry                // patterns ending here
}

// add puts the entry of the (checked) pattern in the tree.
func (n *patternNode) add(e *Entry) {
	for _, el := range strings.Split(e.Pattern, separator) {
		switch el {
		case anyRest:
			n.rest = append(n.rest, e)
			return
		case anyOne:
			if n.star == nil {
				n.star = &patternNode{}
			}
			n = n.star
		default:
			if n.children == nil {
				n.children = make(map[string]*patternNode)
			}
			c := n.children[el]
			if c == nil {
				c = &patternNode{}
				n.children[el] = c
			}
			n = c
		}
	}
	n.here = append(n.here, e)
}

// match appends the entries whose pattern matches the name's elements to out.
//
// A name is expected to be concrete. If it has wildcard elements itself (a wildcard
// subscription), only the patterns that match every name it stands for are
// returned: '>' in the name is matched only by a '>' of the pattern at that place
// or before, '*' in the name only by a '*' or '>'. Rights given for some of the
// destinations a wildcard covers are thus not rights for the wildcard.
func (n *patternNode) match(elems []string, out []*Entry) []*Entry {
	for {
		out = append(out, n.rest...)
		if len(elems) == 0 {
			return append(out, n.here...)
		}
		el := elems[0]
		elems = elems[1:]
		if el == anyRest {
			return out
		}
		if el != anyOne && n.children != nil {
			if c := n.children[el]; c != nil {
				if n.star != nil {
					out = n.star.match(elems, out)
				}
				n = c
				continue
			}
		}
		if n.star == nil {
			return out
		}
		n = n.star
	}
}

// matchName splits name and matches it.
func (n *patternNode) matchName(name string, out []*Entry) []*Entry {
	return n.match(strings.Split(name, separator), out)
}

// patternMatches tells whether pattern matches the concrete name: the plain
// definition that match follows, for tests.
func patternMatches(pattern, name string) bool {
	p, q := strings.Split(pattern, separator), strings.Split(name, separator)
	for i, el := range p {
		if el == anyRest {
			return true
		}
		if i == len(q) || el != anyOne && el != q[i] {
			return false
		}
	}
	return len(p) == len(q)
}
