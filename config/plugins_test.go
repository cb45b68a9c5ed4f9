package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pluginsExample writes every key of the plugins section and the broker's
// JMSXUserID keys.
const pluginsExample = `
broker:
  populateJMSXUserID: true
  useAuthenticatedPrincipalForJMSXUserID: true
plugins:
  simpleAuthentication:
    anonymousAccessAllowed: false
    anonymousUser: anonymous
    anonymousGroup: anonymous
    users:
      - {username: system, password: "${SYSTEM_PASSWORD}", groups: [users, admins]}
      - {username: app, passwordHash: "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy", groups: "users,ops", maxConnections: 10}
  jaasProperties: {users: users.properties, groups: groups.properties, reload: true}
  certificateUsers: {file: users-by-dn.properties, groups: groups.properties, reload: true}
  authorization:
    entries:
      - {queue: ">", read: admins, write: admins, admin: admins}
      - {queue: "USERS.>", read: users, write: users, admin: users}
      - {topic: "ActiveMQ.Advisory.>", read: "guests,users", write: [guests, users], admin: "guests,users"}
    tempDestination: {read: users, write: users, admin: users}
  adminGroups: [admins]
  maxConnectionsPerUser: 0
  loginFailureDelay: 100ms
  maxLoginFailureDelay: 5s
`

// loadFile writes yaml to a file in a new directory and loads it with environ.
func loadFile(t *testing.T, yaml string, environ ...string) (*Config, string, error) {
	t.Helper()
	isolateEnv(t)
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "activemq-style.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	c, err := Load(path)
	return c, dir, err
}

func TestPluginsExample(t *testing.T) {
	c, dir, err := loadFile(t, pluginsExample, "SYSTEM_PASSWORD=p#ss: w0rd")
	require.NoError(t, err)
	assert.True(t, c.Broker.PopulateJMSXUserID)
	assert.True(t, c.Broker.UseAuthenticatedPrincipalForJMSXUserID)
	assert.Equal(t, Plugins{
		AnonymousAccessAllowed: false,
		AnonymousUser:          "anonymous",
		AnonymousGroup:         "anonymous",
		Users: []PluginUser{
			{Username: "system", Password: "p#ss: w0rd", Groups: []string{"users", "admins"}},
			{Username: "app", PasswordHash: "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy",
				Groups: []string{"users", "ops"}, MaxConnections: 10},
		},
		JAAS: &JAASProperties{Users: filepath.Join(dir, "users.properties"), Groups: filepath.Join(dir, "groups.properties"), Reload: true},
		CertificateUsers: &CertificateUsers{File: filepath.Join(dir, "users-by-dn.properties"),
			Groups: filepath.Join(dir, "groups.properties"), Reload: true},
		Authorization: &Authorization{
			Entries: []AuthorizationEntry{
				{Pattern: ">", Read: []string{"admins"}, Write: []string{"admins"}, Admin: []string{"admins"}},
				{Pattern: "USERS.>", Read: []string{"users"}, Write: []string{"users"}, Admin: []string{"users"}},
				{Topic: true, Pattern: "ActiveMQ.Advisory.>", Read: []string{"guests", "users"},
					Write: []string{"guests", "users"}, Admin: []string{"guests", "users"}},
			},
			TempDestination: &AuthorizationRights{Read: []string{"users"}, Write: []string{"users"}, Admin: []string{"users"}},
		},
		AdminGroups:            []string{"admins"},
		MaxConnectionsPerUser:  0,
		MaxDestinationsPerUser: 10000, MaxDurableSubscriptionsPerUser: 1000, MaxUnackedBytesPerUser: 256 << 20,
		LoginFailureDelay:    100 * time.Millisecond,
		MaxLoginFailureDelay: 5 * time.Second,
		ClientIDOwnership:    true,
	}, c.Plugins)
	assert.True(t, c.Plugins.Authentication())
}

func TestPluginsDefaults(t *testing.T) {
	c := Default()
	assert.False(t, c.Plugins.Authentication(), "no authentication without a user source")
	assert.Nil(t, c.Plugins.Users)
	assert.Nil(t, c.Plugins.JAAS)
	assert.Nil(t, c.Plugins.CertificateUsers)
	assert.Nil(t, c.Plugins.Authorization)
	assert.False(t, c.Broker.PopulateJMSXUserID)
	assert.False(t, c.Broker.UseAuthenticatedPrincipalForJMSXUserID)

	// One user source is enough; the other keys keep their defaults.
	c, err := Parse([]byte("plugins:\n  jaasProperties: {users: u.properties}\n"), nil)
	require.NoError(t, err)
	assert.True(t, c.Plugins.Authentication())
	assert.Equal(t, &JAASProperties{Users: "u.properties"}, c.Plugins.JAAS)
	assert.Equal(t, Default().Plugins.AdminGroups, c.Plugins.AdminGroups)
	c, err = Parse([]byte("plugins:\n  certificateUsers: {file: dn.properties}\n"), nil)
	require.NoError(t, err)
	assert.True(t, c.Plugins.Authentication())
	assert.True(t, c.Plugins.ClientIDOwnership, "client-ids are owned by default")
	c, err = Parse([]byte("plugins:\n  clientIdOwnership: false\n"), nil)
	require.NoError(t, err)
	assert.False(t, c.Plugins.ClientIDOwnership)
}

func TestPluginsGroups(t *testing.T) {
	for _, tt := range []struct {
		groups string
		want   []string
	}{
		{`"users,ops"`, []string{"users", "ops"}},
		{`[users, ops]`, []string{"users", "ops"}},
		{`" users , ,ops, "`, []string{"users", "ops"}},
		{`[" users", "", ops]`, []string{"users", "ops"}},
		{`[users, "ops, admins"]`, []string{"users", "ops", "admins"}},
		{`"users,users,ops"`, []string{"users", "ops"}},
		{`"*"`, []string{"*"}},
		{`[1, 2]`, []string{"1", "2"}},
		{`users`, []string{"users"}},
		{`[]`, []string{}},
		{`""`, []string{}},
	} {
		yaml := "plugins:\n  simpleAuthentication:\n    users:\n      - username: a\n        password: p\n        groups: " + tt.groups + "\n" +
			"  authorization:\n    entries:\n      - {queue: A, read: " + tt.groups + "}\n" +
			"  adminGroups: [admins]\n"
		c, err := Parse([]byte(yaml), nil)
		require.NoError(t, err, tt.groups)
		assert.Equal(t, tt.want, c.Plugins.Users[0].Groups, tt.groups)
		assert.Equal(t, tt.want, c.Plugins.Authorization.Entries[0].Read, tt.groups)
		assert.Equal(t, []string{}, c.Plugins.Authorization.Entries[0].Write, "no groups: an empty list")
	}
	// A group-less user has an empty list too.
	c, err := Parse([]byte("plugins: {simpleAuthentication: {users: [{username: a, password: p}]}}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{}, c.Plugins.Users[0].Groups)

	c, err = Parse([]byte("plugins: {adminGroups: 'ops, admins'}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ops", "admins"}, c.Plugins.AdminGroups)
}

func TestPluginsAuthorizationPresence(t *testing.T) {
	for _, tt := range []struct {
		yaml    string
		want    *Authorization
		comment string
	}{
		{"plugins: {}\n", nil, "no section: no authorization"},
		{"plugins:\n  authorization:\n", &Authorization{Entries: []AuthorizationEntry{}}, "an empty section denies everything"},
		{"plugins: {authorization: {}}\n", &Authorization{Entries: []AuthorizationEntry{}}, ""},
		{"plugins: {authorization: {entries: []}}\n", &Authorization{Entries: []AuthorizationEntry{}}, ""},
		{"plugins: {authorization: {entries: }}\n", &Authorization{Entries: []AuthorizationEntry{}}, ""},
		{"plugins: {authorization: {tempDestination: {}}}\n", &Authorization{Entries: []AuthorizationEntry{},
			TempDestination: &AuthorizationRights{Read: []string{}, Write: []string{}, Admin: []string{}}}, "an empty tempDestination allows nothing"},
		{"plugins: {authorization: {tempDestination: {write: '*'}}}\n", &Authorization{Entries: []AuthorizationEntry{},
			TempDestination: &AuthorizationRights{Read: []string{}, Write: []string{"*"}, Admin: []string{}}}, ""},
	} {
		c, err := Parse([]byte(tt.yaml), nil)
		require.NoError(t, err, tt.yaml)
		assert.Equal(t, tt.want, c.Plugins.Authorization, "%q: %s", tt.yaml, tt.comment)
	}
	c, err := Parse(nil, []string{"BROKER_PLUGINS_AUTHORIZATION_ENTRIES_0_TOPIC=A.>", "BROKER_PLUGINS_AUTHORIZATION_ENTRIES_0_READ=a,b"})
	require.NoError(t, err)
	assert.Equal(t, &Authorization{Entries: []AuthorizationEntry{
		{Topic: true, Pattern: "A.>", Read: []string{"a", "b"}, Write: []string{}, Admin: []string{}},
	}}, c.Plugins.Authorization, "created by the environment")
}

func TestPluginsRelativePaths(t *testing.T) {
	const yaml = "plugins:\n" +
		"  jaasProperties: {users: conf/users.properties, groups: /etc/broker/groups.properties}\n" +
		"  certificateUsers: {file: ../dn.properties}\n"
	c, dir, err := loadFile(t, yaml)
	require.NoError(t, err)
	assert.Equal(t, &JAASProperties{Users: filepath.Join(dir, "conf", "users.properties"), Groups: "/etc/broker/groups.properties"}, c.Plugins.JAAS)
	assert.Equal(t, &CertificateUsers{File: filepath.Join(filepath.Dir(dir), "dn.properties")}, c.Plugins.CertificateUsers)

	// A file loaded by a relative path gives paths relative to the same directory.
	t.Chdir(filepath.Dir(dir))
	c, err = Load(filepath.Join(filepath.Base(dir), "activemq-style.yaml"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(filepath.Base(dir), "conf", "users.properties"), c.Plugins.JAAS.Users)
	assert.Equal(t, "dn.properties", c.Plugins.CertificateUsers.File)

	// Parse has no file: the paths stay as written.
	c, err = Parse([]byte(yaml), nil)
	require.NoError(t, err)
	assert.Equal(t, "conf/users.properties", c.Plugins.JAAS.Users)
	assert.Equal(t, "../dn.properties", c.Plugins.CertificateUsers.File)

	// The environment's paths are resolved the same way.
	c, dir, err = loadFile(t, "", "BROKER_PLUGINS_JAASPROPERTIES_USERS=u.properties")
	require.NoError(t, err)
	assert.Equal(t, &JAASProperties{Users: filepath.Join(dir, "u.properties")}, c.Plugins.JAAS)
}

func TestPluginsEnvironment(t *testing.T) {
	c, err := Parse([]byte(pluginsExample), []string{
		"SYSTEM_PASSWORD=x",
		"BROKER_PLUGINS_MAXCONNECTIONSPERUSER=5",
		"BROKER_PLUGINS_ADMINGROUPS=ops, admins",
		"BROKER_PLUGINS_LOGINFAILUREDELAY=1s",
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_ANONYMOUSACCESSALLOWED=true",
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_1_MAXCONNECTIONS=3",
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_2_USERNAME=extra",
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_2_PASSWORD=" + secret,
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_2_GROUPS=users",
		"BROKER_PLUGINS_JAASPROPERTIES_RELOAD=false",
		"BROKER_BROKER_POPULATEJMSXUSERID=false",
	})
	require.NoError(t, err)
	p := c.Plugins
	assert.Equal(t, 5, p.MaxConnectionsPerUser)
	assert.Equal(t, []string{"ops", "admins"}, p.AdminGroups)
	assert.Equal(t, time.Second, p.LoginFailureDelay)
	assert.True(t, p.AnonymousAccessAllowed)
	assert.Equal(t, 3, p.Users[1].MaxConnections)
	require.Len(t, p.Users, 3)
	assert.Equal(t, PluginUser{Username: "extra", Password: secret, Groups: []string{"users"}}, p.Users[2])
	assert.False(t, p.JAAS.Reload)
	assert.False(t, c.Broker.PopulateJMSXUserID)

	// Defaults are overridden too.
	c, err = Parse(nil, []string{"BROKER_PLUGINS_MAXCONNECTIONSPERUSER=7"})
	require.NoError(t, err)
	assert.Equal(t, 7, c.Plugins.MaxConnectionsPerUser)
}

func TestPluginsEnvironmentErrors(t *testing.T) {
	for _, tt := range []struct {
		env, key, problem string
	}{
		{"BROKER_PLUGINS_MAXCONNECTIONSPERUSER=-1", "plugins.maxConnectionsPerUser", "(set by environment variable BROKER_PLUGINS_MAXCONNECTIONSPERUSER)"},
		{"BROKER_PLUGINS_ADMINGROUPS_0=ops", "BROKER_PLUGINS_ADMINGROUPS_0", "set it whole, comma-separated, e.g. BROKER_PLUGINS_ADMINGROUPS=a,b"},
		{"BROKER_PLUGINS_AUTHORIZATION_ENTRIES_0_TEMPQUEUE=true", "BROKER_PLUGINS_AUTHORIZATION_ENTRIES_0_TEMPQUEUE", "tempDestination"},
		{"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS=alice:" + secret, "BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS", "set its keys one by one"},
		{"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0_PASSWORD=", "plugins.simpleAuthentication.users[0].username", "missing username"},
		{"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0=" + secret, "BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0", "is a section"},
	} {
		_, err := Parse(nil, []string{tt.env})
		ce := assertConfigError(t, err, tt.key, "")
		assert.Contains(t, ce.Problem, tt.problem, tt.env)
		assert.NotContains(t, err.Error(), secret)
	}
}

// TestPasswordsAreTakenAsWritten: YAML would read an unquoted password 0123 as the
// octal number 83; a password is always the text as written or as its
// placeholder expanded.
func TestPasswordsAreTakenAsWritten(t *testing.T) {
	for _, tt := range []struct {
		value, env, want string
	}{
		{"0123", "", "0123"},
		{"0x1F", "", "0x1F"},
		{"1e3", "", "1e3"},
		{"true", "", "true"},
		{"'0123'", "", "0123"},
		{"${P}", "0123", "0123"},
		{"${P}", "1.50", "1.50"},
		{"${P}", "~", "~"},
		{"${P}", "null", "null"},
		{"${P}", "p#ss: w'o\"rd", "p#ss: w'o\"rd"},
		{"x${P}", "7", "x7"},
	} {
		yaml := "plugins:\n  simpleAuthentication:\n    users:\n      - username: a\n        password: " + tt.value + "\n"
		c, err := Parse([]byte(yaml), []string{"P=" + tt.env})
		require.NoError(t, err, tt.value)
		assert.Equal(t, tt.want, c.Plugins.Users[0].Password, "%s with P=%q", tt.value, tt.env)
	}
	// The same in a flow mapping, and for the JDBC adapter's password.
	c, err := Parse([]byte("plugins: {simpleAuthentication: {users: [{username: a, password: 007}]}}\n"+
		"persistenceAdapter: {jdbc: {url: 'postgres://h/d', password: 0123}}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, "007", c.Plugins.Users[0].Password)
	assert.Equal(t, "0123", c.Persistence.Options["password"])

	// No value is no password.
	_, err = Parse([]byte("plugins: {simpleAuthentication: {users: [{username: a, password: }]}}\n"), nil)
	ce := assertConfigError(t, err, "plugins.simpleAuthentication.users[0]", "password or passwordHash")
	assert.Contains(t, ce.Problem, "has no password")
}

func TestPluginsUnsetPasswordVariable(t *testing.T) {
	_, err := Parse([]byte(pluginsExample), nil)
	ce := assertConfigError(t, err, "plugins.simpleAuthentication.users[0].password", "set the variable")
	assert.Contains(t, ce.Problem, "environment variable SYSTEM_PASSWORD is not set")
	assert.Contains(t, err.Error(), "SYSTEM_PASSWORD")
}

func TestPluginsErrors(t *testing.T) {
	const (
		pluginKeys = "simpleAuthentication, jaasProperties, certificateUsers, authorization, adminGroups, " +
			"maxConnectionsPerUser, maxDestinationsPerUser, maxDurableSubscriptionsPerUser, maxUnackedBytesPerUser, loginFailureDelay, maxLoginFailureDelay"
		userKeys  = "username, password, passwordHash, groups, maxConnections"
		entryKeys = "queue, topic, read, write, admin"
		users     = "plugins.simpleAuthentication.users"
		entries   = "plugins.authorization.entries"
	)
	user := func(u string) string { return "plugins:\n  simpleAuthentication:\n    users:\n      - " + u + "\n" }
	entry := func(e string) string { return "plugins:\n  authorization:\n    entries:\n      - " + e + "\n" }
	runErrorCases(t, []errorCase{
		// plugins
		{"plugins not a mapping", "plugins: 'alice:" + secret + "'\n", "plugins", "must be a mapping", pluginKeys, "xxxxx"},
		{"unknown plugin", "plugins: {jaasAuthenticationPlugin: {}}\n", "plugins.jaasAuthenticationPlugin", "unknown key", pluginKeys, ""},
		{"no admin group", "plugins: {adminGroups: []}\n", "plugins.adminGroups", "at least one group", "comma-separated", ""},
		{"no admin group, string", "plugins: {adminGroups: ' , '}\n", "plugins.adminGroups", "at least one group", "comma-separated", " , "},
		{"admin groups a mapping", "plugins: {adminGroups: {a: b}}\n", "plugins.adminGroups", "not a mapping", "comma-separated", ""},
		{"admin group a list", "plugins: {adminGroups: [[a]]}\n", "plugins.adminGroups[0]", "single value", "", ""},
		{"negative maxConnectionsPerUser", "plugins: {maxConnectionsPerUser: -1}\n", "plugins.maxConnectionsPerUser", "-1 is out of range", "0 for no limit", "-1"},
		{"negative maxDestinationsPerUser", "plugins: {maxDestinationsPerUser: -1}\n", "plugins.maxDestinationsPerUser", "-1 is out of range", "0 for no limit", "-1"},
		{"negative maxUnackedBytesPerUser", "plugins: {maxUnackedBytesPerUser: -1}\n", "plugins.maxUnackedBytesPerUser", "", "", ""},
		{"negative maxDurableSubscriptionsPerUser", "plugins: {maxDurableSubscriptionsPerUser: -1}\n", "plugins.maxDurableSubscriptionsPerUser", "-1 is out of range", "0 for no limit", "-1"},
		{"zero loginFailureDelay", "plugins: {loginFailureDelay: 0}\n", "plugins.loginFailureDelay", "more than 0", "milliseconds", "0"},
		{"bad loginFailureDelay", "plugins: {loginFailureDelay: soon}\n", "plugins.loginFailureDelay", "not a duration", "", ""},
		{"max below first delay", "plugins: {loginFailureDelay: 1s, maxLoginFailureDelay: 50ms}\n", "plugins.maxLoginFailureDelay",
			"less than loginFailureDelay (1s)", "no less than loginFailureDelay", "50ms"},
		{"populateJMSXUserID not a boolean", "broker: {populateJMSXUserID: maybe}\n", "broker.populateJMSXUserID", "not a boolean", "true, false", "maybe"},

		// simpleAuthentication
		{"unknown simpleAuthentication key", "plugins: {simpleAuthentication: {userz: []}}\n", "plugins.simpleAuthentication.userz", "unknown key",
			"anonymousAccessAllowed, anonymousUser, anonymousGroup, users", ""},
		{"simpleAuthentication without users", "plugins:\n  simpleAuthentication:\n    users: []\n", users, "no client could log in", "no simpleAuthentication section", ""},
		{"simpleAuthentication null", "plugins:\n  simpleAuthentication:\n", users, "no client could log in", "", ""},
		{"simpleAuthentication anonymous only", "plugins: {simpleAuthentication: {anonymousAccessAllowed: true}}\n", users, "no client could log in", "", ""},
		{"empty anonymousUser", "plugins: {jaasProperties: {users: u}, simpleAuthentication: {anonymousUser: ''}}\n",
			"plugins.simpleAuthentication.anonymousUser", "must not be empty", "", ""},
		{"empty anonymousGroup", "plugins: {simpleAuthentication: {anonymousGroup: ' '}}\n", "plugins.simpleAuthentication.anonymousGroup", "must not be empty", "", ""},
		{"users not a list", "plugins: {simpleAuthentication: {users: 'alice:" + secret + "'}}\n", users, "must be a list", "", "xxxxx"},
		{"user not a mapping", "plugins: {simpleAuthentication: {users: ['alice:" + secret + "']}}\n", users + "[0]", "must be a mapping", userKeys, "xxxxx"},
		{"unknown user key", user("{username: a, pasword: " + secret + "}"), users + "[0].pasword", "unknown key", userKeys, ""},
		{"missing username", user("{password: " + secret + "}"), users + "[0].username", "missing username", "unique", ""},
		{"empty username", user("{username: ' ', password: " + secret + "}"), users + "[0].username", "missing username", "unique", ""},
		{"duplicate username", "plugins:\n  simpleAuthentication:\n    users:\n      - {username: a, password: " + secret + "}\n" +
			"      - {username: a, passwordHash: $2b$x}\n", users + "[1].username", "duplicate username (also " + users + "[0])", "not used by another user", "a"},
		{"no password", user("{username: a, groups: [x]}"), users + "[0]", "user a has no password", "one of password or passwordHash", ""},
		{"both passwords", user("{username: a, password: " + secret + ", passwordHash: $2y$" + secret + "}"), users + "[0]",
			"has both password and passwordHash", "one of password or passwordHash", ""},
		{"empty password", user("{username: a, password: ''}"), users + "[0].password", "must not be empty", "${APP_PASSWORD}", ""},
		{"empty passwordHash", user("{username: a, passwordHash: ''}"), users + "[0].passwordHash", "must not be empty", "broker passwd", ""},
		{"plain password as hash", user("{username: a, passwordHash: " + secret + "}"), users + "[0].passwordHash", "not a bcrypt or argon2id hash",
			"$2a$, $2b$, $2y$", "xxxxx"},
		{"md5 hash", user("{username: a, passwordHash: $1$abc$" + secret + "}"), users + "[0].passwordHash", "not a bcrypt or argon2id hash",
			"$argon2id$", "xxxxx"},
		{"password a list", user("{username: a, password: [" + secret + "]}"), users + "[0].password", "single value", "", ""},
		{"negative maxConnections", user("{username: a, password: " + secret + ", maxConnections: -1}"), users + "[0].maxConnections",
			"-1 is out of range", "0 for plugins.maxConnectionsPerUser", "-1"},
		{"groups a mapping", user("{username: a, password: " + secret + ", groups: {x: y}}"), users + "[0].groups", "not a mapping", "comma-separated", ""},

		// jaasProperties, certificateUsers
		{"jaasProperties without users", "plugins: {jaasProperties: {groups: g.properties}}\n", "plugins.jaasProperties.users",
			"jaasProperties needs a users file", "user=password", ""},
		{"jaasProperties null", "plugins:\n  jaasProperties:\n", "plugins.jaasProperties.users", "needs a users file", "", ""},
		{"unknown jaasProperties key", "plugins: {jaasProperties: {usersFile: u}}\n", "plugins.jaasProperties.usersFile", "unknown key", "users, groups, reload", ""},
		{"certificateUsers without file", "plugins: {certificateUsers: {reload: true}}\n", "plugins.certificateUsers.file",
			"certificateUsers needs a file", "user=subject DN", ""},

		// authorization
		{"unknown authorization key", "plugins: {authorization: {authorizationEntries: []}}\n", "plugins.authorization.authorizationEntries",
			"unknown key", "entries, tempDestination", ""},
		{"entry names nothing", entry("{read: a}"), entries + "[0]", "names no destination", "exactly one of queue", ""},
		{"entry names both", entry("{queue: A, topic: B}"), entries + "[0]", "both queue and topic", "exactly one of queue", ""},
		{"entry tempQueue", entry("{tempQueue: true, read: a}"), entries + "[0].tempQueue", "authorization.tempDestination", entryKeys, "true"},
		{"entry tempTopic", entry("{topic: A, tempTopic: true}"), entries + "[0].tempTopic", "tempDestinationAuthorizationEntry", entryKeys, ""},
		{"empty pattern", entry("{queue: '', read: a}"), entries + "[0].queue", "must not be empty", "wildcards", ""},
		{"unquoted >", "plugins:\n  authorization:\n    entries:\n      - topic: >\n        read: a\n", entries + "[0].topic", "quote a lone", "", ""},
		{"STOMP destination", entry("{queue: /queue/A}"), entries + "[0].queue", "STOMP destination", "wildcards", "/queue/A"},
		{"> not last", entry("{topic: 'A.>.B'}"), entries + "[0].topic", `">" may only be the whole last element`, "", ""},
		{"unknown tempDestination key", "plugins: {authorization: {tempDestination: {queue: A}}}\n", "plugins.authorization.tempDestination.queue",
			"unknown key", "read, write, admin", ""},
	})
}

func TestPluginsErrorsNeverShowPasswords(t *testing.T) {
	for _, yaml := range []string{
		"plugins:\n  simpleAuthentication:\n    users:\n      - {username: a, password: " + secret + ", passwordHash: $2a$" + secret + "}\n",
		"plugins:\n  simpleAuthentication:\n    users:\n      - {username: a, password: [" + secret + "]}\n",
		"plugins:\n  simpleAuthentication:\n    users:\n      - {username: a, passwordHash: " + secret + "}\n",
		"plugins:\n  simpleAuthentication:\n    users:\n      - {username: a, password: " + secret + ", maxConnections: x}\n",
		"plugins:\n  simpleAuthentication:\n    users:\n      - a:" + secret + "\n",
		"plugins:\n  simpleAuthentication: a:" + secret + "\n",
		"plugins:\n  simpleAuthentication:\n    users: {a: " + secret + "}\n",
	} {
		_, err := Parse([]byte(yaml), nil)
		require.Error(t, err, yaml)
		assert.NotContains(t, err.Error(), secret, yaml)
		assert.NotContains(t, fmt.Sprintf("%+v %#v", err, err), secret, yaml)
	}
}

// TestPluginUserNeverPrintsPassword: a Config printed, logged or marshalled,
// whole or in part, shows no password nor hash.
func TestPluginUserNeverPrintsPassword(t *testing.T) {
	const hash = "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"
	c, err := Parse([]byte(pluginsExample), []string{"SYSTEM_PASSWORD=" + secret})
	require.NoError(t, err)
	u := c.Plugins.Users[0]
	require.Equal(t, secret, u.Password)
	require.Equal(t, hash, c.Plugins.Users[1].PasswordHash)

	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		fmt.Fprintf(&out, verb+"\n", c)
		fmt.Fprintf(&out, verb+"\n", *c)
		fmt.Fprintf(&out, verb+"\n", c.Plugins)
		fmt.Fprintf(&out, verb+"\n", c.Plugins.Users)
		fmt.Fprintf(&out, verb+"\n", u)
		fmt.Fprintf(&out, verb+"\n", &u)
	}
	fmt.Fprintln(&out, c, u)
	j, err := json.Marshal(c)
	require.NoError(t, err)
	out.Write(j)
	for _, h := range []slog.Handler{slog.NewJSONHandler(&out, nil), slog.NewTextHandler(&out, nil)} {
		log := slog.New(h)
		log.Info("config", "plugins", c.Plugins, "user", u, "users", c.Plugins.Users, "config", c)
	}
	assert.NotContains(t, out.String(), secret)
	assert.NotContains(t, out.String(), hash[7:])
	assert.Contains(t, out.String(), "system", "the user is shown, without its password")
	assert.Contains(t, out.String(), "xxxxx")
	assert.Equal(t, `config.PluginUser{Username:"system", Password:"xxxxx", PasswordHash:"", Groups:[]string{"users", "admins"}, MaxConnections:0}`,
		fmt.Sprintf("%#v", u))
}

func TestAllowedOrigins(t *testing.T) {
	for _, tt := range []struct {
		uri  string
		want []string
	}{
		{"ws://0.0.0.0:61614", nil},
		{"ws://0.0.0.0:61614?allowedOrigins=example.com", []string{"example.com"}},
		{"ws://0.0.0.0:61619?allowedOrigins=*.example.com,%20app.example.org:8443%20,,", []string{"*.example.com", "app.example.org:8443"}},
		{"ws://h:1?allowedOrigins=*", []string{"*"}},
		{"ws://h:1?AllowedOrigins=https://app.example.com", []string{"https://app.example.com"}},
		{"ws://h:1?allowedOrigins=localhost:[0-9]*", []string{"localhost:[0-9]*"}},
	} {
		c, err := Parse([]byte(connector(tt.uri)), nil)
		require.NoError(t, err, tt.uri)
		assert.Equal(t, tt.want, c.TransportConnectors[0].AllowedOrigins, tt.uri)
	}

	const uriKey = "transportConnectors[0].uri"
	runErrorCases(t, []errorCase{
		{"allowedOrigins on stomp", connector("stomp://h:1?allowedOrigins=example.com"), uriKey, "WebSocket connectors only", "ws:// or wss://", ""},
		{"allowedOrigins on stomp+ssl", connector("stomp+ssl://h:1?allowedOrigins=*"), uriKey, "WebSocket connectors only", "", ""},
		{"allowedOrigins empty", connector("ws://h:1?allowedOrigins="), uriKey, "option allowedOrigins: no pattern", "path.Match", ""},
		{"allowedOrigins only commas", connector("ws://h:1?allowedOrigins=,%20,"), uriKey, "no pattern", "", ""},
		{"allowedOrigins malformed", connector("ws://h:1?allowedOrigins=[a-"), uriKey, `malformed pattern "[a-"`, "path.Match", "allowedOrigins=[a-"},
		{"allowedOrigins with a path", connector("ws://h:1?allowedOrigins=https://example.com/app"), uriKey, "not a host", "", ""},
		{"allowedOrigins empty scheme", connector("ws://h:1?allowedOrigins=://example.com"), uriKey, "empty scheme", "", ""},
		{"allowedOrigins twice", connector("ws://h:1?allowedOrigins=a&allowedOrigins=b"), uriKey, "given twice", "", ""},
	})
}

// TestShippedFileExample: the repository's activemq-style.yaml runs without
// authentication, and its commented-out plugins example, uncommented, is valid.
func TestShippedFileExample(t *testing.T) {
	isolateEnv(t)
	data, err := os.ReadFile("../activemq-style.yaml")
	require.NoError(t, err)
	c, err := Parse(data, nil)
	require.NoError(t, err)
	assert.False(t, c.Plugins.Authentication())
	assert.Nil(t, c.Plugins.Authorization)
	assert.False(t, c.Broker.PopulateJMSXUserID)

	var lines []string
	inPlugins := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "# plugins:":
			inPlugins = true
			line = "plugins:"
		case inPlugins && strings.HasPrefix(line, "#   "):
			line = strings.TrimPrefix(line, "# ")
		case strings.HasPrefix(line, "  # populateJMSXUserID:"):
			line = "  " + strings.TrimPrefix(line, "  # ")
		default:
			inPlugins = false
		}
		lines = append(lines, line)
	}
	c, err = Parse([]byte(strings.Join(lines, "\n")), []string{"SYSTEM_PASSWORD=pw"})
	require.NoError(t, err)
	assert.True(t, c.Plugins.Authentication())
	assert.Len(t, c.Plugins.Users, 2)
	require.NotNil(t, c.Plugins.Authorization)
	assert.Len(t, c.Plugins.Authorization.Entries, 3)
	assert.NotNil(t, c.Plugins.JAAS)
	assert.NotNil(t, c.Plugins.CertificateUsers)
	assert.True(t, c.Broker.PopulateJMSXUserID)
}

func TestHoldsPassword(t *testing.T) {
	for key, want := range map[string]bool{
		"plugins":                                              true,
		"plugins.simpleAuthentication":                         true,
		"plugins.simpleAuthentication.users":                   true,
		"plugins.simpleAuthentication.users[3]":                true,
		"plugins.simpleAuthentication.users[3].pasword":        true,
		"plugins.simpleAuthentication.users[3].username":       false,
		"plugins.simpleAuthentication.users[3].groups[1]":      false,
		"plugins.simpleAuthentication.users[3].maxConnections": false,
		"plugins.simpleAuthentication.anonymousUser":           false,
		"plugins.adminGroups":                                  false,
		"BROKER_PLUGINS":                                       true,
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0":          true,
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0_USERNAME": false,
		"BROKER_PLUGINS_MAXCONNECTIONSPERUSER":                 false,
		"broker.brokerName":                                    false,
	} {
		assert.Equal(t, want, holdsPassword(key), key)
	}
}
