package pgshared

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/persistence"
)

// Defaults.
const (
	DefaultTablePrefix     = "ACTIVEMQ_"
	DefaultLeaseTimeout    = 30 * time.Second
	DefaultHeartbeatPeriod = 5 * time.Second
	DefaultReaperPeriod    = 5 * time.Second
	DefaultPollInterval    = time.Second
	DefaultMaxConnections  = 10
	// maxPrefixLen keeps the longest derived name (prefix + "SQ_MSGS_LEASED") within
	// PostgreSQL's 63-byte identifiers; it is pgstore's limit.
	maxPrefixLen = 40
	// maxNodeID bounds NodeID (the OWNER columns are text; this keeps log lines sane).
	maxNodeID = 200
)

// Options configures Open. The zero value of every field means its default, but a
// database must be given, by Pool or by URL.
type Options struct {
	// Pool, when set, is the connection pool to use; Close leaves it open. The
	// listener's connection is opened apart, with the pool's connection settings.
	Pool *pgxpool.Pool
	// URL, User, Password and MaxConnections are used when Pool is nil, exactly as
	// pgstore.Options reads them (jdbc:postgresql://..., postgres://...); Close closes
	// the pool so opened.
	URL, User, Password string
	MaxConnections      int
	// SkipCreateTables makes Open fail with ErrNoSchema instead of creating missing
	// tables.
	SkipCreateTables bool
	// TablePrefix starts every table name, as pgstore's (default ACTIVEMQ_): the
	// tables are <prefix>SQ_*, so they live beside pgstore's in one database.
	TablePrefix string
	// NodeID names this broker node (default: the host name). Two processes must
	// never use the same NodeID at once: the later one's registration deposes the
	// earlier (ErrNodeLost).
	NodeID string
	// LeaseTimeout is how long a node may go without a heartbeat before the reaper
	// returns its leases to the other nodes (default 30s); it is also the length of
	// the reaper's lease. Give every node the same: the reaper judges the others by
	// its own.
	LeaseTimeout time.Duration
	// HeartbeatPeriod is how often the node refreshes its heartbeat (default 5s); it
	// must be below LeaseTimeout, ideally a third of it or less.
	HeartbeatPeriod time.Duration
	// ReaperPeriod is how often a node tries to be, or acts as, the reaper (default 5s).
	ReaperPeriod time.Duration
	// PollInterval is how often Notifications reports "" (look at every queue), with
	// LISTEN or without (default 1s): the longest a queue with room goes without
	// claiming a message available to it when no notification reached it.
	PollInterval time.Duration
	// DisableListen turns LISTEN/NOTIFY off on this node: it finds new messages by
	// polling only (for connection poolers in transaction mode, which lose LISTEN).
	DisableListen bool
	// MatchSelector tells whether a topic message matches a durable subscription's
	// selector (the broker's selector language); nil: every message matches.
	MatchSelector func(selector string, m *persistence.Message) bool
	// Logger receives the node's events; nil discards them.
	Logger *slog.Logger
}

var prefixRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// withDefaults fills in the defaults and checks the ranges.
func (o Options) withDefaults() (Options, error) {
	if o.Pool == nil && o.URL == "" {
		return o, fmt.Errorf("%w: neither Pool nor URL given", ErrOption)
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.TablePrefix == "" {
		o.TablePrefix = DefaultTablePrefix
	}
	if len(o.TablePrefix) > maxPrefixLen || !prefixRE.MatchString(o.TablePrefix) {
		return o, fmt.Errorf("%w: TablePrefix %q: letters, digits and _, at most %d, not starting with a digit",
			ErrOption, o.TablePrefix, maxPrefixLen)
	}
	if o.NodeID == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return o, fmt.Errorf("%w: NodeID not given and the host name is unknown (%v)", ErrOption, err)
		}
		o.NodeID = h
	}
	if len(o.NodeID) > maxNodeID || !utf8.ValidString(o.NodeID) || !validText(o.NodeID) {
		return o, fmt.Errorf("%w: NodeID %q: UTF-8 without NUL, at most %d bytes", ErrOption, o.NodeID, maxNodeID)
	}
	if o.LeaseTimeout == 0 {
		o.LeaseTimeout = DefaultLeaseTimeout
	}
	if o.HeartbeatPeriod == 0 {
		o.HeartbeatPeriod = min(DefaultHeartbeatPeriod, o.LeaseTimeout/3)
	}
	if o.ReaperPeriod == 0 {
		o.ReaperPeriod = DefaultReaperPeriod
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if err := errors.Join(inRange("LeaseTimeout", o.LeaseTimeout), inRange("HeartbeatPeriod", o.HeartbeatPeriod),
		inRange("ReaperPeriod", o.ReaperPeriod), inRange("PollInterval", o.PollInterval)); err != nil {
		return o, err
	}
	if o.HeartbeatPeriod >= o.LeaseTimeout {
		return o, fmt.Errorf("%w: HeartbeatPeriod %v must be below LeaseTimeout %v", ErrOption, o.HeartbeatPeriod, o.LeaseTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// inRange checks that the duration option name is within [1ms, 24h].
func inRange(name string, d time.Duration) error {
	if d < time.Millisecond || d > 24*time.Hour {
		return fmt.Errorf("%w: %s %v outside [1ms, 24h]", ErrOption, name, d)
	}
	return nil
}

// validText reports whether s can be stored in a text column: no NUL byte.
func validText(s string) bool { return strings.IndexByte(s, 0) < 0 }
