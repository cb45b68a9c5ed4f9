package security

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// everyone, as a group of an entry, gives the right to every subject, anonymous
// ones too.
const everyone = "*"

// aclCacheSize bounds the destination names whose rights are remembered; when it is
// reached the cache starts over.
const aclCacheSize = 16384

// groupSet is the groups holding one right.
type groupSet struct {
	all    bool     // "*" is among them
	groups []string // sorted, unique
}

func (g *groupSet) allows(sub *Subject) bool {
	if g.all {
		return true
	}
	if sub == nil || len(g.groups) == 0 {
		return false
	}
	for _, x := range sub.Groups {
		if _, ok := slices.BinarySearch(g.groups, x); ok {
			return true
		}
	}
	return false
}

// acl is the rights on one destination: the union of every matching entry's.
type acl struct{ read, write, admin groupSet }

func (a *acl) allows(sub *Subject, r Rights) bool {
	return r&^(Read|Write|Admin) == 0 &&
		(r&Read == 0 || a.read.allows(sub)) &&
		(r&Write == 0 || a.write.allows(sub)) &&
		(r&Admin == 0 || a.admin.allows(sub))
}

// unionACL combines entries, as ActiveMQ 5.17's DefaultAuthorizationMap does: a
// right is held by the groups that hold it in any of them.
func unionACL(entries []*Entry) acl {
	union := func(pick func(*Entry) []string) groupSet {
		var gs []string
		for _, e := range entries {
			gs = append(gs, pick(e)...)
		}
		gs = sortedUnique(gs)
		if i, ok := slices.BinarySearch(gs, everyone); ok {
			return groupSet{all: true, groups: slices.Delete(gs, i, i+1)}
		}
		return groupSet{groups: gs}
	}
	return acl{
		read:  union(func(e *Entry) []string { return e.Read }),
		write: union(func(e *Entry) []string { return e.Write }),
		admin: union(func(e *Entry) []string { return e.Admin }),
	}
}

// authorizer is the authorization map: the entries in a tree per kind, and a cache
// of the rights per destination name.
type authorizer struct {
	roots [2]patternNode // by Kind
	cache atomic.Pointer[aclCache]
}

// aclCache is the rights of the names looked up, for one Generation.
type aclCache struct {
	gen   uint64
	n     atomic.Int64
	names [2]sync.Map // by Kind: name -> *acl
}

// newAuthorizer checks the entries and builds the map.
func newAuthorizer(entries []Entry) (*authorizer, error) {
	a := &authorizer{}
	a.cache.Store(&aclCache{})
	for i, e := range entries {
		where := fmt.Sprintf("plugins.authorization.entries[%d] (%s %s)", i, kindName(e.Kind), e.Pattern)
		if err := checkEntry(where, e); err != nil {
			return nil, err
		}
		e := normalEntry(e)
		a.roots[e.Kind].add(&e)
	}
	return a, nil
}

func kindName(k Kind) string {
	switch k {
	case Queue:
		return "queue"
	case Topic:
		return "topic"
	}
	return fmt.Sprintf("kind %d", k)
}

// checkEntry checks an entry's kind and pattern.
func checkEntry(where string, e Entry) error {
	if e.Kind != Queue && e.Kind != Topic {
		return fmt.Errorf("security: %s: the kind is neither queue nor topic", where)
	}
	if e.Pattern == "" {
		return fmt.Errorf("security: %s: the pattern is empty; use \">\" for every destination", where)
	}
	elems := strings.Split(e.Pattern, separator)
	for i, el := range elems {
		if el == anyRest && i != len(elems)-1 {
			return fmt.Errorf("security: %s: '>' must be the last element of a pattern (it matches the rest of the name)", where)
		}
	}
	return nil
}

// normalEntry splits group lists written as one "a,b" string and trims names.
func normalEntry(e Entry) Entry {
	split := func(gs []string) []string {
		var out []string
		for _, g := range gs {
			out = append(out, splitList(g)...)
		}
		return out
	}
	e.Read, e.Write, e.Admin = split(e.Read), split(e.Write), split(e.Admin)
	return e
}

// acl returns the rights on a destination, from the cache when it has them.
func (a *authorizer) acl(kind Kind, name string, gen uint64) *acl {
	c := a.cache.Load()
	if c.gen < gen {
		c = a.restart(c, gen)
	}
	if v, ok := c.names[kind].Load(name); ok {
		return v.(*acl)
	}
	computed := unionACL(a.roots[kind].matchName(name, nil))
	if c.n.Add(1) > aclCacheSize {
		c = a.restart(c, c.gen)
		c.n.Add(1)
	}
	c.names[kind].Store(name, &computed)
	return &computed
}

// restart replaces the cache old with an empty one, unless another goroutine did.
func (a *authorizer) restart(old *aclCache, gen uint64) *aclCache {
	fresh := &aclCache{gen: gen}
	if a.cache.CompareAndSwap(old, fresh) {
		return fresh
	}
	return a.cache.Load()
}

// Authorize tells whether sub may do r (all of it) with the queue or topic name. The
// rights are the union of those of every entry whose pattern matches name; a group
// "*" is every subject. Without an authorization map everything is allowed; with an
// empty one nothing. A nil sub holds no group.
func (s *Service) Authorize(sub *Subject, kind Kind, name string, r Rights) bool {
	if s.authz == nil {
		return true
	}
	if kind == Queue || kind == Topic {
		if s.authz.acl(kind, name, s.gen.Load()).allows(sub, r) {
			return true
		}
	}
	s.stats.denied.Add(1)
	return false
}

// AuthorizeTemp tells whether sub may do r with a temporary destination. Without a
// Config.Temp entry every authenticated subject may (anonymous ones too when there
// are no user sources); reading is the creating connection's anyway, which the
// broker sees to. Without an authorization map everything is allowed.
func (s *Service) AuthorizeTemp(sub *Subject, r Rights) bool {
	if s.authz == nil {
		return true
	}
	var ok bool
	if s.temp == nil {
		ok = sub != nil && (!sub.Anonymous || !s.authn)
	} else {
		ok = s.temp.allows(sub, r)
	}
	if !ok {
		s.stats.denied.Add(1)
	}
	return ok
}

// IsAdmin tells whether sub is in one of Config.AdminGroups.
func (s *Service) IsAdmin(sub *Subject) bool {
	if sub == nil {
		return false
	}
	for _, g := range sub.Groups {
		if _, ok := slices.BinarySearch(s.admins, g); ok {
			return true
		}
	}
	return false
}
