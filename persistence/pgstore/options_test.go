package pgstore

import (
	"errors"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
)

const secret = "s3cr:t@/?#pw"

// noSecret asserts that text holds the secret in none of its spellings.
func noSecret(t *testing.T, text string) {
	t.Helper()
	for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), "s3cr"} {
		assert.NotContains(t, text, form)
	}
}

func TestPoolConfigURLForms(t *testing.T) {
	esc := url.QueryEscape(secret)
	cases := []struct {
		name, url, user, password string
		wantHost                  string
		wantPort                  uint16
		wantDB, wantUser, wantPW  string
		wantParams                map[string]string
		wantTLS                   bool
	}{
		{name: "jdbc", url: "jdbc:postgresql://db.example:5433/activemq?user=amq&password=" + esc,
			wantHost: "db.example", wantPort: 5433, wantDB: "activemq", wantUser: "amq", wantPW: secret},
		{name: "jdbc user and password keys override", url: "jdbc:postgresql://h/db?user=a&password=b", user: "amq", password: secret,
			wantHost: "h", wantPort: 5432, wantDB: "db", wantUser: "amq", wantPW: secret},
		{name: "jdbc params translated",
			url:      "jdbc:postgresql://h:1/db?ApplicationName=app&currentSchema=s1&connectTimeout=7&tcpKeepAlive=true&prepareThreshold=0",
			wantHost: "h", wantPort: 1, wantDB: "db",
			wantParams: map[string]string{"application_name": "app", "search_path": "s1"}},
		{name: "jdbc ssl=true verifies", url: "jdbc:postgresql://h/db?ssl=true", wantHost: "h", wantPort: 5432, wantDB: "db", wantTLS: true},
		{name: "jdbc short form", url: "jdbc:postgresql:mydb", wantHost: "localhost", wantPort: 5432, wantDB: "mydb"},
		{name: "postgres", url: "postgres://amq:" + esc + "@127.0.0.1:6000/x?sslmode=disable",
			wantHost: "127.0.0.1", wantPort: 6000, wantDB: "x", wantUser: "amq", wantPW: secret},
		{name: "postgresql, password key overrides", url: "postgresql://amq:old@h/x?sslmode=disable", password: secret,
			wantHost: "h", wantPort: 5432, wantDB: "x", wantUser: "amq", wantPW: secret},
		{name: "postgres password param", url: "postgres://h/x?user=u&password=" + esc + "&sslmode=disable",
			wantHost: "h", wantPort: 5432, wantDB: "x", wantUser: "u", wantPW: secret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := Options{URL: c.url, User: c.user, Password: c.password}.withDefaults()
			require.NoError(t, err)
			cfg, addr, err := o.poolConfig()
			require.NoError(t, err)
			cc := cfg.ConnConfig
			assert.Equal(t, c.wantHost, cc.Host)
			assert.Equal(t, c.wantPort, cc.Port)
			assert.Contains(t, addr, c.wantHost)
			assert.Equal(t, c.wantDB, cc.Database)
			if c.wantUser != "" {
				assert.Equal(t, c.wantUser, cc.User)
			}
			if c.wantPW != "" {
				assert.Equal(t, c.wantPW, cc.Password)
			}
			for k, v := range c.wantParams {
				assert.Equal(t, v, cc.RuntimeParams[k], k)
			}
			for _, dropped := range []string{"tcpKeepAlive", "prepareThreshold", "ssl", "user", "password", "currentSchema", "ApplicationName"} {
				assert.NotContains(t, cc.RuntimeParams, dropped)
			}
			if c.name == "jdbc params translated" {
				assert.Equal(t, 7*time.Second, cc.ConnectTimeout)
			} else if c.wantParams == nil {
				assert.Equal(t, applicationName, cc.RuntimeParams["application_name"])
			}
			assert.Equal(t, c.wantTLS, cc.TLSConfig != nil && !cc.TLSConfig.InsecureSkipVerify, "TLS")
			assert.Equal(t, int32(DefaultMaxConnections), cfg.MaxConns)
		})
	}
}

func TestPoolConfigErrorsHideThePassword(t *testing.T) {
	esc := url.QueryEscape(secret)
	for _, u := range []string{
		"mysql://u:" + esc + "@h/db",
		"jdbc:mysql://h/db?password=" + esc,
		"postgres://u:" + secret + "@h:notaport/db", // unescaped: not even a valid URL
		"postgres://u:" + esc + "@h/db?sslmode=bogus",
		"postgres://u:" + esc + "@h/db?connect_timeout=x",
		"jdbc:postgresql://h/db?password=" + esc + "&sslmode=nope",
		"",
	} {
		o, err := Options{URL: u, Password: secret}.withDefaults()
		require.NoError(t, err)
		_, _, err = o.poolConfig()
		require.Error(t, err, u)
		require.ErrorIs(t, err, ErrOption, u)
		noSecret(t, err.Error())
	}
}

func TestRedactText(t *testing.T) {
	cases := map[string]string{
		"failed: postgres://u:" + secret + "@h/db":         "failed: postgres://u:xxxxx@h/db",
		"dsn password=" + url.QueryEscape(secret) + " x":   "dsn password=xxxxx x",
		"?user=u&Password=abc&ssl=true":                    "?user=u&Password=xxxxx&ssl=true",
		"sslpassword='a b' host=h":                         "sslpassword=xxxxx host=h",
		"no secret in here":                                "no secret in here",
		"the literal " + secret + " anywhere":              "the literal xxxxx anywhere",
		"escaped " + url.PathEscape(secret) + " anywhere":  "escaped xxxxx anywhere",
		"jdbc:postgresql://h/db?password=" + secret + "&x": "jdbc:postgresql://h/db?password=xxxxx&x",
	}
	for in, want := range cases {
		assert.Equal(t, want, redactText(in, secret), in)
	}
	err := redact(errors.New("boom "+secret), secret)
	assert.Equal(t, "boom xxxxx", err.Error())
	assert.Nil(t, redact(nil, secret))
}

func TestParseOptions(t *testing.T) {
	raw := map[string]any{
		"url":                              "jdbc:postgresql://127.0.0.1:5432/activemq",
		"user":                             "activemq",
		"password":                         secret,
		"maxconnections":                   10, // viper lower-cases keys
		"createTablesOnStartup":            "false",
		"tableprefix":                      "AMQ_",
		"lockKeepAlivePeriod":              "2s",
		"lockAcquireSleepInterval":         500,
		"leaseHolderId":                    "orders-broker",
		"useLock":                          true,
		"cleanupPeriod":                    300000,
		"concurrentStoreAndDispatchQueues": "false",
	}
	o, err := ParseOptions(persistence.Options{Raw: raw})
	require.NoError(t, err)
	assert.Equal(t, Options{
		URL: raw["url"].(string), User: "activemq", Password: secret, MaxConnections: 10,
		SkipCreateTables: true, TablePrefix: "AMQ_", LockKeepAlivePeriod: 2 * time.Second,
		LockAcquireSleepInterval: 500 * time.Millisecond, LeaseHolderID: "orders-broker",
		StoreBeforeDispatch: true,
	}, o)

	log := slog.New(slog.DiscardHandler)
	o, err = ParseOptions(persistence.Options{Raw: map[string]any{"url": "postgres://h/db"}, Logger: log})
	require.NoError(t, err)
	assert.Same(t, log, o.Logger, "the store logs through the broker's logger")
	o, err = o.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultTablePrefix, o.TablePrefix)
	assert.False(t, o.SkipCreateTables, "createTablesOnStartup defaults to true")
	assert.Equal(t, DefaultLockKeepAlivePeriod, o.LockKeepAlivePeriod)
	assert.Equal(t, o.LockKeepAlivePeriod, o.LockAcquireSleepInterval)
}

// TestParseOptionsSharedMode: mode shared and its keys; masterSlave is the default.
func TestParseOptionsSharedMode(t *testing.T) {
	o, err := ParseOptions(persistence.Options{Raw: map[string]any{"url": "postgres://h/d"}})
	require.NoError(t, err)
	assert.False(t, o.Shared, "masterSlave by default")
	o, err = ParseOptions(persistence.Options{Raw: map[string]any{"url": "postgres://h/d", "mode": "MasterSlave"}})
	require.NoError(t, err)
	assert.False(t, o.Shared)

	o, err = ParseOptions(persistence.Options{Raw: map[string]any{
		"url": "postgres://h/d", "mode": "shared", "nodeid": "node-a", "leaseTimeout": "10s",
		"heartbeatPeriod": 2000, "reaperPeriod": "3s",
	}})
	require.NoError(t, err)
	assert.True(t, o.Shared)
	assert.Equal(t, "node-a", o.NodeID)
	assert.Equal(t, 10*time.Second, o.LeaseTimeout)
	assert.Equal(t, 2*time.Second, o.HeartbeatPeriod)
	assert.Equal(t, 3*time.Second, o.ReaperPeriod)

	// The registered opener leaves mode shared to the broker.
	_, err = open(t.Context(), persistence.Options{Raw: map[string]any{"url": "postgres://h/d", "mode": "shared"}})
	require.ErrorIs(t, err, ErrOption)
	assert.Contains(t, err.Error(), "pgshared")
}

func TestParseOptionsErrors(t *testing.T) {
	esc := url.QueryEscape(secret)
	cases := []struct {
		name, key string
		raw       map[string]any
		problem   string
	}{
		{"missing url", "persistenceAdapter.jdbc.url", map[string]any{"user": "u"}, "missing"},
		{"unknown key", "persistenceAdapter.jdbc.passwrd", map[string]any{"url": "postgres://h/d", "passwrd": secret}, "unknown option"},
		{"url not a string", "persistenceAdapter.jdbc.url", map[string]any{"url": 5}, "invalid value"},
		{"bad url", "persistenceAdapter.jdbc.url", map[string]any{"url": "jdbc:oracle:thin:@h:1521:x", "password": secret}, "not a PostgreSQL URL"},
		{"bad url with password", "persistenceAdapter.jdbc.url", map[string]any{"url": "ftp://u:" + esc + "@h/x"}, "not a PostgreSQL URL"},
		{"password in url, bad query", "persistenceAdapter.jdbc.url", map[string]any{"url": "postgres://u:" + esc + "@h/db?sslmode=bogus"}, "sslmode"},
		{"password not a string", "persistenceAdapter.jdbc.password", map[string]any{"url": "postgres://h/d", "password": []any{secret}}, "invalid value"},
		{"maxConnections too small", "persistenceAdapter.jdbc.maxConnections", map[string]any{"url": "postgres://h/d", "maxConnections": 1}, "invalid value"},
		{"maxConnections fraction", "persistenceAdapter.jdbc.maxConnections", map[string]any{"url": "postgres://h/d", "maxConnections": 2.5}, "invalid value"},
		{"bool", "persistenceAdapter.jdbc.createTablesOnStartup", map[string]any{"url": "postgres://h/d", "createTablesOnStartup": "sometimes"}, "invalid value"},
		{"prefix", "persistenceAdapter.jdbc.tablePrefix", map[string]any{"url": "postgres://h/d", "tablePrefix": "a; DROP TABLE x"}, "invalid value"},
		{"prefix digit", "persistenceAdapter.jdbc.tablePrefix", map[string]any{"url": "postgres://h/d", "tablePrefix": "1x"}, "invalid value"},
		{"duration", "persistenceAdapter.jdbc.lockKeepAlivePeriod", map[string]any{"url": "postgres://h/d", "lockKeepAlivePeriod": "soon"}, "invalid value"},
		{"negative duration", "persistenceAdapter.jdbc.lockAcquireSleepInterval", map[string]any{"url": "postgres://h/d", "lockAcquireSleepInterval": "-1s"}, "invalid value"},
		{"mode", "persistenceAdapter.jdbc.mode", map[string]any{"url": "postgres://h/d", "mode": "cluster"}, "invalid value"},
		{"mode not a string", "persistenceAdapter.jdbc.mode", map[string]any{"url": "postgres://h/d", "mode": true}, "invalid value"},
		{"nodeId without shared", "persistenceAdapter.jdbc.nodeId", map[string]any{"url": "postgres://h/d", "nodeid": "n1"}, "only with mode: shared"},
		{"leaseTimeout with masterSlave", "persistenceAdapter.jdbc.leaseTimeout", map[string]any{"url": "postgres://h/d", "mode": "masterSlave", "leaseTimeout": "5s"}, "only with mode: shared"},
		{"empty nodeId", "persistenceAdapter.jdbc.nodeId", map[string]any{"url": "postgres://h/d", "mode": "shared", "nodeId": ""}, "invalid value"},
		{"nodeId with NUL", "persistenceAdapter.jdbc.nodeId", map[string]any{"url": "postgres://h/d", "mode": "shared", "nodeId": "a\x00b"}, "invalid value"},
		{"bad leaseTimeout", "persistenceAdapter.jdbc.leaseTimeout", map[string]any{"url": "postgres://h/d", "mode": "shared", "leaseTimeout": "0s"}, "invalid value"},
		{"heartbeat not below lease", "persistenceAdapter.jdbc.heartbeatPeriod", map[string]any{"url": "postgres://h/d", "mode": "shared", "leaseTimeout": "3s", "heartbeatPeriod": "3s"}, "must be below leaseTimeout"},
		{"heartbeat not below default lease", "persistenceAdapter.jdbc.heartbeatPeriod", map[string]any{"url": "postgres://h/d", "mode": "shared", "heartbeatPeriod": "1m"}, "must be below leaseTimeout (30s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(persistence.Options{Raw: c.raw})
			require.Error(t, err)
			require.ErrorIs(t, err, ErrOption)
			var ce *setting.Error
			require.True(t, errors.As(err, &ce), "a *setting.Error: %T", err)
			assert.Equal(t, c.key, ce.Key)
			assert.Contains(t, err.Error(), c.problem)
			noSecret(t, err.Error())
		})
	}
}

func TestOptionsDefaultsAndRanges(t *testing.T) {
	o, err := Options{URL: "postgres://h/d"}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxConnections, o.MaxConnections)
	assert.Equal(t, "broker", o.LeaseHolderID)
	for _, bad := range []Options{
		{MaxConnections: 1}, {TablePrefix: "x-y"}, {TablePrefix: "a234567890123456789012345678901234567890_"},
		{LockKeepAlivePeriod: -time.Second}, {CommitTimeout: 48 * time.Hour},
	} {
		_, err := bad.withDefaults()
		assert.ErrorIs(t, err, ErrOption, "%+v", bad)
	}
}
