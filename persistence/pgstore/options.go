package pgstore

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// Defaults.
const (
	DefaultTablePrefix         = "ACTIVEMQ_"
	DefaultMaxConnections      = 10
	DefaultLockKeepAlivePeriod = 5 * time.Second
	// LeaseFactor: a lease lasts LeaseFactor lock keep-alive periods, so two renewals
	// in a row may fail (a slow or restarting database) before the lock is lost.
	LeaseFactor = 3
	// DefaultCommitTimeout bounds one group-commit transaction; a commit never waits
	// longer for a database that does not answer.
	DefaultCommitTimeout = 30 * time.Second
	// DefaultConnectRetryInterval is the first pause of Open while the database is
	// unreachable; it doubles up to maxConnectRetryInterval.
	DefaultConnectRetryInterval = time.Second
	maxConnectRetryInterval     = 30 * time.Second
	// applicationName is reported to the server (pg_stat_activity) unless the URL sets
	// application_name (or JDBC's ApplicationName).
	applicationName = "activemq-go-broker"
	// maxPrefixLen keeps the longest derived name (prefix + "SUB_PENDING_CIDX") within
	// PostgreSQL's 63-byte identifiers.
	maxPrefixLen = 40
)

// Options configures Open. The zero value of every field but URL means its default.
type Options struct {
	// URL locates the database: jdbc:postgresql://host:port/db?param=v (the JDBC form
	// ActiveMQ users have), postgres://user:password@host/db or postgresql://...
	URL string
	// User and Password, when set, override those of the URL.
	User, Password string
	// MaxConnections is the size of the connection pool (at least 2: the group-commit
	// writer holds one while scans hold others). The lease, once Lock is called, has
	// one more connection of its own.
	MaxConnections int
	// SkipCreateTables makes Open fail with ErrNoSchema instead of creating missing
	// tables (createTablesOnStartup: false).
	SkipCreateTables bool
	// TablePrefix starts every table name (tablePrefix, default ACTIVEMQ_): letters,
	// digits and underscores, at most 40, not starting with a digit. PostgreSQL folds
	// it to lower case, as it does ActiveMQ's unquoted names.
	TablePrefix string
	// LockKeepAlivePeriod is how often the lease is renewed; a lease lasts LeaseFactor
	// periods.
	LockKeepAlivePeriod time.Duration
	// LockAcquireSleepInterval is how often a waiting Lock tries again; default
	// LockKeepAlivePeriod.
	LockAcquireSleepInterval time.Duration
	// LeaseHolderID names this broker in the lock row (ActiveMQ's leaseHolderId;
	// default "broker"). Host, process id and a random suffix are appended, so two
	// processes never share a holder id.
	LeaseHolderID string
	// StoreBeforeDispatch turns off concurrent store and dispatch
	// (concurrentStoreAndDispatchQueues: false): a queued batch cannot be withdrawn, so
	// the broker dispatches a persistent queue message only after its commit.
	StoreBeforeDispatch bool
	// DisableLock (useLock: false) makes Lock return at once without a lease: for a
	// database that only one broker uses.
	DisableLock bool
	// CommitTimeout bounds one group-commit transaction (default DefaultCommitTimeout).
	CommitTimeout time.Duration
	// ConnectRetryInterval is the first pause of Open while the database is unreachable
	// (default DefaultConnectRetryInterval), doubling up to 30s.
	ConnectRetryInterval time.Duration
	// Logger receives the store's events; nil discards them.
	Logger *slog.Logger

	// Shared is set by mode: shared: several broker nodes serve the same queues over
	// this database (package pgshared, opened by the broker, not by Open). The other
	// fields below are that mode's, zero for pgshared's defaults.
	Shared bool
	// NodeID names this node (nodeId; pgshared's default when empty).
	NodeID string
	// LeaseTimeout, HeartbeatPeriod and ReaperPeriod are pgshared's
	// (leaseTimeout, heartbeatPeriod, reaperPeriod).
	LeaseTimeout, HeartbeatPeriod, ReaperPeriod time.Duration
}

var prefixRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// withDefaults fills in the defaults and checks the ranges.
func (o Options) withDefaults() (Options, error) {
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxConnections < 2 || o.MaxConnections > math.MaxInt32 {
		return o, fmt.Errorf("%w: MaxConnections %d must be at least 2", ErrOption, o.MaxConnections)
	}
	if o.TablePrefix == "" {
		o.TablePrefix = DefaultTablePrefix
	}
	if len(o.TablePrefix) > maxPrefixLen || !prefixRE.MatchString(o.TablePrefix) {
		return o, fmt.Errorf("%w: TablePrefix %q: letters, digits and _, at most %d, not starting with a digit",
			ErrOption, o.TablePrefix, maxPrefixLen)
	}
	if o.LockKeepAlivePeriod == 0 {
		o.LockKeepAlivePeriod = DefaultLockKeepAlivePeriod
	}
	if o.LockAcquireSleepInterval == 0 {
		o.LockAcquireSleepInterval = o.LockKeepAlivePeriod
	}
	if o.CommitTimeout == 0 {
		o.CommitTimeout = DefaultCommitTimeout
	}
	if o.ConnectRetryInterval == 0 {
		o.ConnectRetryInterval = DefaultConnectRetryInterval
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"LockKeepAlivePeriod", o.LockKeepAlivePeriod},
		{"LockAcquireSleepInterval", o.LockAcquireSleepInterval},
		{"CommitTimeout", o.CommitTimeout},
		{"ConnectRetryInterval", o.ConnectRetryInterval},
	} {
		if d.v < time.Millisecond || d.v > 24*time.Hour {
			return o, fmt.Errorf("%w: %s %v outside [1ms, 24h]", ErrOption, d.name, d.v)
		}
	}
	if o.LeaseHolderID == "" {
		o.LeaseHolderID = "broker"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// poolConfig turns URL, User and Password into a pgxpool configuration, and returns
// the address for log lines. The password is never part of a string handed to pgx (it
// is set on the parsed configuration), so no parse error can contain it; every error
// text is redacted all the same.
func (o Options) poolConfig() (*pgxpool.Config, string, error) {
	fail := func(format string, args ...any) (*pgxpool.Config, string, error) {
		return nil, "", fmt.Errorf("%w: url: "+format, append([]any{ErrOption}, args...)...)
	}
	raw := strings.TrimSpace(o.URL)
	if raw == "" {
		return fail("missing: give jdbc:postgresql://host:port/database or postgres://host/database")
	}
	lower := strings.ToLower(raw)
	jdbc := strings.HasPrefix(lower, "jdbc:")
	switch {
	case jdbc && strings.HasPrefix(lower, "jdbc:postgresql://"):
		raw = raw[len("jdbc:"):]
	case jdbc && strings.HasPrefix(lower, "jdbc:postgresql:"):
		raw = "postgresql://localhost/" + raw[len("jdbc:postgresql:"):] // jdbc:postgresql:database
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
	default:
		return fail("%q is not a PostgreSQL URL: use jdbc:postgresql://host:port/database, postgres://... or postgresql://...",
			redactText(raw, o.Password))
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // *url.Error repeats the whole URL, password included
		}
		return fail("not a valid URL: %s", redactText(err.Error(), o.Password))
	}
	q := u.Query()
	user, password := "", ""
	if u.User != nil {
		user = u.User.Username()
		password, _ = u.User.Password()
	}
	if v := q.Get("user"); v != "" {
		user = v
	}
	if v := q.Get("password"); v != "" {
		password = v
	}
	q.Del("user")
	q.Del("password")
	if o.User != "" {
		user = o.User
	}
	if o.Password != "" {
		password = o.Password
	}
	if jdbc {
		translateJDBCParams(q)
	}
	u.User = nil
	if user != "" {
		u.User = url.User(user)
	}
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return fail("%s", redactText(err.Error(), password))
	}
	if password != "" {
		cfg.ConnConfig.Password = password
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	}
	cfg.MaxConns = int32(o.MaxConnections)
	cfg.MinConns = 0
	addr := cfg.ConnConfig.Host
	if !strings.HasPrefix(addr, "/") {
		addr = net.JoinHostPort(addr, strconv.Itoa(int(cfg.ConnConfig.Port)))
	} else {
		addr = fmt.Sprintf("%s/.s.PGSQL.%d", addr, cfg.ConnConfig.Port)
	}
	return cfg, addr, nil
}

// PoolConfig returns the pgxpool configuration Open would use for o's URL, User,
// Password and MaxConnections (defaults filled in), and the server's address for log
// lines, for the other parts of the jdbc adapter (package pgshared) that open pools of
// their own. Errors wrap ErrOption and never hold the password.
func (o Options) PoolConfig() (*pgxpool.Config, string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, "", err
	}
	return o.poolConfig()
}

// RedactError returns err with password removed from its text, raw or URL-escaped
// (nil for nil); errors.Is and errors.As still see the original chain.
func RedactError(err error, password string) error { return redact(err, password) }

// jdbcDropped are pgjdbc driver settings with no libpq/pgx counterpart; sent on, the
// server would reject them as unknown run-time parameters.
var jdbcDropped = []string{
	"loginTimeout", "socketTimeout", "tcpKeepAlive", "prepareThreshold", "preparedStatementCacheQueries",
	"preparedStatementCacheSizeMiB", "defaultRowFetchSize", "reWriteBatchedInserts", "loggerLevel",
	"loggerFile", "binaryTransfer", "stringtype", "readOnly", "autosave", "ssl", "sslfactory",
}

// translateJDBCParams rewrites the query parameters of a jdbc:postgresql: URL into
// their libpq names: ssl=true (pgjdbc: verify the server) becomes sslmode=verify-full
// unless sslmode is given, ssl=false sslmode=disable, currentSchema search_path,
// ApplicationName application_name, connectTimeout/loginTimeout (seconds)
// connect_timeout. The other pgjdbc-only settings are dropped; the rest passes on.
func translateJDBCParams(q url.Values) {
	if q.Get("sslmode") == "" {
		switch strings.ToLower(q.Get("ssl")) {
		case "true", "":
			if q.Has("ssl") {
				q.Set("sslmode", "verify-full")
			}
		case "false":
			q.Set("sslmode", "disable")
		}
	}
	rename := func(from, to string) {
		if v := q.Get(from); v != "" && q.Get(to) == "" {
			q.Set(to, v)
		}
		q.Del(from)
	}
	rename("currentSchema", "search_path")
	rename("ApplicationName", "application_name")
	rename("connectTimeout", "connect_timeout")
	rename("loginTimeout", "connect_timeout")
	for _, k := range jdbcDropped {
		q.Del(k)
	}
}

var (
	// scheme://user:secret@ -> scheme://user:xxxxx@
	urlPasswordRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s:]*):[^\s/?#]*@`)
	// password=secret in a query string or a key=value list
	paramPasswordRE = regexp.MustCompile(`(?i)\b((?:ssl)?password=)(?:'[^']*'|[^&\s]*)`)
)

// redactText removes from s the URL passwords and password=... parameters, and any
// occurrence of secret (raw or URL-escaped) if it is long enough to be told from
// ordinary text.
func redactText(s, secret string) string {
	if len(secret) >= 4 {
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
			url.UserPassword("u", secret).String()[len("u:"):]} {
			s = strings.ReplaceAll(s, form, "xxxxx")
		}
	}
	s = urlPasswordRE.ReplaceAllString(s, "${1}:xxxxx@")
	return paramPasswordRE.ReplaceAllString(s, "${1}xxxxx")
}

// redactedError carries an error whose text had a secret removed; errors.Is and As
// still see the original chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err with secret removed from its text (nil for nil).
func redact(err error, secret string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := redactText(msg, secret); r != msg {
		return &redactedError{msg: r, err: err}
	}
	return err
}

// keyPath is the configuration path of the adapter's block, for error messages.
const keyPath = "persistenceAdapter.jdbc"

// optionKey is one key of the jdbc block.
type optionKey struct {
	name    string // as documented (the YAML spelling)
	allowed string
	set     func(o *Options, raw any) (ok bool)
}

var optionKeys = []optionKey{
	{name: "url", allowed: "jdbc:postgresql://host:port/database?param=value, postgres://... or postgresql://...",
		set: func(o *Options, raw any) bool {
			s, ok := raw.(string)
			o.URL = s
			return ok && strings.TrimSpace(s) != ""
		}},
	{name: "user", allowed: "a user name",
		set: func(o *Options, raw any) bool { s, ok := raw.(string); o.User = s; return ok }},
	{name: "password", allowed: "a password (use ${ENV_VAR} in the file)",
		set: func(o *Options, raw any) bool { s, ok := raw.(string); o.Password = s; return ok }},
	{name: "maxConnections", allowed: "a whole number from 2 to 1000",
		set: func(o *Options, raw any) bool {
			n, err := setting.WholeNumber(raw)
			o.MaxConnections = int(n)
			return err == nil && n >= 2 && n <= 1000
		}},
	{name: "createTablesOnStartup", allowed: "true or false",
		set: func(o *Options, raw any) bool { b, ok := setting.Bool(raw); o.SkipCreateTables = !b; return ok }},
	{name: "tablePrefix", allowed: fmt.Sprintf("letters, digits and _, at most %d, not starting with a digit (default %s)", maxPrefixLen, DefaultTablePrefix),
		set: func(o *Options, raw any) bool {
			s, ok := raw.(string)
			o.TablePrefix = s
			return ok && len(s) <= maxPrefixLen && prefixRE.MatchString(s)
		}},
	{name: "lockKeepAlivePeriod", allowed: durationAllowed,
		set: func(o *Options, raw any) bool { return duration(raw, &o.LockKeepAlivePeriod) }},
	{name: "lockAcquireSleepInterval", allowed: durationAllowed,
		set: func(o *Options, raw any) bool { return duration(raw, &o.LockAcquireSleepInterval) }},
	{name: "leaseHolderId", allowed: "a name of up to 150 characters",
		set: func(o *Options, raw any) bool {
			s, ok := raw.(string)
			o.LeaseHolderID = s
			return ok && len(s) <= 150
		}},
	{name: "concurrentStoreAndDispatchQueues", allowed: "true or false",
		set: func(o *Options, raw any) bool { b, ok := setting.Bool(raw); o.StoreBeforeDispatch = !b; return ok }},
	{name: "useLock", allowed: "true or false",
		set: func(o *Options, raw any) bool { b, ok := setting.Bool(raw); o.DisableLock = !b; return ok }},
	{name: "mode", allowed: "masterSlave (one master, the others standby; the default) or shared (every node serves the queues)",
		set: func(o *Options, raw any) bool {
			s, ok := raw.(string)
			switch {
			case ok && strings.EqualFold(s, "masterSlave"):
				o.Shared = false
			case ok && strings.EqualFold(s, "shared"):
				o.Shared = true
			default:
				return false
			}
			return true
		}},
	{name: "nodeId", allowed: "a name unique to this broker process, up to 200 characters (mode: shared)",
		set: func(o *Options, raw any) bool {
			s, ok := raw.(string)
			o.NodeID = s
			return ok && s != "" && len(s) <= 200 && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
		}},
	{name: "leaseTimeout", allowed: durationAllowed + " (mode: shared)",
		set: func(o *Options, raw any) bool { return duration(raw, &o.LeaseTimeout) }},
	{name: "heartbeatPeriod", allowed: durationAllowed + ", below leaseTimeout (mode: shared)",
		set: func(o *Options, raw any) bool { return duration(raw, &o.HeartbeatPeriod) }},
	{name: "reaperPeriod", allowed: durationAllowed + " (mode: shared)",
		set: func(o *Options, raw any) bool { return duration(raw, &o.ReaperPeriod) }},
	// ActiveMQ's cleanupPeriod removes acknowledged rows in the background; this
	// adapter deletes them in the acknowledging transaction, so it is accepted (a file
	// written for ActiveMQ keeps working) and has no effect.
	{name: "cleanupPeriod", allowed: durationAllowed + " (accepted for ActiveMQ compatibility; no effect)",
		set: func(_ *Options, raw any) bool { var d time.Duration; return duration(raw, &d) }},
}

const durationAllowed = `a positive duration such as "5s" or "500ms" (a number is milliseconds), at most 24h`

// ParseOptions turns the broker's jdbc block into Options. Keys are matched
// case-insensitively (viper lower-cases them); an unknown key or a bad value is a
// *setting.Error naming the key, the value (never a password) and what is allowed,
// wrapping ErrOption. The URL is checked here too, so a bad one is reported at start.
func ParseOptions(p persistence.Options) (Options, error) {
	o := Options{Logger: p.Logger}
	keys := make([]string, 0, len(p.Raw))
	for k := range p.Raw {
		keys = append(keys, k)
	}
	slices.Sort(keys) // report the same error every time
	if pw, ok := p.Raw[findKey(keys, "password")].(string); ok {
		o.Password = pw // known before any other value is echoed in an error
	}
	for _, k := range keys {
		raw := p.Raw[k]
		i := slices.IndexFunc(optionKeys, func(ok optionKey) bool { return strings.EqualFold(ok.name, k) })
		if i < 0 {
			names := make([]string, len(optionKeys))
			for j, ok := range optionKeys {
				names[j] = ok.name
			}
			return Options{}, optionError(k, nil, o.Password, "unknown option", strings.Join(names, ", "))
		}
		key := optionKeys[i]
		if !key.set(&o, raw) {
			return Options{}, optionError(key.name, raw, o.Password, "invalid value", key.allowed)
		}
	}
	if o.URL == "" {
		return Options{}, optionError("url", nil, o.Password, "missing", optionKeys[0].allowed)
	}
	if !o.Shared {
		for _, name := range []string{"nodeId", "leaseTimeout", "heartbeatPeriod", "reaperPeriod"} {
			if k := findKey(keys, name); k != "" {
				return Options{}, optionError(name, p.Raw[k], o.Password, "only with mode: shared", "mode: shared, or remove it")
			}
		}
	} else {
		lease := o.LeaseTimeout
		if lease == 0 {
			lease = 30 * time.Second // pgshared's default
		}
		if o.HeartbeatPeriod != 0 && o.HeartbeatPeriod >= lease {
			return Options{}, optionError("heartbeatPeriod", o.HeartbeatPeriod.String(), o.Password,
				"must be below leaseTimeout ("+lease.String()+")", "a duration below leaseTimeout, ideally a third of it")
		}
	}
	if _, _, err := o.poolConfig(); err != nil {
		return Options{}, &setting.Error{Key: keyPath + ".url", Value: redactText(o.URL, o.Password),
			Problem: strings.TrimPrefix(err.Error(), ErrOption.Error()+": url: "), Err: ErrOption}
	}
	return o, nil
}

func findKey(keys []string, name string) string {
	for _, k := range keys {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return ""
}

// optionError builds the error the broker prints: a *setting.Error naming the key,
// the value (redacted) and what is allowed, wrapping ErrOption.
func optionError(key string, raw any, password, problem, allowed string) error {
	val := ""
	if raw != nil {
		val = redactText(fmt.Sprint(raw), password)
	}
	if strings.EqualFold(key, "password") {
		val = "xxxxx"
	}
	return &setting.Error{Key: keyPath + "." + key, Value: val, Problem: problem, Allowed: allowed, Err: ErrOption}
}

// duration reads a duration given as a string ("5s") or a number of milliseconds.
func duration(raw any, d *time.Duration) bool {
	v, problem := optparse.Duration(raw)
	*d = v
	return problem == ""
}
