package security

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
)

// staticUser is one of Config.Users, checked and parsed.
type staticUser struct {
	name     string
	pw       *password
	groups   []string
	maxConns int
}

// account is a user who logs in with a passcode, in one generation of the directory.
type account struct {
	name string
	pw   *password
	// verified is SHA-256(salt || passcode) of the last passcode that verified, so
	// that a reconnecting client does not cost a bcrypt or argon2id run each time.
	// It goes with the directory when the files are re-read.
	verified atomic.Pointer[[sha256.Size]byte]
	// class is the index in directory.work of the account's hash's cost class; -1
	// for a plain-text password.
	class int
}

// directory is one generation of the users: everything the sources say, merged.
type directory struct {
	gen      uint64
	accounts map[string]*account // login users: Config.Users and the JAAS users file
	groups   map[string][]string // a user's groups from every source, sorted, unique
	maxConns map[string]int      // Config.Users' own limits
	certs    map[string]string   // normal subject DN -> user
	// work is one verifier per cost class of the hashes in use (cheapest first), each
	// a dummy; a login that does not succeed at once runs every one of them, the
	// account's own hash in place of its class's dummy (see Service.verify).
	work  []password
	files []fileContents // indexed like Service.files
}

// parseStaticUsers checks Config.Users.
func parseStaticUsers(users []User) ([]staticUser, error) {
	out := make([]staticUser, 0, len(users))
	seen := make(map[string]bool, len(users))
	for i, u := range users {
		where := fmt.Sprintf("plugins.simpleAuthentication.users[%d] (%s)", i, sanitize(u.Name))
		switch {
		case strings.TrimSpace(u.Name) == "":
			return nil, fmt.Errorf("security: plugins.simpleAuthentication.users[%d]: the name is empty; give every user a name", i)
		case seen[u.Name]:
			return nil, fmt.Errorf("security: %s: the user is listed twice; merge the entries", where)
		case u.Password != "" && u.PasswordHash != "":
			return nil, fmt.Errorf("security: %s: both password and passwordHash are set; keep one (passwordHash, from `broker passwd`, is better)", where)
		case u.Password == "" && u.PasswordHash == "":
			return nil, fmt.Errorf("security: %s: no password or passwordHash; an empty password can never log in, so set one (`broker passwd` prints a hash)", where)
		case u.MaxConnections < 0:
			return nil, fmt.Errorf("security: %s: maxConnections is negative; use 0 for plugins.maxConnectionsPerUser", where)
		}
		seen[u.Name] = true
		su := staticUser{name: u.Name, maxConns: u.MaxConnections}
		if u.PasswordHash != "" {
			pw, err := parseHash(u.PasswordHash)
			if err != nil {
				return nil, fmt.Errorf("security: %s: passwordHash is %w", where, err)
			}
			su.pw = &pw
		} else {
			pw := plainPasswordOf(u.Password)
			su.pw = &pw
		}
		for j, g := range u.Groups {
			if strings.TrimSpace(g) == "" {
				return nil, fmt.Errorf("security: %s: groups[%d] is empty; name a group or drop it", where, j)
			}
			su.groups = append(su.groups, strings.TrimSpace(g))
		}
		out = append(out, su)
	}
	return out, nil
}

// build makes the next directory from the static users and the files: the files
// whose stat is in stats (the ones that changed) are read again, the others are
// taken from prev. With prev nil every file is read.
func (s *Service) build(prev *directory, stats []fileStat) (*directory, error) {
	d := &directory{
		accounts: make(map[string]*account),
		groups:   make(map[string][]string),
		maxConns: make(map[string]int),
		certs:    make(map[string]string),
		files:    make([]fileContents, len(s.files)),
	}
	for i, f := range s.files {
		if prev != nil && (stats == nil || stats[i] == prev.files[i].stat) {
			d.files[i] = prev.files[i]
			continue
		}
		c, err := f.read()
		if err != nil {
			return nil, err
		}
		d.files[i] = c
	}

	for _, u := range s.static {
		d.accounts[u.name] = &account{name: u.name, pw: u.pw}
		d.groups[u.name] = append(d.groups[u.name], u.groups...)
		if u.maxConns > 0 {
			d.maxConns[u.name] = u.maxConns
		}
	}
	for i, f := range s.files {
		var err error
		switch f.role {
		case jaasUsersFile:
			err = d.addJAASUsers(f, d.files[i].props)
		case jaasGroupsFile, certGroupsFile:
			err = d.addGroups(f, d.files[i].props)
		case certUsersFile:
			err = d.addCertUsers(f, d.files[i].props)
		}
		if err != nil {
			return nil, err
		}
	}
	for u, gs := range d.groups {
		d.groups[u] = sortedUnique(gs)
	}
	if err := d.classify(prev); err != nil {
		return nil, err
	}
	if len(d.work) > 1 {
		names := make([]string, len(d.work))
		for i := range d.work {
			names[i] = d.work[i].class().String()
		}
		s.log.Info("security: the users' password hashes have several costs; every failed login verifies one of each, so that its time does not tell which users exist (hash every password alike to make failed logins cheaper)",
			slog.Any("hashCosts", names))
	}
	return d, nil
}

// classify finds the cost classes of the accounts' hashes, makes d.work (taking the
// dummies of prev's classes that are still in use) and sets each account's class.
func (d *directory) classify(prev *directory) error {
	var classes []costClass
	for _, a := range d.accounts {
		a.class = -1
		if a.pw.expensive() {
			classes = append(classes, a.pw.class())
		}
	}
	slices.SortFunc(classes, compareClasses)
	classes = slices.Compact(classes)
	d.work = make([]password, len(classes))
	for i, c := range classes {
		if prev != nil {
			if j := slices.IndexFunc(prev.work, func(p password) bool { return p.class() == c }); j >= 0 {
				d.work[i] = prev.work[j]
				continue
			}
		}
		var err error
		if d.work[i], err = dummyOf(c); err != nil {
			return err
		}
	}
	for _, a := range d.accounts {
		if a.pw.expensive() {
			c := a.pw.class()
			a.class = slices.IndexFunc(classes, func(o costClass) bool { return o == c })
		}
	}
	return nil
}

// addJAASUsers adds the "user=password" lines (the last of a user's lines counts, as
// in Java).
func (d *directory) addJAASUsers(f fileSpec, props []property) error {
	lines, err := lastPerUser(f, props, "user=password")
	if err != nil {
		return err
	}
	for _, p := range lines {
		name := p.key
		where := fmt.Sprintf("%s, line %d (%s)", f, p.line, sanitize(name))
		if _, ok := d.accounts[name]; ok {
			return fmt.Errorf("security: %s: the user is also in plugins.simpleAuthentication.users; keep one", where)
		}
		var pw password
		switch {
		case p.value == "":
			return fmt.Errorf("security: %s: the password is empty; an empty password can never log in, so set one (`broker passwd` prints a hash)", where)
		case looksLikeHash(p.value):
			var err error
			if pw, err = parseHash(p.value); err != nil {
				return fmt.Errorf("security: %s: the password looks like a hash but is %w", where, err)
			}
		default:
			pw = plainPasswordOf(p.value)
		}
		d.accounts[name] = &account{name: name, pw: &pw}
	}
	return nil
}

// addGroups adds the "group=user1,user2" lines.
func (d *directory) addGroups(f fileSpec, props []property) error {
	for _, p := range props {
		if strings.TrimSpace(p.key) == "" {
			return fmt.Errorf("security: %s, line %d: the group name is empty; write group=user1,user2", f, p.line)
		}
		for _, u := range splitList(p.value) {
			d.groups[u] = append(d.groups[u], p.key)
		}
	}
	return nil
}

// addCertUsers adds the "user=DN" lines (the last of a user's lines counts).
func (d *directory) addCertUsers(f fileSpec, props []property) error {
	lines, err := lastPerUser(f, props, "user=DN")
	if err != nil {
		return err
	}
	for _, p := range lines {
		name := p.key
		where := fmt.Sprintf("%s, line %d (%s)", f, p.line, sanitize(name))
		dn, err := normalizeDN(p.value)
		if err != nil {
			return fmt.Errorf("security: %s: %w", where, err)
		}
		if other, ok := d.certs[dn]; ok {
			return fmt.Errorf("security: %s: the DN is also user %s's; a certificate names one user", where, sanitize(other))
		}
		d.certs[dn] = name
	}
	return nil
}

// groupsOf returns a copy of the user's groups.
func (d *directory) groupsOf(user string) []string {
	return slices.Clone(d.groups[user])
}

// sortedUnique returns the trimmed, non-empty names sorted without duplicates.
func sortedUnique(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lastPerUser returns the last line of each user of a "user=value" file, in the order
// the users first appear (in Java the last line of a key counts); form is the line's
// shape for the error about an empty user name.
func lastPerUser(f fileSpec, props []property, form string) ([]property, error) {
	last := make(map[string]int, len(props))
	var out []property
	for _, p := range props {
		if p.key == "" {
			return nil, fmt.Errorf("security: %s, line %d: the user name is empty; write %s", f, p.line, form)
		}
		if i, ok := last[p.key]; ok {
			out[i] = p
			continue
		}
		last[p.key] = len(out)
		out = append(out, p)
	}
	return out, nil
}
