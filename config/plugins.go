package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of the plugins section, as ActiveMQ has them where it has the setting.
const (
	DefaultAnonymousUser  = "anonymous"
	DefaultAnonymousGroup = "anonymous"
	// DefaultAdminGroup is the group that may use the admin HTTP listener.
	DefaultAdminGroup = "admins"
	// DefaultLoginFailureDelay is the delay before the ERROR of a first failed
	// login; it doubles with each further failure up to DefaultMaxLoginFailureDelay.
	DefaultLoginFailureDelay    = 100 * time.Millisecond
	DefaultMaxLoginFailureDelay = 5 * time.Second
)

// Plugins is the plugins section, ActiveMQ's simpleAuthenticationPlugin,
// jaasAuthenticationPlugin (PropertiesLoginModule, TextFileCertificateLoginModule)
// and authorizationPlugin, validated. Authentication is on when any user source
// is given: Users, JAAS or CertificateUsers; without one every client is let in
// as AnonymousUser. Authorization is on when Authorization is not nil.
type Plugins struct {
	// AnonymousAccessAllowed lets a client without a login header in as
	// AnonymousUser, member of AnonymousGroup, when authentication is on
	// (simpleAuthentication.anonymousAccessAllowed; default false).
	AnonymousAccessAllowed bool
	// AnonymousUser and AnonymousGroup name anonymous clients
	// (simpleAuthentication.anonymousUser, anonymousGroup; default "anonymous").
	AnonymousUser  string
	AnonymousGroup string
	// Users are the simpleAuthentication users in file order; nil without any.
	Users []PluginUser
	// JAAS is the jaasProperties section; nil without one.
	JAAS *JAASProperties
	// CertificateUsers is the certificateUsers section; nil without one.
	CertificateUsers *CertificateUsers
	// Authorization is the authorization section; nil without one (every
	// authenticated client may do anything), with empty Entries for "entries: []"
	// or none (nothing is allowed but what TempDestination allows).
	Authorization *Authorization
	// AdminGroups may use the admin HTTP listener (adminGroups; default
	// ["admins"]; at least one).
	AdminGroups []string
	// MaxConnectionsPerUser caps each user's live connections (default 100; 0: no
	// limit); a user's own MaxConnections overrides it.
	MaxConnectionsPerUser int
	// MaxDestinationsPerUser caps the queues and topics each user's SENDs and
	// SUBSCRIBEs create (default 10000), MaxDurableSubscriptionsPerUser the durable
	// subscriptions each user creates (default 1000); 0: no limit. Without
	// authentication no user is counted.
	MaxDestinationsPerUser         int
	MaxDurableSubscriptionsPerUser int
	// MaxUnackedBytesPerUser caps the bytes of queue messages dispatched to each
	// user's consumers and not yet acknowledged (default 256mb; 0: no limit): past it
	// they get no more until they acknowledge some.
	MaxUnackedBytesPerUser int64
	// LoginFailureDelay is how long the ERROR of a first failed login is held
	// back; it doubles with each further failure from the same address, up to
	// MaxLoginFailureDelay (defaults 100ms and 5s; more than 0, the maximum no
	// less than the first).
	LoginFailureDelay    time.Duration
	MaxLoginFailureDelay time.Duration
	// ClientIDOwnership gives a client-id holding durable subscriptions to the
	// user that made them: no other user may connect with it until an
	// administrator frees it (clientIdOwnership; default true; it applies only
	// when authentication is on).
	ClientIDOwnership bool
}

// Authentication reports whether clients must log in: whether any user source
// is given.
func (p Plugins) Authentication() bool {
	return len(p.Users) > 0 || p.JAAS != nil || p.CertificateUsers != nil
}

// PluginUser is one simpleAuthentication user. Exactly one of Password (plain
// text, as ActiveMQ's files hold them) and PasswordHash (bcrypt "$2a$", "$2b$",
// "$2y$" or argon2id "$argon2id$", as `broker passwd` prints them; only the
// prefix is checked here) is set. Printed with fmt, logged with slog or
// marshalled to JSON, a PluginUser shows neither: see Format.
type PluginUser struct {
	Username     string
	Password     string
	PasswordHash string
	// Groups are the user's groups, trimmed, without empty names or repeats.
	Groups []string
	// MaxConnections caps this user's live connections; 0: Plugins.MaxConnectionsPerUser.
	MaxConnections int
}

// JAASProperties is the jaasProperties section, ActiveMQ's PropertiesLoginModule
// files: Users holds "user=password" lines, Groups (optional, "" for none)
// "group=user1,user2" lines. Relative paths are resolved against the directory
// of the configuration file. With Reload the files are re-read when they change.
type JAASProperties struct {
	Users, Groups string
	Reload        bool
}

// CertificateUsers is the certificateUsers section, ActiveMQ's
// TextFileCertificateLoginModule: File holds "user=subject DN" lines naming the
// user of a TLS client certificate; Groups (optional, "" for none) is a
// "group=user1,user2" file. Relative paths are resolved against the directory of
// the configuration file. With Reload the files are re-read when they change.
type CertificateUsers struct {
	File, Groups string
	Reload       bool
}

// Authorization is the authorization section, ActiveMQ's authorizationMap.
type Authorization struct {
	// Entries are the authorization entries in file order; never nil.
	Entries []AuthorizationEntry
	// TempDestination is ActiveMQ's tempDestinationAuthorizationEntry, the
	// rights on temporary queues and topics; nil without one.
	TempDestination *AuthorizationRights
}

// AuthorizationEntry is one authorizationEntry: a queue (Topic false) or topic
// pattern with ActiveMQ's wildcards ("." between elements, "*" for one element,
// ">" as the last element for the rest) and the groups holding each right ("*" is
// every group).
type AuthorizationEntry struct {
	Topic              bool
	Pattern            string
	Read, Write, Admin []string
}

// AuthorizationRights are the groups that may read (SUBSCRIBE, browse), write
// (SEND) and admin (create, remove) a destination: trimmed, without empty names
// or repeats; empty for none.
type AuthorizationRights struct {
	Read, Write, Admin []string
}

// nameList is a list of names, groups, written either as a YAML list or as one
// comma-separated string.
type nameList []string

// Names is a list of names as the file writes it: a YAML list or one comma-separated
// string (see nameList).
type Names = nameList

const namesAllowed = `names as a list ([users, admins]) or comma-separated ("users,admins")`

// names reads a nameList's value: a string or a list of values, each split at
// commas; names are trimmed, and empty ones and repeats dropped.
func names(v any) nameList {
	var parts []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			parts = append(parts, strings.Split(scalarString(e), ",")...)
		}
	default:
		parts = strings.Split(scalarString(x), ",")
	}
	out := nameList{}
	seen := map[string]bool{}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// pluginsSection is plugins as written.
type pluginsSection struct {
	SimpleAuthentication           simpleAuthSection    `mapstructure:"simpleAuthentication"`
	JAASProperties                 jaasSection          `mapstructure:"jaasProperties"`
	CertificateUsers               certUsersSection     `mapstructure:"certificateUsers"`
	Authorization                  authorizationSection `mapstructure:"authorization"`
	AdminGroups                    nameList             `mapstructure:"adminGroups"`
	MaxConnectionsPerUser          int64                `mapstructure:"maxConnectionsPerUser"`
	MaxDestinationsPerUser         int64                `mapstructure:"maxDestinationsPerUser"`
	MaxDurableSubscriptionsPerUser int64                `mapstructure:"maxDurableSubscriptionsPerUser"`
	MaxUnackedBytesPerUser         byteSize             `mapstructure:"maxUnackedBytesPerUser"`
	LoginFailureDelay              time.Duration        `mapstructure:"loginFailureDelay"`
	MaxLoginFailureDelay           time.Duration        `mapstructure:"maxLoginFailureDelay"`
	ClientIDOwnership              bool                 `mapstructure:"clientIdOwnership"`
}

type simpleAuthSection struct {
	AnonymousAccessAllowed bool        `mapstructure:"anonymousAccessAllowed"`
	AnonymousUser          string      `mapstructure:"anonymousUser"`
	AnonymousGroup         string      `mapstructure:"anonymousGroup"`
	Users                  []userEntry `mapstructure:"users"`
}

// userEntry is one element of simpleAuthentication.users. The passwords are
// pointers so that an empty one ("") differs from none.
type userEntry struct {
	Username       string   `mapstructure:"username"`
	Password       *string  `mapstructure:"password"`
	PasswordHash   *string  `mapstructure:"passwordHash"`
	Groups         nameList `mapstructure:"groups"`
	MaxConnections int64    `mapstructure:"maxConnections"`
}

type jaasSection struct {
	Users  string `mapstructure:"users"`
	Groups string `mapstructure:"groups"`
	Reload bool   `mapstructure:"reload"`
}

type certUsersSection struct {
	File   string `mapstructure:"file"`
	Groups string `mapstructure:"groups"`
	Reload bool   `mapstructure:"reload"`
}

type authorizationSection struct {
	Entries         []authorizationEntry `mapstructure:"entries"`
	TempDestination rightsSection        `mapstructure:"tempDestination"`
}

type authorizationEntry struct {
	Queue     *string     `mapstructure:"queue"`
	Topic     *string     `mapstructure:"topic"`
	TempQueue rejectedKey `mapstructure:"tempQueue" hint:"not an authorization entry key: temporary queues' rights are authorization.tempDestination: {read, write, admin}, as ActiveMQ's tempDestinationAuthorizationEntry"`
	TempTopic rejectedKey `mapstructure:"tempTopic" hint:"not an authorization entry key: temporary topics' rights are authorization.tempDestination: {read, write, admin}, as ActiveMQ's tempDestinationAuthorizationEntry"`
	Read      nameList    `mapstructure:"read"`
	Write     nameList    `mapstructure:"write"`
	Admin     nameList    `mapstructure:"admin"`
}

type rightsSection struct {
	Read  nameList `mapstructure:"read"`
	Write nameList `mapstructure:"write"`
	Admin nameList `mapstructure:"admin"`
}

const (
	pluginsPath    = "plugins"
	simpleAuthPath = pluginsPath + ".simpleAuthentication"
	usersPath      = simpleAuthPath + ".users"
	authzPath      = pluginsPath + ".authorization"

	passwordHashAllowed = "a hash printed by `broker passwd`: bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$)"
	passwordAllowed     = `a password, e.g. "${APP_PASSWORD}" from the environment; or passwordHash instead`
	entryAllowed        = "exactly one of queue: <pattern>, topic: <pattern>; " +
		"temporary destinations: authorization.tempDestination"
)

// passwordHashPrefixes are the hash formats the security package verifies.
var passwordHashPrefixes = []string{"$2a$", "$2b$", "$2y$", "$argon2id$"}

// buildPlugins validates the plugins section.
func (c *checker) buildPlugins(s pluginsSection) (Plugins, *Error) {
	sa := s.SimpleAuthentication
	p := Plugins{
		AnonymousAccessAllowed:         sa.AnonymousAccessAllowed,
		AnonymousUser:                  sa.AnonymousUser,
		AnonymousGroup:                 sa.AnonymousGroup,
		AdminGroups:                    s.AdminGroups,
		MaxConnectionsPerUser:          int(s.MaxConnectionsPerUser),
		MaxDestinationsPerUser:         int(s.MaxDestinationsPerUser),
		MaxDurableSubscriptionsPerUser: int(s.MaxDurableSubscriptionsPerUser),
		MaxUnackedBytesPerUser:         int64(s.MaxUnackedBytesPerUser),
		LoginFailureDelay:              s.LoginFailureDelay,
		MaxLoginFailureDelay:           s.MaxLoginFailureDelay,
		ClientIDOwnership:              s.ClientIDOwnership,
	}
	for _, k := range []struct{ key, v string }{{"anonymousUser", sa.AnonymousUser}, {"anonymousGroup", sa.AnonymousGroup}} {
		if strings.TrimSpace(k.v) == "" {
			return Plugins{}, c.invalid(joinKey(simpleAuthPath, k.key), "must not be empty", "a name, e.g. "+DefaultAnonymousUser)
		}
	}
	var err *Error
	if p.Users, err = c.buildUsers(sa.Users); err != nil {
		return Plugins{}, err
	}
	if p.JAAS, err = c.buildJAAS(s.JAASProperties); err != nil {
		return Plugins{}, err
	}
	if p.CertificateUsers, err = c.buildCertificateUsers(s.CertificateUsers); err != nil {
		return Plugins{}, err
	}
	if c.given(simpleAuthPath) && !p.Authentication() {
		// ActiveMQ would let no one in with credentials; here it is more likely a
		// list that came out empty than a wish.
		return Plugins{}, c.invalid(usersPath, "simpleAuthentication has no users, and there is no jaasProperties or "+
			"certificateUsers: no client could log in", "at least one {username, password | passwordHash, groups}; "+
			"or no simpleAuthentication section for no authentication")
	}
	if p.Authorization, err = c.buildAuthorization(s.Authorization); err != nil {
		return Plugins{}, err
	}
	if len(p.AdminGroups) == 0 {
		return Plugins{}, c.invalid(joinKey(pluginsPath, "adminGroups"), "must name at least one group", namesAllowed)
	}
	for _, q := range []struct {
		key string
		n   int64
	}{{"maxConnectionsPerUser", s.MaxConnectionsPerUser}, {"maxDestinationsPerUser", s.MaxDestinationsPerUser},
		{"maxDurableSubscriptionsPerUser", s.MaxDurableSubscriptionsPerUser}, {"maxUnackedBytesPerUser", int64(s.MaxUnackedBytesPerUser)}} {
		if err := c.intRange(joinKey(pluginsPath, q.key), q.n, 0, math.MaxInt32, "0 for no limit"); err != nil {
			return Plugins{}, err
		}
	}
	if err := c.positive(joinKey(pluginsPath, "loginFailureDelay"), s.LoginFailureDelay); err != nil {
		return Plugins{}, err
	}
	if s.MaxLoginFailureDelay < s.LoginFailureDelay {
		return Plugins{}, c.invalid(joinKey(pluginsPath, "maxLoginFailureDelay"),
			fmt.Sprintf("less than loginFailureDelay (%s)", s.LoginFailureDelay),
			"a duration no less than loginFailureDelay")
	}
	return p, nil
}

// buildUsers validates simpleAuthentication.users.
func (c *checker) buildUsers(entries []userEntry) ([]PluginUser, *Error) {
	var out []PluginUser
	seen := map[string]int{}
	for i, e := range entries {
		at := joinIndex(usersPath, i)
		key := func(k string) string { return joinKey(at, k) }
		if strings.TrimSpace(e.Username) == "" {
			return nil, c.invalid(key("username"), "missing username", "a user name, unique in the list")
		}
		if j, dup := seen[e.Username]; dup {
			return nil, c.invalid(key("username"), fmt.Sprintf("duplicate username (also %s)", c.written(joinIndex(usersPath, j))),
				"a name not used by another user")
		}
		seen[e.Username] = i
		u := PluginUser{Username: e.Username, Groups: e.Groups, MaxConnections: int(e.MaxConnections)}
		switch {
		case e.Password == nil && e.PasswordHash == nil:
			return nil, c.invalid(at, "user "+e.Username+" has no password", "one of password or passwordHash")
		case e.Password != nil && e.PasswordHash != nil:
			return nil, c.invalid(at, "user "+e.Username+" has both password and passwordHash", "one of password or passwordHash")
		case e.Password != nil:
			if *e.Password == "" {
				return nil, c.invalid(key("password"), "must not be empty", passwordAllowed)
			}
			u.Password = *e.Password
		default:
			if !hasHashPrefix(*e.PasswordHash) {
				problem := "not a bcrypt or argon2id hash"
				if *e.PasswordHash == "" {
					problem = "must not be empty"
				}
				return nil, c.invalid(key("passwordHash"), problem, passwordHashAllowed)
			}
			u.PasswordHash = *e.PasswordHash
		}
		if err := c.intRange(key("maxConnections"), e.MaxConnections, 0, math.MaxInt32, "0 for plugins.maxConnectionsPerUser"); err != nil {
			return nil, err
		}
		if u.Groups == nil {
			u.Groups = []string{}
		}
		out = append(out, u)
	}
	return out, nil
}

func hasHashPrefix(h string) bool {
	for _, p := range passwordHashPrefixes {
		if strings.HasPrefix(h, p) {
			return true
		}
	}
	return false
}

// buildJAAS validates jaasProperties; nil without the section.
func (c *checker) buildJAAS(s jaasSection) (*JAASProperties, *Error) {
	const path = pluginsPath + ".jaasProperties"
	if !c.has(path) {
		return nil, nil
	}
	if strings.TrimSpace(s.Users) == "" {
		return nil, c.invalid(joinKey(path, "users"), "missing: jaasProperties needs a users file",
			"a properties file of user=password lines, relative to the configuration file's directory")
	}
	return &JAASProperties{Users: c.resolve(s.Users), Groups: c.resolve(s.Groups), Reload: s.Reload}, nil
}

// buildCertificateUsers validates certificateUsers; nil without the section.
func (c *checker) buildCertificateUsers(s certUsersSection) (*CertificateUsers, *Error) {
	const path = pluginsPath + ".certificateUsers"
	if !c.has(path) {
		return nil, nil
	}
	if strings.TrimSpace(s.File) == "" {
		return nil, c.invalid(joinKey(path, "file"), "missing: certificateUsers needs a file",
			"a properties file of user=subject DN lines, relative to the configuration file's directory")
	}
	return &CertificateUsers{File: c.resolve(s.File), Groups: c.resolve(s.Groups), Reload: s.Reload}, nil
}

// resolve makes a relative path of the plugins section relative to the
// configuration file's directory; "" stays "".
func (c *checker) resolve(p string) string {
	if p == "" || c.dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// buildAuthorization validates the authorization section; nil without one.
func (c *checker) buildAuthorization(s authorizationSection) (*Authorization, *Error) {
	if !c.has(authzPath) {
		return nil, nil
	}
	a := &Authorization{Entries: []AuthorizationEntry{}}
	for i, e := range s.Entries {
		at := joinIndex(joinKey(authzPath, "entries"), i)
		var kind, pattern string
		switch {
		case e.Queue == nil && e.Topic == nil:
			return nil, c.invalid(at, "the entry names no destination: it needs queue or topic", entryAllowed)
		case e.Queue != nil && e.Topic != nil:
			return nil, c.invalid(at, "the entry has both queue and topic; it may name one", entryAllowed)
		case e.Queue != nil:
			kind, pattern = "queue", *e.Queue
		default:
			kind, pattern = "topic", *e.Topic
		}
		if err := c.checkPattern(joinKey(at, kind), pattern); err != nil {
			return nil, err
		}
		r := rights(e.Read, e.Write, e.Admin)
		a.Entries = append(a.Entries, AuthorizationEntry{Topic: kind == "topic", Pattern: pattern, Read: r.Read, Write: r.Write, Admin: r.Admin})
	}
	if c.has(joinKey(authzPath, "tempDestination")) {
		r := rights(s.TempDestination.Read, s.TempDestination.Write, s.TempDestination.Admin)
		a.TempDestination = &r
	}
	return a, nil
}

// rights makes AuthorizationRights with empty, never nil, lists.
func rights(read, write, admin nameList) AuthorizationRights {
	list := func(n nameList) []string {
		if n == nil {
			return []string{}
		}
		return n
	}
	return AuthorizationRights{Read: list(read), Write: list(write), Admin: list(admin)}
}

// has reports whether the settings tree holds path, written in the file (even
// with no value) or set from the environment.
func (c *checker) has(path string) bool {
	_, ok := c.lookup(path)
	return ok
}

// given reports whether the file wrote path, or an environment variable set a
// key at or below it; unlike has, a default does not count.
func (c *checker) given(path string) bool {
	lp := strings.ToLower(path)
	if _, ok := c.spell[lp]; ok {
		return true
	}
	for k := range c.from {
		if k == lp || strings.HasPrefix(k, lp+".") {
			return true
		}
	}
	return false
}

// userView is a PluginUser as it may be shown: the password and hash replaced by
// "xxxxx" when set.
type userView struct {
	Username       string
	Password       string
	PasswordHash   string
	Groups         []string
	MaxConnections int
}

func (u PluginUser) view() userView {
	v := userView{Username: u.Username, Groups: u.Groups, MaxConnections: u.MaxConnections}
	if u.Password != "" {
		v.Password = "xxxxx"
	}
	if u.PasswordHash != "" {
		v.PasswordHash = "xxxxx"
	}
	return v
}

// Format prints the user with its password and password hash redacted, whatever
// the verb, so that printing a Config (%v, %+v, %#v) never shows them.
func (u PluginUser) Format(f fmt.State, verb rune) {
	s := fmt.Sprintf(fmt.FormatString(f, verb), u.view())
	if verb == 'v' && f.Flag('#') {
		s = "config.PluginUser" + strings.TrimPrefix(s, "config.userView")
	}
	_, _ = io.WriteString(f, s)
}

// LogValue logs the user with its password and password hash redacted.
func (u PluginUser) LogValue() slog.Value {
	v := u.view()
	return slog.GroupValue(slog.String("username", v.Username), slog.String("password", v.Password),
		slog.String("passwordHash", v.PasswordHash), slog.Any("groups", v.Groups), slog.Int("maxConnections", v.MaxConnections))
}

// MarshalJSON encodes the user with its password and password hash redacted.
func (u PluginUser) MarshalJSON() ([]byte, error) {
	return json.Marshal(u.view())
}
